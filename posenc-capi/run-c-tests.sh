#!/usr/bin/env bash
# Builds the posenc-capi libraries, compiles tests/c/test_posenc.c against the static one with
# gcc (C11, warnings as errors) and runs it; then builds and runs it again with each link
# recipe of README.md ("## Link"), verbatim, static and shared (the shared one without
# LD_LIBRARY_PATH, so it must find the library through its rpath). Each run ends with
# "N passed, M failed", the last line of the script too; it exits non-zero on any failure.
# Also checks that the header compiles as C++ when g++ exists.
#
# Usage: run-c-tests.sh [cargo build args…]   (env PROFILE: debug (default), release, or test,
# which reuses the libraries `cargo test -p posenc-capi` just built with the same args)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
cd "$root"

profile="${PROFILE:-debug}"
cargo_flags=()
dir=$profile
case "$profile" in
  release) cargo_flags+=(--release) ;;
  test) cargo_flags+=(--profile test) dir=debug ;; # the test profile's output directory
esac
cargo build -p posenc-capi "${cargo_flags[@]}" "$@"

target_dir="${CARGO_TARGET_DIR:-$root/target}"
lib="$target_dir/$dir/libposenc_capi.a"
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

echo "== static library, strict warnings"
"$out/test_posenc"

# The README's link recipes as written, in a scratch directory laid out as they assume
# (posenc-capi/include, target/release holding the libraries of this build, app.c).
recipes=()
while IFS= read -r line; do recipes+=("$line"); done < <(
  awk '/^## Link/ { s = 1 } s && /^```/ { if (c) exit; c = 1; next } c && /^cc / { print }' \
    "$here/README.md")
if [ ${#recipes[@]} -ne 2 ] || [[ ${recipes[0]} != *libposenc_capi.a* ]] ||
  [[ ${recipes[1]} != *-lposenc_capi* ]]; then
  echo "README.md's Link section no longer has the static then the shared 'cc' line" >&2
  exit 1
fi
scratch="$out/readme-recipes"
rm -rf "$scratch"
mkdir -p "$scratch/posenc-capi" "$scratch/target"
ln -s "$here/include" "$scratch/posenc-capi/include"
ln -s "$target_dir/$dir" "$scratch/target/release"
cp "$here/tests/c/test_posenc.c" "$scratch/app.c"
for i in 0 1; do
  kind=$([ $i = 0 ] && echo static || echo shared)
  echo "== README recipe, $kind: ${recipes[$i]}"
  (
    cd "$scratch"
    rm -f a.out
    # Verbatim, plus the libm that this test program itself uses (cos, sin, pow).
    eval "${recipes[$i]} -lm"
    if [ "$kind" = shared ] && command -v ldd >/dev/null; then
      deps="$(ldd a.out)"
      [[ $deps == *libposenc_capi.so* ]] || { echo "a.out is not linked to libposenc_capi.so" >&2; exit 1; }
    fi
    env -u LD_LIBRARY_PATH ./a.out
  )
done
