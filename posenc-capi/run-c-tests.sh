#!/usr/bin/env bash
# Builds the posenc-capi static library, compiles tests/c/test_posenc.c against it with gcc
# (C11, warnings as errors) and runs it. Its last line is "N passed, M failed"; the script
# exits non-zero on any failure. Also checks that the header compiles as C++ when g++ exists.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
cd "$root"

profile="${PROFILE:-debug}"
cargo_flags=()
[ "$profile" = release ] && cargo_flags+=(--release)
cargo build -p posenc-capi "${cargo_flags[@]}"

target_dir="${CARGO_TARGET_DIR:-$root/target}"
lib="$target_dir/$profile/libposenc_capi.a"
[ -f "$lib" ] || { echo "missing $lib" >&2; exit 1; }

out="$target_dir/c-tests"
mkdir -p "$out"
cc="${CC:-gcc}"
"$cc" -std=c11 -Wall -Wextra -Wpedantic -Werror -O1 -g \
  -I "$here/include" "$here/tests/c/test_posenc.c" "$lib" -lm -lpthread -ldl \
  -o "$out/test_posenc"

if command -v g++ >/dev/null; then
  printf '#include "posenc.h"\nint main() { PosencRope r = {}; return posenc_rope_head_dim(&r) != 0; }\n' \
    >"$out/cxx_header_check.cpp"
  g++ -std=c++11 -Wall -Wextra -Werror -I "$here/include" "$out/cxx_header_check.cpp" "$lib" \
    -lm -lpthread -ldl -o "$out/cxx_header_check"
  "$out/cxx_header_check"
  echo "header compiles and links as C++"
fi

"$out/test_posenc"
