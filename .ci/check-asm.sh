#!/usr/bin/env bash
# Disassembly proof that the runtime x86 and aarch64 tiers are what they claim to be.
#
# Reads the probe `examples/asm_probe.rs` (it calls every public entry point that reaches the
# tiers with f32, f16 and bf16), built for x86-64 and, cross-compiled, for aarch64,
# disassembles each with objdump, and fails unless
#   * each tier's one `#[target_feature]` entry function, `posenc::engine::x86_64::TIER::run`
#     and `posenc::engine::aarch64::neon::run`,
#     is instantiated for every kernel the probe reaches: the RoPE driver (`Rotate<I, O, ..>`,
#     the probe's rotate_half / posenc-rounding / whole-vector variant in place, f32 into f16
#     and bf16, and the general-shape variant that QK-norm runs in), the cos/sin tables
#     (`CosSinTable`), the sinusoidal kernel (`Sinusoids<T>`) and the memory ceiling
#     (`Axpb<T>`), T = f32, f16, bf16;
#   * every instantiation uses its tier's registers (ymm for avx2, zmm for avx512, 4-lane f32
#     vector registers `vN.4s` for neon);
#   * Rotate and Axpb<T> fuse (vfmadd* / fmla, fmls), and a Rotate reading f16 converts with
#     vcvtph2ps / fcvtl, one writing f16 with vcvtps2ph / fcvtn (F16C / AVX-512F / ARMv8 NEON);
#   * the kernels that round to bf16, and only they, are instantiated a second time in
#     `run_bf16` (AVX-512 with AVX512-BF16, NEON with FEAT_BF16), whose RoPE converts with
#     vcvtneps2bf16 (and vcvtne2ps2bf16 when interleaved) / bfcvtn;
#   * no instantiation calls a posenc function or a closure: everything inlines into the
#     entry function, where the tier's features are enabled.
# v0 symbol mangling keeps the generic arguments in the names (stable rustc flag; binutils
# >= 2.36 demangles it). The checker then checks itself: a bogus required pattern must fail.
#
# Usage:
#   .ci/check-asm.sh                      builds the probe in release for both targets (the code
#                                         a user ships; ASM_TARGET_DIR moves the build, default
#                                         target/asm-probe) and checks both
#   .ci/check-asm.sh x86_64|aarch64 BIN   checks a probe built elsewhere, with
#                                         RUSTFLAGS="-C symbol-mangling-version=v0": CI reads the
#                                         ones its test builds make (`cargo test` builds examples;
#                                         opt-level 1, where the intrinsics and the inlining into
#                                         the entry functions are the same as in release)
# The aarch64 half needs aarch64-linux-gnu-gcc (the linker) and aarch64-linux-gnu-objdump;
# it installs them with apt-get when missing.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v objdump >/dev/null || need_apt+=(binutils)
command -v aarch64-linux-gnu-gcc >/dev/null || need_apt+=(gcc-aarch64-linux-gnu libc6-dev-arm64-cross)
command -v aarch64-linux-gnu-objdump >/dev/null || need_apt+=(binutils-aarch64-linux-gnu)
if [ ${#need_apt[@]} -gt 0 ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

if [ $# -eq 0 ]; then
  rustup target add aarch64-unknown-linux-gnu >/dev/null 2>&1 || true
  target=${ASM_TARGET_DIR:-$PWD/target/asm-probe}
  # Both targets in one cargo invocation: each target's posenc is one long serial compile, and
  # built side by side they take the two cores together (about 3/4 of the time of one after
  # the other, measured with `cargo build --timings`). Symbols kept for the disassembly.
  RUSTFLAGS="-C symbol-mangling-version=v0" \
    CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc \
    cargo build --quiet --release --example asm_probe --target-dir "$target" \
    --config 'profile.release.strip="none"' \
    --target x86_64-unknown-linux-gnu --target aarch64-unknown-linux-gnu
  set -- x86_64 "$target/x86_64-unknown-linux-gnu/release/examples/asm_probe" \
    aarch64 "$target/aarch64-unknown-linux-gnu/release/examples/asm_probe"
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# disassemble OBJDUMP BIN ARCH: one file per entry-point instantiation of posenc's ARCH
# tiers, $work/fn.N, its demangled name in $work/names (both replaced).
disassemble() {
  local objdump=$1 bin=$2 arch=$3
  rm -f "$work"/fn.* "$work/names"
  "$objdump" -d --no-show-raw-insn -C "$bin" >"$work/all.asm"
  awk -v dir="$work" -v arch="$arch" '
    /^[0-9a-f]+ <.*>:$/ {
      name = $0; sub(/^[0-9a-f]+ </, "", name); sub(/>:$/, "", name)
      if (arch == "x86_64") keep = (name ~ /^posenc::engine::x86_64::avx(2|512)::run(_bf16)?::<.*>$/)
      else keep = (name ~ /^posenc::engine::aarch64::neon::run(_bf16)?::<.*>$/ ||
                   name ~ /^posenc::engine::ceiling::axpb_(f32|f16|bf16)$/)
      if (keep) { n++; file = dir "/fn." n; print n "\t" name >> (dir "/names") }
      next
    }
    /^$/ { keep = 0; next }
    keep { print >> file }
  ' "$work/all.asm"
  sort -t$'\t' -k2,2 -o "$work/names" "$work/names" 2>/dev/null || true
  # `ceiling::axpb_T` stands in for NEON's Axpb<T> entry only where LLVM merged the two (see
  # `check`); where the entry function is there, it is the one checked.
  local short d
  for short in f32 f16 bf16; do
    case $short in f32) d=f32 ;; f16) d=half::binary16::f16 ;; *) d=half::bfloat::bf16 ;; esac
    if grep -qF $'\t'"posenc::engine::aarch64::neon::run::<posenc::engine::ceiling::Axpb<$d>>" "$work/names"; then
      grep -vF $'\t'"posenc::engine::ceiling::axpb_$short" "$work/names" >"$work/names.kept" || true
      mv "$work/names.kept" "$work/names"
    fi
  done
  [ -s "$work/names" ] || { echo "check-asm: no posenc::engine::$arch entry points found in $bin" >&2; exit 1; }
}

count() { grep -cE "$2" "$work/fn.$1" || true; }

# check PATTERN_ROPE_EXTRA: 0 when every requirement holds, 1 (with messages) otherwise.
check() {
  local extra=$1 fails=0 n name tier op insns reg regname fma cvt_in cvt_out
  while IFS=$'\t' read -r n name; do
    case $name in
      posenc::engine::x86_64::*) tier=${name#posenc::engine::x86_64::}; tier=${tier%%::*} ;;
      *) tier=neon ;;
    esac
    case $name in
      *"::rope::Rotate<"*) op=rope ;;
      *"::ceiling::Axpb<"* | *"::ceiling::axpb_"*) op=axpb ;;
      *"::kernel::Sinusoids<"*) op=sinusoidal ;;
      *"::angles::CosSinTable"*) op=cos_sin_table ;;
      *) op=other ;;
    esac
    insns=$(wc -l <"$work/fn.$n")
    case $tier in
      avx2) regname=ymm reg=$(count "$n" '%ymm') ;;
      avx512) regname=zmm reg=$(count "$n" '%zmm') ;;
      *) regname=v.4s reg=$(count "$n" '\bv[0-9]+\.4s') ;;
    esac
    if [ "$tier" = neon ]; then
      fma=$(count "$n" $'\tfml[as]\t')
      # The f16 forms (`.4h`/`.8h`): fcvtl/fcvtn also widen and narrow f64 in the angle code.
      cvt_in=$(count "$n" $'\tfcvtl2?\tv[0-9]+\\.4s, v[0-9]+\\.[48]h')
      cvt_out=$(count "$n" $'\tfcvtn2?\tv[0-9]+\\.[48]h, v[0-9]+\\.4s')
    else
      fma=$(count "$n" 'vfn?madd|vfn?msub')
      cvt_in=$(count "$n" 'vcvtph2ps')
      cvt_out=$(count "$n" 'vcvtps2ph')
    fi
    [ "$extra" = "" ] && printf '%-90s %6d insns  %s %5d  fma %4d  f16 in %3d  f16 out %3d\n' \
      "$name" "$insns" "$regname" "$reg" "$fma" "$cvt_in" "$cvt_out"
    need() { # need COUNT WHAT
      if [ "$1" -eq 0 ]; then
        echo "check-asm: FAIL $name has no $2" >&2
        fails=1
      fi
    }
    need "$reg" "$regname register"
    # Everything must inline into the entry function, where the tier's features are enabled:
    # a call to a posenc function or a closure means code compiled without them (a closure
    # does not inherit target features) and, in a kernel, a many-fold slowdown.
    local outcalls
    outcalls=$(grep -cE '(call|bl) +[0-9a-f]+ <.*(posenc::|\{closure)' "$work/fn.$n" || true)
    if [ "$outcalls" -ne 0 ]; then
      echo "check-asm: FAIL $name calls $outcalls posenc function(s) or closure(s) instead of inlining them" >&2
      fails=1
    fi
    case $op in
      rope)
        # The posenc-rounding variants fuse; the HF-parity ones (`ONCE` = false, the second
        # const parameter) are unfused by design.
        # Rotate<I, O, IL, ONCE, WHOLE>: I is read, O written.
        if [[ $name =~ Rotate\<[^,]+,\ [^,]+,\ (true|false),\ true, ]]; then
          need "$fma" "fused multiply-add (vfmadd / fmla)"
        fi
        if [[ $name =~ Rotate\<([^,]+),\ ([^,]+), ]]; then
          [[ ${BASH_REMATCH[1]} == *binary16::f16* ]] && need "$cvt_in" "f16 widening (vcvtph2ps / fcvtl)"
          [[ ${BASH_REMATCH[2]} == *binary16::f16* ]] && need "$cvt_out" "f16 narrowing (vcvtps2ph / fcvtn)"
        fi
        if [[ $name == *::neon::run_bf16::* ]]; then
          need "$(count "$n" $'\tbfcvtn2?\t')" "bfcvtn (FEAT_BF16 rounding)"
        elif [[ $name == *::run_bf16::* ]]; then
          need "$(count "$n" vcvtneps2bf16)" "vcvtneps2bf16 (AVX512-BF16 rounding)"
          # Interleaved RoPE into bf16 converts two consecutive vectors with one instruction,
          # and so do whole bf16 heads held against a table in registers (their even and odd
          # values, `Run::resident_split`).
          if [[ $name =~ Rotate\<[^,]+,\ half::bfloat::bf16,\ true, ]] ||
            [[ $name == *"Rotate<half::bfloat::bf16, half::bfloat::bf16, false, true, true>"* ]]; then
            need "$(count "$n" vcvtne2ps2bf16)" "vcvtne2ps2bf16 (two vectors per AVX512-BF16 rounding)"
          fi
        fi
        if [ -n "$extra" ]; then need "$(count "$n" "$extra")" "$extra (self-test pattern)"; fi
        ;;
      axpb) need "$fma" "fused multiply-add (vfmadd / fmla)" ;;
    esac
  done <"$work/names"
  # Every instantiation the probe asks for is there.
  local t k d want tiers arch short
  case $(cut -f2 "$work/names" | head -1) in
    posenc::engine::x86_64::*) tiers="avx2 avx512" arch=x86_64 ;;
    *) tiers=neon arch=aarch64 ;;
  esac
  for t in $tiers; do
    for k in engine::rope::Rotate sinusoidal::kernel::Sinusoids engine::ceiling::Axpb; do
      for d in f32 half::binary16::f16 half::bfloat::bf16; do
        if [ "$k" = engine::rope::Rotate ]; then
          want="posenc::engine::$arch::$t::run::<posenc::$k<$d, $d, false, true, true>>"
        else
          want="posenc::engine::$arch::$t::run::<posenc::$k<$d>>"
        fi
        # NEON is a baseline feature of aarch64, so LLVM may merge a small entry function
        # into its (equally featured) caller despite `#[inline(never)]`: the memory
        # ceiling's then lives in `ceiling::axpb_T`, which is checked in its place.
        if [ "$t" = neon ] && [ "$k" = engine::ceiling::Axpb ]; then
          case $d in f32) short=f32 ;; half::binary16::f16) short=f16 ;; *) short=bf16 ;; esac
          grep -qF $'\t'"$want" "$work/names" || want="posenc::engine::ceiling::axpb_$short"
        fi
        grep -qF $'\t'"$want" "$work/names" || {
          echo "check-asm: FAIL $want not found" >&2
          fails=1
        }
      done
    done
    if [ $t = avx512 ] || [ $t = neon ]; then
      # The kernels that round to bf16 have a second instantiation with AVX512-BF16 / FEAT_BF16
      # (and only they: `Kernel::ROUNDS_TO_BF16` keeps the others out of `run_bf16`). NEON's
      # memory ceiling may be merged into its caller (see above), so it is not required there.
      for k in "engine::rope::Rotate<half::bfloat::bf16, half::bfloat::bf16, false, true, true>" \
        "engine::rope::Rotate<half::bfloat::bf16, half::bfloat::bf16, true, true, true>" \
        "engine::rope::Rotate<f32, half::bfloat::bf16, false, true, true>" \
        "sinusoidal::kernel::Sinusoids<half::bfloat::bf16>" "engine::ceiling::Axpb<half::bfloat::bf16>"; do
        [ $t = neon ] && [[ $k == engine::ceiling::* ]] && continue
        want="posenc::engine::$arch::$t::run_bf16::<posenc::$k>"
        grep -qF $'\t'"$want" "$work/names" || {
          echo "check-asm: FAIL $want not found" >&2
          fails=1
        }
      done
      if grep -E $'\t'"posenc::engine::$arch::$t::run_bf16::" "$work/names" | grep -v 'half::bfloat::bf16' >&2; then
        echo "check-asm: FAIL kernels that never round to bf16 instantiated in run_bf16 (above)" >&2
        fails=1
      fi
    fi
    # Rotate-into f32 → f16 / bf16 (kernels of their own; the other pairs are staged), and
    # the general shape QK-norm runs in, for each dtype in place and f32 into bf16.
    for o in half::binary16::f16 half::bfloat::bf16; do
      want="posenc::engine::$arch::$t::run::<posenc::engine::rope::Rotate<f32, $o, false, true, true>>"
      grep -qF $'\t'"$want" "$work/names" || { echo "check-asm: FAIL $want not found" >&2; fails=1; }
    done
    for p in "f32, f32" "half::binary16::f16, half::binary16::f16" \
      "half::bfloat::bf16, half::bfloat::bf16" "f32, half::bfloat::bf16"; do
      want="posenc::engine::$arch::$t::run::<posenc::engine::rope::Rotate<$p, false, true, false>>"
      grep -qF $'\t'"$want" "$work/names" || { echo "check-asm: FAIL $want not found" >&2; fails=1; }
    done
    # The staged pairs have no kernel: f16/bf16 into another dtype never reaches a tier.
    if grep -E $'\t''posenc::engine::[a-z0-9_:]+::run(_bf16)?::<posenc::engine::rope::Rotate<half::[a-z0-9:]+, (f32|half::[a-z0-9:]+), ' "$work/names" \
      | grep -vE 'Rotate<(half::binary16::f16, half::binary16::f16|half::bfloat::bf16, half::bfloat::bf16),' >&2; then
      echo "check-asm: FAIL a staged pair instantiated as a kernel (above)" >&2
      fails=1
    fi
    want="posenc::engine::$arch::$t::run::<posenc::engine::angles::CosSinTable>"
    grep -qF $'\t'"$want" "$work/names" || {
      echo "check-asm: FAIL $want not found" >&2
      fails=1
    }
  done
  return $fails
}

# examine BIN: check, then make sure the checker can fail.
examine() {
  local bin=$1 n_rope
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
}

while [ $# -gt 0 ]; do
  [ $# -ge 2 ] || { echo "usage: $0 [x86_64|aarch64 BIN]..." >&2; exit 2; }
  case $1 in
    x86_64) disassemble objdump "$2" x86_64 ;;
    aarch64) disassemble aarch64-linux-gnu-objdump "$2" aarch64 ;;
    *) echo "check-asm: unknown architecture $1" >&2; exit 2 ;;
  esac
  examine "$2"
  shift 2
done
echo "check-asm: OK (ymm/zmm/v.4s, vfmadd/fmla, f16 conversions present; self-test caught a missing pattern)"
