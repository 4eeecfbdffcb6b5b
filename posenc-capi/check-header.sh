#!/usr/bin/env bash
# Regenerates include/posenc.h with cbindgen into a temporary file and diffs it against the
# committed header: exits non-zero (printing the diff) if they differ. CI runs this.
#   ./check-header.sh          check
#   ./check-header.sh --write  regenerate include/posenc.h in place
# The header records the cbindgen version that made it; the same version is installed
# (cargo install --locked, from crates.io) when cbindgen is missing or differs, since other
# versions may format the header differently.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here"
header=include/posenc.h
want_version="$(sed -n 's|^/\* Generated with cbindgen:\([0-9.]*\) \*/$|\1|p' "$header")"
want_version="${want_version:-0.29.4}"

have_version="$(cbindgen --version 2>/dev/null | awk '{print $2}' || true)"
if [ "$have_version" != "$want_version" ]; then
  echo "installing cbindgen $want_version (found: ${have_version:-none})" >&2
  cargo install cbindgen --locked --version "$want_version" >&2
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cbindgen --quiet --config cbindgen.toml --crate posenc-capi --output "$tmp/posenc.h"

if [ "${1:-}" = "--write" ]; then
  cp "$tmp/posenc.h" "$header"
  echo "wrote $header"
  exit 0
fi
if ! diff -u "$header" "$tmp/posenc.h"; then
  echo "posenc-capi/$header is out of date: run posenc-capi/check-header.sh --write" >&2
  exit 1
fi
echo "posenc-capi/$header is up to date"
