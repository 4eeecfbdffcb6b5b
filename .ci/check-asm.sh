#!/usr/bin/env bash
# Disassembly proof that the runtime x86 tiers are what they claim to be.
#
# Builds .ci/asm-probe (a tiny release binary that calls every public entry point reaching
# the tiers with f32, f16 and bf16), disassembles it with objdump, and fails unless
#   * each tier's one `#[target_feature]` entry function, `posenc::engine::x86_64::TIER::run`,
#     is instantiated for every kernel the probe reaches: the RoPE driver (`Rotate<I, O, ..>`,
#     the probe's rotate_half / posenc-rounding / whole-vector variant in place, into f16 and
#     bf16, and its QK-norm variant in place and into bf16), the cos/sin tables
#     (`CosSinTable`), the sinusoidal kernel (`Sinusoids<T>`) and the memory ceiling
#     (`Axpb<T>`), T = f32, f16, bf16;
#   * every instantiation uses its tier's registers (ymm for avx2, zmm for avx512);
#   * Rotate and Axpb<T> fuse (vfmadd*), and a Rotate reading f16 converts with vcvtph2ps,
#     one writing f16 with vcvtps2ph (F16C / AVX-512F);
#   * no instantiation calls a posenc function or a closure: everything inlines into the
#     entry function, where the tier's features are enabled.
# v0 symbol mangling keeps the generic arguments in the names (stable rustc flag; binutils
# >= 2.36 demangles it). The checker then checks itself: a bogus required pattern must fail.
#
# Usage: .ci/check-asm.sh   (env ASM_TARGET_DIR to move the build; default target/asm-probe)
set -euo pipefail
cd "$(dirname "$0")/.."

command -v objdump >/dev/null || {
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq binutils >/dev/null
}

target=${ASM_TARGET_DIR:-$PWD/target/asm-probe}
probe=.ci/asm-probe
# Pin the probe's dependencies to the crate's own lock (cargo trims what it does not use).
[ -f "$probe/Cargo.lock" ] || cp Cargo.lock "$probe/Cargo.lock"
RUSTFLAGS="-C symbol-mangling-version=v0" \
  cargo build --quiet --release --manifest-path "$probe/Cargo.toml" --target-dir "$target"
bin=$target/release/posenc-asm-probe

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
objdump -d --no-show-raw-insn -C "$bin" >"$work/all.asm"

# One file per entry-point instantiation: $work/fn.N, its demangled name in $work/names.
awk -v dir="$work" '
  /^[0-9a-f]+ <.*>:$/ {
    name = $0; sub(/^[0-9a-f]+ </, "", name); sub(/>:$/, "", name)
    keep = (name ~ /^posenc::engine::x86_64::avx(2|512)::run::<.*>$/)
    if (keep) { n++; file = dir "/fn." n; print n "\t" name >> (dir "/names") }
    next
  }
  /^$/ { keep = 0; next }
  keep { print >> file }
' "$work/all.asm"
sort -t$'\t' -k2,2 -o "$work/names" "$work/names" 2>/dev/null || true
[ -s "$work/names" ] || { echo "check-asm: no posenc::engine::x86_64 entry points found in $bin" >&2; exit 1; }

count() { grep -cE "$2" "$work/fn.$1" || true; }

# check PATTERN_ROPE_EXTRA: 0 when every requirement holds, 1 (with messages) otherwise.
check() {
  local extra=$1 fails=0 n name tier op insns reg fma cvt_in cvt_out
  while IFS=$'\t' read -r n name; do
    tier=${name#posenc::engine::x86_64::}; tier=${tier%%::*}
    case $name in
      *"::rope::Rotate<"*) op=rope ;;
      *"::ceiling::Axpb<"*) op=axpb ;;
      *"::kernel::Sinusoids<"*) op=sinusoidal ;;
      *"::angles::CosSinTable"*) op=cos_sin_table ;;
      *) op=other ;;
    esac
    insns=$(wc -l <"$work/fn.$n")
    if [ "$tier" = avx2 ]; then reg=$(count "$n" '%ymm'); else reg=$(count "$n" '%zmm'); fi
    fma=$(count "$n" 'vfn?madd|vfn?msub')
    cvt_in=$(count "$n" 'vcvtph2ps')
    cvt_out=$(count "$n" 'vcvtps2ph')
    [ "$extra" = "" ] && printf '%-90s %6d insns  %s %5d  vfma %4d  vcvtph2ps %3d  vcvtps2ph %3d\n' \
      "$name" "$insns" "$([ "$tier" = avx2 ] && echo ymm || echo zmm)" "$reg" "$fma" "$cvt_in" "$cvt_out"
    need() { # need COUNT WHAT
      if [ "$1" -eq 0 ]; then
        echo "check-asm: FAIL $name has no $2" >&2
        fails=1
      fi
    }
    need "$reg" "$([ "$tier" = avx2 ] && echo ymm || echo zmm) register"
    # Everything must inline into the entry function, where the tier's features are enabled:
    # a call to a posenc function or a closure means code compiled without them (a closure
    # does not inherit target features) and, in a kernel, a many-fold slowdown.
    local outcalls
    outcalls=$(grep -cE 'call +[0-9a-f]+ <.*(posenc::|\{closure)' "$work/fn.$n" || true)
    if [ "$outcalls" -ne 0 ]; then
      echo "check-asm: FAIL $name calls $outcalls posenc function(s) or closure(s) instead of inlining them" >&2
      fails=1
    fi
    case $op in
      rope)
        # The posenc-rounding variants fuse; the HF-parity ones (`ONCE` = false, the second
        # const parameter) are unfused by design.
        # Rotate<I, O, IL, ONCE, WHOLE, NORM>: I is read, O written.
        if [[ $name =~ Rotate\<[^,]+,\ [^,]+,\ (true|false),\ true, ]]; then
          need "$fma" "vfmadd (fused multiply-add)"
        fi
        if [[ $name =~ Rotate\<([^,]+),\ ([^,]+), ]]; then
          [[ ${BASH_REMATCH[1]} == *binary16::f16* ]] && need "$cvt_in" vcvtph2ps
          [[ ${BASH_REMATCH[2]} == *binary16::f16* ]] && need "$cvt_out" vcvtps2ph
        fi
        if [ -n "$extra" ]; then need "$(count "$n" "$extra")" "$extra (self-test pattern)"; fi
        ;;
      axpb) need "$fma" "vfmadd (fused multiply-add)" ;;
    esac
  done <"$work/names"
  # Every instantiation the probe asks for is there.
  local t k d want
  for t in avx2 avx512; do
    for k in engine::rope::Rotate sinusoidal::kernel::Sinusoids engine::ceiling::Axpb; do
      for d in f32 half::binary16::f16 half::bfloat::bf16; do
        if [ "$k" = engine::rope::Rotate ]; then
          want="posenc::engine::x86_64::$t::run::<posenc::$k<$d, $d, false, true, true, false>>"
        else
          want="posenc::engine::x86_64::$t::run::<posenc::$k<$d>>"
        fi
        grep -qF $'\t'"$want" "$work/names" || {
          echo "check-asm: FAIL $want not found" >&2
          fails=1
        }
      done
    done
    # Rotate-into (every dtype into f16 and bf16) and QK-norm + RoPE (in place, into bf16).
    for d in f32 half::binary16::f16 half::bfloat::bf16; do
      for o in half::binary16::f16 half::bfloat::bf16; do
        want="posenc::engine::x86_64::$t::run::<posenc::engine::rope::Rotate<$d, $o, false, true, true, false>>"
        grep -qF $'\t'"$want" "$work/names" || { echo "check-asm: FAIL $want not found" >&2; fails=1; }
      done
      for o in $d half::bfloat::bf16; do
        want="posenc::engine::x86_64::$t::run::<posenc::engine::rope::Rotate<$d, $o, false, true, false, true>>"
        grep -qF $'\t'"$want" "$work/names" || { echo "check-asm: FAIL $want not found" >&2; fails=1; }
      done
    done
    want="posenc::engine::x86_64::$t::run::<posenc::engine::angles::CosSinTable>"
    grep -qF $'\t'"$want" "$work/names" || {
      echo "check-asm: FAIL $want not found" >&2
      fails=1
    }
  done
  return $fails
}

echo "check-asm: $(wc -l <"$work/names") entry points in $bin"
if ! check ""; then
  echo "check-asm: FAILED" >&2
  exit 1
fi
# The checker must be able to fail: a pattern no rope contains has to be reported.
if check 'vbogus_never_emitted' 2>"$work/selftest"; then
  echo "check-asm: self-test FAILED: a missing pattern went unnoticed" >&2
  exit 1
fi
n_rope=$(grep -c '::rope::Rotate<' "$work/names")
echo "check-asm: self-test: $(grep -c 'self-test pattern' "$work/selftest") rope instantiations reported missing vbogus_never_emitted (expected $n_rope)"
[ "$(grep -c 'self-test pattern' "$work/selftest")" -eq "$n_rope" ] || { echo "check-asm: self-test FAILED" >&2; exit 1; }
echo "check-asm: OK (ymm/zmm, vfmadd, f16 conversions present; self-test caught a missing pattern)"
