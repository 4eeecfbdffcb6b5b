//! Differential tests: every backend in [`Backend::ALL`] that runs here against
//! [`Backend::Scalar`], the reference (DESIGN.md "Tests" 3).
//!
//! # Which comparison applies
//!
//! | backend | rotation (`apply`, `apply_inverse`, the table path (`Table`)) | cos/sin tables, sinusoidal |
//! |---|---|---|
//! | `Scalar`, `Portable` | bitwise | bitwise |
//! | `Avx2`, `Avx512`, `Neon` | [`check_rotation_bound`] (fused multiply-adds) | bitwise (documented) |
//! | anything else | the test panics until someone decides ([`policy`]) | |
//!
//! "Bitwise" means bit for bit, except that a NaN may be any NaN: when two NaNs meet in
//! `a·c − b·s`, which payload survives is unspecified in Rust (LLVM treats `fadd` as
//! commutative), so no kernel can promise NaN bits ([`same`]). Channels past `rotary_dim`
//! are compared bit for bit without exception, under every policy.
//!
//! # The bound
//!
//! [`check_rotation_bound`] is the contract's rotation bound, for backends that fuse: every
//! output `a·c − b·s` (`b·c + a·s`) is within `2u·(|a·c| + |b·s|)` (`u = 2^-24`) of the exact
//! value for the scalar backend's `c, s` (the x86 tiers compute cos/sin bitwise like
//! `Scalar`), plus, for f16/bf16, half an ulp of the storage type at the result (the single
//! rounding on store) and half the smallest f32 subnormal (underflow). The exact value is
//! formed in f64 (`a·c` and `b·s` are exact there; the difference is off by at most
//! `2^-53·(|a·c| + |b·s|)`, added to the bound).
//!
//! Shapes: every even `rotary_dim` up to each `head_dim` of
//! {2, 4, 6, 8, 10, 14, 16, 18, 30, 32, 64, 80, 96, 128, 130, 256} (so every tail length
//! against lanes of 4, 8 and 16 and the 64-pair chunk of the drivers), 1–5 heads, 0–4
//! tokens, both layouts, f32/f16/bf16.
//!
//! Runtime: about 2–3 s at the test profile's opt-level 1 (one core per test).

mod common;

use common::rng::Rng;
use posenc::{Backend, Element, Layout, Rope, RopeConfig, Sinusoidal, SinusoidalLayout, bf16, f16};
use proptest::prelude::*;

/// f32 unit roundoff.
const U: f64 = 1.0 / 16_777_216.0;

// ---------------------------------------------------------------------------------------
// policies and backend availability
// ---------------------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Policy {
    /// Bit for bit (NaN payloads excepted) the scalar result.
    Bitwise,
    /// Within [`check_rotation_bound`] of the exact rotation by the scalar tables.
    Bound,
}

/// `(rotation, tables)` policy of a backend. Unknown backends panic: someone must decide how
/// a new backend is compared before its tests can pass.
fn policy(b: Backend) -> (Policy, Policy) {
    match b.name() {
        "scalar" | "portable" => (Policy::Bitwise, Policy::Bitwise),
        // Fused multiply-adds in the rotation; cos/sin and the sinusoidal writes are
        // documented bitwise equal to Scalar's.
        "avx2" | "avx512" | "neon" => (Policy::Bound, Policy::Bitwise),
        other => panic!(
            "backend `{other}` has no comparison policy: add it to `policy` in tests/backends.rs"
        ),
    }
}

/// Whether the CPU running the test supports `b`, found independently of posenc.
fn cpu_supports(b: Backend) -> bool {
    match b.name() {
        "scalar" | "portable" => true,
        // A `--cfg posenc_portable_only` build (mutation testing) has no SIMD tier.
        _ if cfg!(posenc_portable_only) => false,
        #[cfg(target_arch = "x86_64")]
        "avx2" => {
            std::is_x86_feature_detected!("avx2")
                && std::is_x86_feature_detected!("fma")
                && std::is_x86_feature_detected!("f16c")
        }
        #[cfg(target_arch = "x86_64")]
        "avx512" => {
            std::is_x86_feature_detected!("avx512f")
                && std::is_x86_feature_detected!("avx2")
                && std::is_x86_feature_detected!("fma")
                && std::is_x86_feature_detected!("f16c")
        }
        #[cfg(not(target_arch = "x86_64"))]
        "avx2" | "avx512" => false,
        #[cfg(target_arch = "aarch64")]
        "neon" => std::arch::is_aarch64_feature_detected!("neon"),
        #[cfg(not(target_arch = "aarch64"))]
        "neon" => false,
        other => panic!(
            "backend `{other}`: teach `cpu_supports` in tests/backends.rs to detect it, so that \
             a backend this CPU supports can never be skipped silently"
        ),
    }
}

fn available() -> Vec<Backend> {
    Backend::available().collect()
}

/// Fails if a backend the CPU supports reports itself unavailable (its tests would be
/// skipped silently), or the other way round.
#[test]
fn every_backend_the_cpu_supports_is_available_and_tested() {
    assert!(Backend::Scalar.is_available(), "Scalar must always run");
    assert!(Backend::Portable.is_available(), "Portable must always run");
    for &b in Backend::ALL {
        let supported = cpu_supports(b);
        assert_eq!(
            b.is_available(),
            supported,
            "{b:?}: is_available() = {}, but the CPU {} it",
            b.is_available(),
            if supported {
                "supports"
            } else {
                "does not support"
            }
        );
        // Every backend has a policy (panics otherwise), and the policy agrees with what
        // the backend documents about itself.
        let (rot, _) = policy(b);
        assert_eq!(
            rot == Policy::Bitwise,
            b.matches_scalar_bitwise(),
            "{b:?}: policy {rot:?} disagrees with matches_scalar_bitwise()"
        );
        assert_eq!(
            Rope::new(&RopeConfig::new(8, 1e4, Layout::RotateHalf))
                .unwrap()
                .with_backend(b)
                .is_ok(),
            supported,
            "{b:?}: with_backend must accept exactly the supported backends"
        );
    }
    assert!(Backend::active().is_available());
    println!(
        "backends tested here: {:?}",
        available()
            .iter()
            .map(|b| (b.name(), policy(*b)))
            .collect::<Vec<_>>()
    );
}

// ---------------------------------------------------------------------------------------
// helpers
// ---------------------------------------------------------------------------------------

/// This file's distributions over the shared xorshift64* ([`common::rng`]).
impl Rng {
    /// Magnitude 2^-12 .. 2^12, either sign.
    fn value(&mut self) -> f32 {
        let mag = (self.unit() * 24.0 - 12.0).exp2() as f32;
        if self.next() & 1 == 0 { mag } else { -mag }
    }
    /// A cos/sin-like table value: |v| ≤ 1.5, either sign, sometimes exactly 0 or ±1.
    fn table(&mut self) -> f32 {
        match self.below(16) {
            0 => 0.0,
            1 => 1.0,
            2 => -1.0,
            _ => ((self.unit() * 3.0) - 1.5) as f32,
        }
    }
    /// [`Rng::value`], one in six a special (±0, ±inf, NaNs with payloads, subnormals,
    /// extremes).
    fn any_f32(&mut self) -> f32 {
        const SPECIAL: [u32; 13] = [
            0x0000_0000,
            0x8000_0000,
            0x7F80_0000,
            0xFF80_0000,
            0x7FC0_0000,
            0x7F80_0001,
            0xFFC1_2345,
            0x0000_0001,
            0x8012_3456,
            0x7F7F_FFFF,
            0xFF7F_FFFF,
            0x0080_0000,
            0x3880_0000, // 2^-14, the smallest normal f16
        ];
        if self.below(6) == 0 {
            f32::from_bits(SPECIAL[self.below(SPECIAL.len() as u64) as usize])
        } else {
            self.value()
        }
    }
    /// Positions over the whole i32 range, mostly small.
    fn position(&mut self) -> i32 {
        match self.below(4) {
            // Anywhere in the accuracy domain |p| ≤ 2^26 (frequencies here are ≤ 1), its
            // edges included.
            0 => (self.below(1 << 27) as i64 - (1 << 26)) as i32,
            1 => (self.below(1 << 25) as i64 - (1 << 24)) as i32,
            2 => [0, 1, -1, 1 << 26, -(1 << 26), 1 << 24][self.below(6) as usize],
            _ => self.below(8192) as i32,
        }
    }
}

trait Dt: Element {
    fn bits(self) -> u32;
    /// Half an ulp of this type at magnitude `v` (0 for f32: the kernels' f32 result is
    /// stored as is); `None` if `v` is past the type's largest finite value.
    fn half_ulp(v: f64) -> Option<f64>;
}

/// Half an ulp at `v` of a binary format with `mant` stored mantissa bits and minimum normal
/// exponent `emin`. Callers pass the larger of the exact value and the result, so a result
/// rounded up into the next binade is measured with that binade's (larger) ulp.
fn half_ulp_fmt(v: f64, mant: i32, emin: i32, max: f64) -> Option<f64> {
    let v = v.abs();
    if v > max {
        return None;
    }
    let e = if v == 0.0 {
        emin
    } else {
        (v.log2().floor() as i32).max(emin)
    };
    Some(((e - mant) as f64).exp2() / 2.0)
}

impl Dt for f32 {
    fn bits(self) -> u32 {
        self.to_bits()
    }
    fn half_ulp(v: f64) -> Option<f64> {
        (v.abs() <= f32::MAX as f64).then_some(0.0)
    }
}
impl Dt for f16 {
    fn bits(self) -> u32 {
        self.to_bits() as u32
    }
    fn half_ulp(v: f64) -> Option<f64> {
        half_ulp_fmt(v, 10, -14, 65504.0)
    }
}
impl Dt for bf16 {
    fn bits(self) -> u32 {
        self.to_bits() as u32
    }
    fn half_ulp(v: f64) -> Option<f64> {
        half_ulp_fmt(v, 7, -126, f32::MAX as f64)
    }
}

/// Bit for bit, except that any NaN equals any NaN.
fn same<T: Dt>(a: T, b: T) -> bool {
    a.bits() == b.bits() || (a.to_f32().is_nan() && b.to_f32().is_nan())
}

/// The pairs of a head.
fn pair(layout: Layout, half: usize, j: usize) -> (usize, usize) {
    match layout {
        Layout::Interleaved => (2 * j, 2 * j + 1),
        Layout::RotateHalf => (j, j + half),
    }
}

/// A rotation problem: `x` is `tokens × n_heads × head_dim`; `cos`, `sin` are the tables the
/// rotation uses, `tokens × rotary_dim/2`.
struct Problem<'a, T> {
    n_heads: usize,
    head_dim: usize,
    rotary_dim: usize,
    layout: Layout,
    x: &'a [T],
    cos: &'a [f32],
    sin: &'a [f32],
}

/// The contract's rotation bound, for backends that may fuse (see the module docs): checks
/// every rotated output of `got` against the exact rotation of `p.x` by `p.cos`, `p.sin`,
/// within `2u·(|a·c| + |b·s|)` + half an ulp of `T` at the result + `3·2^-150` (up to three
/// roundings, two products and a sum, each off by at most half the smallest f32 subnormal
/// when they underflow, where no relative bound holds) + the f64 reference's own
/// `2^-53·(|a·c| + |b·s|)`. Channels past `rotary_dim` must be bit for bit the input.
///
/// Where an operand is not finite, or the exact value or a product overflows f32, there is
/// no bound; then the result must be one that some evaluation order produces
/// ([`non_finite_candidates`]): a fused and an unfused evaluation legitimately differ there
/// (`a·c` overflows f32 unfused but not inside a fused multiply-add, turning `inf − inf = NaN`
/// into `inf`).
fn check_rotation_bound<T: Dt>(p: &Problem<'_, T>, got: &[T]) -> Result<(), String> {
    let half = p.rotary_dim / 2;
    let row = p.n_heads * p.head_dim;
    if got.len() != p.x.len() {
        return Err(format!("length {} != {}", got.len(), p.x.len()));
    }
    for (h, (hx, hg)) in
        p.x.chunks(p.head_dim)
            .zip(got.chunks(p.head_dim))
            .enumerate()
    {
        let t = h * p.head_dim / row;
        for c in p.rotary_dim..p.head_dim {
            if hx[c].bits() != hg[c].bits() {
                return Err(format!("head {h}: tail channel {c} changed"));
            }
        }
        for j in 0..half {
            let (ia, ib) = pair(p.layout, half, j);
            let (a, b) = (hx[ia].to_f32(), hx[ib].to_f32());
            let (c, s) = (p.cos[t * half + j], p.sin[t * half + j]);
            // out_a = a·c − b·s, out_b = b·c + a·s = b·c − a·(−s).
            for (i, (u, v, w, z)) in [(ia, (a, c, b, s)), (ib, (b, c, a, -s))] {
                let (u64_, v64, w64, z64) = (u as f64, v as f64, w as f64, z as f64);
                let exact = u64_ * v64 - w64 * z64;
                let mass = (u64_ * v64).abs() + (w64 * z64).abs();
                let g = hg[i].to_f32() as f64;
                let ulp_t = T::half_ulp(exact.abs().max(if g.is_finite() { g.abs() } else { 0.0 }));
                // The bound needs finite operands and no overflow, of the result or of a
                // product an unfused evaluation rounds to f32.
                let max = f32::MAX as f64;
                let bounded = [u, v, w, z].iter().all(|x| x.is_finite())
                    && exact.abs() <= max
                    && (u64_ * v64).abs() <= max
                    && (w64 * z64).abs() <= max;
                match ulp_t {
                    Some(ulp_t) if bounded => {
                        let bound =
                            2.0 * U * mass + 2f64.powi(-53) * mass + ulp_t + 3.0 * 2f64.powi(-150);
                        let within = (g - exact).abs() <= bound; // false for NaN
                        if !within {
                            return Err(format!(
                                "token {t} head {} channel {i} ({:?}): got {g:e}, exact {exact:e} from \
                                 a {a:e} b {b:e} c {c:e} s {s:e}: |diff| {:e} > bound {bound:e}",
                                h % p.n_heads,
                                T::DTYPE,
                                (g - exact).abs()
                            ));
                        }
                    }
                    _ => {
                        let cands = non_finite_candidates::<T>(u, v, w, z);
                        if !cands.iter().any(|&k| same(k, hg[i])) {
                            return Err(format!(
                                "token {t} head {} channel {i}: a {a:e} b {b:e} c {c:e} s {s:e}: \
                                 got {:#x}, no evaluation order gives it (candidates {:x?})",
                                h % p.n_heads,
                                hg[i].bits(),
                                cands.map(|k| k.bits())
                            ));
                        }
                    }
                }
            }
        }
    }
    Ok(())
}

/// `u·v − w·z` (rounded to `T`) as four evaluation orders give it: both products rounded to
/// f32 (unfused), neither (the exact value; f64 holds f32 products without overflow), or one
/// of them (a fused multiply-add either way round).
fn non_finite_candidates<T: Dt>(u: f32, v: f32, w: f32, z: f32) -> [T; 4] {
    let (p32, q32) = (u * v, w * z);
    let (p64, q64) = (u as f64 * v as f64, w as f64 * z as f64);
    [
        T::from_f32(p32 - q32),
        T::from_f32((p64 - q64) as f32),
        T::from_f32((p64 - q32 as f64) as f32),
        T::from_f32((p32 as f64 - q64) as f32),
    ]
}

/// `got` vs `want` under `policy`; `Err` names the first difference.
fn compare<T: Dt>(policy: Policy, p: &Problem<'_, T>, got: &[T], want: &[T]) -> Result<(), String> {
    match policy {
        Policy::Bitwise => match (0..got.len()).find(|&i| !same(got[i], want[i])) {
            None if got.len() == want.len() => Ok(()),
            None => Err("lengths differ".into()),
            Some(i) => Err(format!(
                "element {i} (channel {}): got {:#x}, scalar {:#x}, input {:#x}",
                i % p.head_dim,
                got[i].bits(),
                want[i].bits(),
                p.x[i].bits()
            )),
        },
        Policy::Bound => check_rotation_bound(p, got),
    }
}

// ---------------------------------------------------------------------------------------
// rotations
// ---------------------------------------------------------------------------------------

const HEAD_DIMS: &[usize] = &[
    2, 4, 6, 8, 10, 14, 16, 18, 30, 32, 64, 80, 96, 128, 130, 256,
];

/// One shape: runs apply, apply_inverse, the table path (a random table and the rope's
/// own table) on every backend and compares with Scalar.
#[allow(clippy::too_many_arguments)]
fn rotations_one<T: Dt>(
    head_dim: usize,
    rotary_dim: usize,
    layout: Layout,
    n_heads: usize,
    positions: &[i32],
    base: f32,
    rng: &mut Rng,
    specials: bool,
) -> Result<(), String> {
    let tokens = positions.len();
    let half = rotary_dim / 2;
    let len = tokens * n_heads * head_dim;
    let x: Vec<T> = (0..len)
        .map(|_| T::from_f32(if specials { rng.any_f32() } else { rng.value() }))
        .collect();
    let tab_c: Vec<f32> = (0..tokens * half).map(|_| rng.table()).collect();
    let tab_s: Vec<f32> = (0..tokens * half).map(|_| rng.table()).collect();
    let cfg = RopeConfig::new(head_dim, base, layout).rotary_dim(rotary_dim);
    let rope = Rope::new(&cfg).map_err(|e| e.to_string())?;
    let scalar = rope.with_backend(Backend::Scalar).unwrap();
    let (mut rc, mut rs) = (vec![0f32; tokens * half], vec![0f32; tokens * half]);
    scalar.fill_cos_sin(positions, &mut rc, &mut rs).unwrap();
    let neg_rs: Vec<f32> = rs.iter().map(|v| -v).collect();

    // The reference results.
    let mut ref_apply = x.clone();
    scalar.apply(&mut ref_apply, n_heads, positions).unwrap();
    let mut ref_inv = x.clone();
    scalar
        .apply_inverse(&mut ref_inv, n_heads, positions)
        .unwrap();
    let mut ref_tab = x.clone();
    common::table_on(
        Backend::Scalar,
        &mut ref_tab,
        n_heads,
        head_dim,
        layout,
        &tab_c,
        &tab_s,
    )
    .unwrap();

    for backend in available() {
        let (rot, tab) = policy(backend);
        let ctx = |op: &str, e: String| {
            format!(
                "{backend:?} {op} {:?} head_dim {head_dim} rotary_dim {rotary_dim} {layout:?} \
                 heads {n_heads} positions {positions:?}: {e}",
                T::DTYPE
            )
        };
        let rope_b = rope.with_backend(backend).unwrap();

        // fill_cos_sin
        let (mut bc, mut bs) = (vec![f32::NAN; tokens * half], vec![f32::NAN; tokens * half]);
        rope_b.fill_cos_sin(positions, &mut bc, &mut bs).unwrap();
        assert_eq!(
            tab,
            Policy::Bitwise,
            "only bitwise tables are supported here"
        );
        for (i, (u, v)) in bc.iter().zip(&rc).chain(bs.iter().zip(&rs)).enumerate() {
            if u.to_bits() != v.to_bits() {
                return Err(ctx(
                    "fill_cos_sin",
                    format!("entry {i}: {u:e} vs scalar {v:e}"),
                ));
            }
        }

        let p_apply = Problem {
            n_heads,
            head_dim,
            rotary_dim,
            layout,
            x: &x,
            cos: &rc,
            sin: &rs,
        };
        let mut y = x.clone();
        rope_b.apply(&mut y, n_heads, positions).unwrap();
        compare(rot, &p_apply, &y, &ref_apply).map_err(|e| ctx("apply", e))?;

        // apply uses exactly the values fill_cos_sin returns, on the same backend.
        let mut yt = x.clone();
        common::table_on(backend, &mut yt, n_heads, head_dim, layout, &bc, &bs).unwrap();
        compare(Policy::Bitwise, &p_apply, &yt, &y)
            .map_err(|e| ctx("apply vs common::table_on(fill_cos_sin)", e))?;

        let p_inv = Problem {
            sin: &neg_rs,
            ..p_apply
        };
        let mut z = x.clone();
        rope_b.apply_inverse(&mut z, n_heads, positions).unwrap();
        compare(rot, &p_inv, &z, &ref_inv).map_err(|e| ctx("apply_inverse", e))?;

        let p_tab = Problem {
            cos: &tab_c,
            sin: &tab_s,
            ..p_apply
        };
        let mut w = x.clone();
        common::table_on(backend, &mut w, n_heads, head_dim, layout, &tab_c, &tab_s).unwrap();
        compare(rot, &p_tab, &w, &ref_tab).map_err(|e| ctx("table path", e))?;

        // The bound itself holds for every backend, bitwise ones included.
        check_rotation_bound(&p_apply, &y).map_err(|e| ctx("apply (bound)", e))?;
        check_rotation_bound(&p_tab, &w).map_err(|e| ctx("table (bound)", e))?;
    }
    Ok(())
}

/// The sweep: every head_dim, every even rotary_dim, both layouts, three dtypes; random
/// heads, tokens, positions and values (normal values here; specials in the proptest).
#[test]
fn rotations_every_shape_vs_scalar() {
    let mut rng = Rng::new(0xD1FF);
    let mut runs = 0usize;
    for &head_dim in HEAD_DIMS {
        for rotary_dim in (2..=head_dim).step_by(2) {
            for layout in [Layout::Interleaved, Layout::RotateHalf] {
                let n_heads = 1 + rng.below(5) as usize;
                let tokens = rng.below(5) as usize;
                let positions: Vec<i32> = (0..tokens).map(|_| rng.position()).collect();
                let base = [10_000.0f32, 500_000.0, 1e6, 10.0][rng.below(4) as usize];
                let r = rotations_one::<f32>(
                    head_dim, rotary_dim, layout, n_heads, &positions, base, &mut rng, false,
                )
                .and_then(|_| {
                    rotations_one::<f16>(
                        head_dim, rotary_dim, layout, n_heads, &positions, base, &mut rng, false,
                    )
                })
                .and_then(|_| {
                    rotations_one::<bf16>(
                        head_dim, rotary_dim, layout, n_heads, &positions, base, &mut rng, false,
                    )
                });
                if let Err(e) = r {
                    panic!("{e}");
                }
                runs += 3;
            }
        }
    }
    println!(
        "{runs} shape × dtype runs on {:?}",
        available().iter().map(|b| b.name()).collect::<Vec<_>>()
    );
}

fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config(192))]

    /// Random shapes with special values (NaN, ±inf, ±0, subnormals, extremes) in x.
    #[test]
    fn rotations_random_with_specials_vs_scalar(
        hd in 0..HEAD_DIMS.len(),
        rot_frac in 0.0f64..=1.0,
        il in any::<bool>(),
        n_heads in 1usize..=5,
        tokens in 0usize..=4,
        seed in any::<u64>(),
    ) {
        let head_dim = HEAD_DIMS[hd];
        let rotary_dim = (((head_dim / 2) as f64 * rot_frac).ceil() as usize).max(1) * 2;
        let layout = if il { Layout::Interleaved } else { Layout::RotateHalf };
        let mut rng = Rng::new(seed);
        let positions: Vec<i32> = (0..tokens).map(|_| rng.position()).collect();
        let r = rotations_one::<f32>(head_dim, rotary_dim, layout, n_heads, &positions, 1e4, &mut rng, true)
            .and_then(|_| rotations_one::<f16>(head_dim, rotary_dim, layout, n_heads, &positions, 1e4, &mut rng, true))
            .and_then(|_| rotations_one::<bf16>(head_dim, rotary_dim, layout, n_heads, &positions, 1e4, &mut rng, true));
        prop_assert!(r.is_ok(), "{}", r.unwrap_err());
    }
}

/// A caller table with NaNs, infinities and huge values: the same elements are NaN as on
/// Scalar, everything else bitwise (or within the bound for fusing backends), in every
/// storage type. The NaNs include payloads in the low 16 bits (`0x7fbf_ffff`, signalling,
/// becomes `0x7fff_ffff` when quieted by the multiply): rounding such a NaN to bf16 as if it
/// were a number carries into the sign and gives `-0.0`, so this is where a bf16 store that
/// misses its NaN case shows (tried: an AVX2 store that never takes the NaN branch fails here).
#[test]
fn tables_with_non_finite_entries_vs_scalar() {
    tables_with_non_finite_entries::<f32>(0x7AB1E);
    tables_with_non_finite_entries::<f16>(0x7AB1F);
    tables_with_non_finite_entries::<bf16>(0x7AB20);
}

fn tables_with_non_finite_entries<T: Dt>(seed: u64) {
    const SPECIAL: [f32; 7] = [
        f32::NAN,
        -f32::NAN,
        f32::from_bits(0x7fbf_ffff),
        f32::from_bits(0xffff_ffff),
        f32::INFINITY,
        f32::NEG_INFINITY,
        3e38,
    ];
    let mut rng = Rng::new(seed);
    for &head_dim in &[8usize, 16, 32, 130] {
        for layout in [Layout::Interleaved, Layout::RotateHalf] {
            let (n_heads, tokens) = (3, 3);
            let half = head_dim / 2;
            let x: Vec<T> = (0..tokens * n_heads * head_dim)
                .map(|_| T::from_f32(rng.value()))
                .collect();
            let mut cos: Vec<f32> = (0..tokens * half).map(|_| rng.table()).collect();
            let mut sin: Vec<f32> = (0..tokens * half).map(|_| rng.table()).collect();
            for v in cos.iter_mut().chain(sin.iter_mut()) {
                if rng.below(5) == 0 {
                    *v = SPECIAL[rng.below(SPECIAL.len() as u64) as usize];
                }
            }
            let mut want = x.clone();
            common::table_on(
                Backend::Scalar,
                &mut want,
                n_heads,
                head_dim,
                layout,
                &cos,
                &sin,
            )
            .unwrap();
            for backend in available() {
                let mut got = x.clone();
                common::table_on(backend, &mut got, n_heads, head_dim, layout, &cos, &sin).unwrap();
                let p = Problem {
                    n_heads,
                    head_dim,
                    rotary_dim: head_dim,
                    layout,
                    x: &x,
                    cos: &cos,
                    sin: &sin,
                };
                if let Err(e) = compare(policy(backend).0, &p, &got, &want) {
                    panic!("{backend:?} head_dim {head_dim} {layout:?}: {e}");
                }
            }
        }
    }
}

/// The bound helper must be able to fail: the scalar result passes it, the same result
/// moved by 3 ulps does not (with `c = 1, s = 0` the bound is `2u·|a|` < 2 ulps of `a`).
#[test]
fn rotation_bound_helper_rejects_errors() {
    let x: Vec<f32> = (0..16).map(|i| 1.0 + i as f32 / 7.0).collect();
    let cos = vec![1.0f32; 8];
    let sin = vec![0.0f32; 8];
    let p = Problem {
        n_heads: 1,
        head_dim: 16,
        rotary_dim: 16,
        layout: Layout::RotateHalf,
        x: &x,
        cos: &cos,
        sin: &sin,
    };
    let mut y = x.clone();
    common::table_on(
        Backend::Scalar,
        &mut y,
        1,
        16,
        Layout::RotateHalf,
        &cos,
        &sin,
    )
    .unwrap();
    check_rotation_bound(&p, &y).unwrap();
    let mut bad = y.clone();
    bad[5] = f32::from_bits(bad[5].to_bits() + 3);
    assert!(check_rotation_bound(&p, &bad).is_err());
    // f16: half an ulp of rounding is allowed, a result 2 ulps off is not.
    let xh: Vec<f16> = x.iter().map(|&v| f16::from_f32(v)).collect();
    let ph = Problem {
        n_heads: 1,
        head_dim: 16,
        rotary_dim: 16,
        layout: Layout::RotateHalf,
        x: &xh,
        cos: &cos,
        sin: &sin,
    };
    let mut yh = xh.clone();
    common::table_on(
        Backend::Scalar,
        &mut yh,
        1,
        16,
        Layout::RotateHalf,
        &cos,
        &sin,
    )
    .unwrap();
    check_rotation_bound(&ph, &yh).unwrap();
    let mut badh = yh.clone();
    badh[3] = f16::from_bits(badh[3].to_bits() + 2);
    assert!(check_rotation_bound(&ph, &badh).is_err());
    // A changed tail channel is caught.
    let pt = Problem { rotary_dim: 8, ..p };
    let mut yt = x.clone();
    common::table_on(
        Backend::Scalar,
        &mut yt,
        1,
        16,
        Layout::RotateHalf,
        &cos[..4],
        &sin[..4],
    )
    .unwrap();
    check_rotation_bound(&pt, &yt).unwrap();
    yt[12] = -yt[12];
    assert!(check_rotation_bound(&pt, &yt).is_err());
}

// ---------------------------------------------------------------------------------------
// cos/sin tables
// ---------------------------------------------------------------------------------------

/// `fill_cos_sin` on every backend vs Scalar, bitwise, for every rotary_dim 2..=260 (tails of
/// 2/4/8-lane f64 loops and the chunking), random bases and positions over the i32 range.
#[test]
fn fill_cos_sin_vs_scalar() {
    let mut rng = Rng::new(0xC05);
    for rotary_dim in (2..=260).step_by(2) {
        let base = (1.0 + rng.unit() * 7.0).exp2().exp2() as f32; // 2^2 .. 2^256 → clamp
        let base = base.clamp(2.0, 1e7);
        let rope = Rope::new(
            &RopeConfig::new(rotary_dim + 4, base, Layout::RotateHalf).rotary_dim(rotary_dim),
        )
        .unwrap();
        let tokens = 1 + rng.below(4) as usize;
        let positions: Vec<i32> = (0..tokens).map(|_| rng.position()).collect();
        let half = rotary_dim / 2;
        let (mut c0, mut s0) = (vec![0f32; tokens * half], vec![0f32; tokens * half]);
        rope.with_backend(Backend::Scalar)
            .unwrap()
            .fill_cos_sin(&positions, &mut c0, &mut s0)
            .unwrap();
        for backend in available() {
            assert_eq!(policy(backend).1, Policy::Bitwise);
            let (mut c, mut s) = (vec![f32::NAN; tokens * half], vec![f32::NAN; tokens * half]);
            rope.with_backend(backend)
                .unwrap()
                .fill_cos_sin(&positions, &mut c, &mut s)
                .unwrap();
            for i in 0..c.len() {
                assert_eq!(
                    (c[i].to_bits(), s[i].to_bits()),
                    (c0[i].to_bits(), s0[i].to_bits()),
                    "{backend:?} rotary_dim {rotary_dim} base {base} positions {positions:?} entry {i}"
                );
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// sinusoidal
// ---------------------------------------------------------------------------------------

fn sinusoidal_one<T: Dt>(d: usize, layout: SinusoidalLayout, rng: &mut Rng) {
    let pe0 = Sinusoidal::new(d, [10_000.0f32, 1e3, 5e5][rng.below(3) as usize], layout).unwrap();
    let scalar = pe0.with_backend(Backend::Scalar).unwrap();
    let rows = rng.below(5) as usize;
    // Positions in the accuracy domain (|p| ≤ 2^26; beyond it the calls are refused),
    // its edge included.
    const EDGE: u32 = 1 << 26;
    let first = match rng.below(3) {
        0 => rng.below(5000) as u32,
        1 => rng.below(EDGE as u64 - 4) as u32,
        _ => EDGE + 1 - rows.max(1) as u32,
    };
    let positions: Vec<i32> = (0..rows)
        .map(|_| rng.position().clamp(-(EDGE as i32), EDGE as i32))
        .collect();
    let x: Vec<T> = (0..rows * d).map(|_| T::from_f32(rng.any_f32())).collect();
    let mut f0 = vec![T::from_f32(f32::NAN); rows * d];
    scalar.fill(&mut f0, first).unwrap();
    let mut p0 = f0.clone();
    scalar.fill_positions(&mut p0, &positions).unwrap();
    let mut a0 = x.clone();
    scalar.add(&mut a0, &positions).unwrap();
    for backend in available() {
        assert_eq!(policy(backend).1, Policy::Bitwise);
        let pe = pe0.with_backend(backend).unwrap();
        let mut f = vec![T::from_f32(0.0); rows * d];
        pe.fill(&mut f, first).unwrap();
        let mut p = f.clone();
        pe.fill_positions(&mut p, &positions).unwrap();
        let mut a = x.clone();
        pe.add(&mut a, &positions).unwrap();
        for (what, got, want) in [
            ("fill", &f, &f0),
            ("fill_positions", &p, &p0),
            ("add", &a, &a0),
        ] {
            if let Some(i) = (0..got.len()).find(|&i| !same(got[i], want[i])) {
                panic!(
                    "{backend:?} {what} {:?} d {d} {layout:?} first {first} positions {positions:?}: \
                     element {i}: {:#x} vs scalar {:#x}",
                    T::DTYPE,
                    got[i].bits(),
                    want[i].bits()
                );
            }
        }
    }
}

/// Sinusoidal fill / fill_positions / add on every backend vs Scalar, bitwise, every layout,
/// three dtypes, every even d_model up to 72 and around 128 and 512.
#[test]
fn sinusoidal_vs_scalar() {
    let mut rng = Rng::new(0x5105);
    let dims = (2..=72)
        .step_by(2)
        .chain([126, 128, 130, 254, 510, 512, 514]);
    for d in dims {
        for layout in [
            SinusoidalLayout::Interleaved,
            SinusoidalLayout::Split,
            SinusoidalLayout::SplitCosFirst,
        ] {
            sinusoidal_one::<f32>(d, layout, &mut rng);
            sinusoidal_one::<f16>(d, layout, &mut rng);
            sinusoidal_one::<bf16>(d, layout, &mut rng);
        }
    }
}

/// `fill` over long runs, every backend vs Scalar bitwise: runs that span several row groups
/// and 256-row anchor blocks of the recurrence, start and end inside blocks and inside
/// passes, and spans of columns with a strip of fewer than 2·LANES columns and a tail of
/// fewer than LANES (d = 88: interleaved 88 = 5·16 + 8; split 44 = 2·16 + 8 + 4 on AVX2). A
/// sub-range fill gives bitwise the same rows as the long one.
fn sinusoidal_long<T: Dt>(d: usize, layout: SinusoidalLayout, rows: usize, first: u32) {
    let pe0 = Sinusoidal::new(d, 10_000.0, layout).unwrap();
    let mut want = vec![T::from_f32(f32::NAN); rows * d];
    pe0.with_backend(Backend::Scalar)
        .unwrap()
        .fill(&mut want, first)
        .unwrap();
    for backend in available() {
        let pe = pe0.with_backend(backend).unwrap();
        let mut got = vec![T::from_f32(0.0); rows * d];
        pe.fill(&mut got, first).unwrap();
        let (a, b) = (rows / 3 + 5, rows - rows / 4);
        let mut part = vec![T::from_f32(0.0); (b - a) * d];
        pe.fill(&mut part, first + a as u32).unwrap();
        for (what, got, want) in [
            ("fill", &got[..], &want[..]),
            ("sub-range", &part[..], &got[a * d..b * d]),
        ] {
            if let Some(i) = (0..got.len()).find(|&i| !same(got[i], want[i])) {
                panic!(
                    "{backend:?} {what} {:?} {rows}x{d} from {first} {layout:?}: row {} col {}: {:#x} vs {:#x}",
                    T::DTYPE,
                    i / d,
                    i % d,
                    got[i].bits(),
                    want[i].bits()
                );
            }
        }
    }
}

#[test]
fn sinusoidal_fill_long_runs_vs_scalar() {
    for layout in [
        SinusoidalLayout::Interleaved,
        SinusoidalLayout::Split,
        SinusoidalLayout::SplitCosFirst,
    ] {
        for (d, rows, first) in [
            (512, 700, 12_345),
            (130, 1300, 7),
            (1030, 200, 63),
            (64, 2100, 1),
            (88, 900, 200),
        ] {
            sinusoidal_long::<f32>(d, layout, rows, first);
            sinusoidal_long::<f16>(d, layout, rows, first);
            sinusoidal_long::<bf16>(d, layout, rows, first);
        }
    }
}

/// A call of f32 heads that outgrows the caches (past 12 MiB) takes loops of its own
/// (`engine::rope`, `IN_CACHE_BYTES`): rotate_half streaming one head per pass where the table
/// is not held, and, where it is, the next token's angles computed a block at a time between
/// groups of the token's heads. Bit for bit the rows of the same heads rotated in small calls
/// (which the tests above hold to `Scalar`), on every backend, both layouts, in place (heads on
/// a 64-byte boundary and 16 bytes past one) and into a bf16 cache. The head counts leave a
/// last group short (30 heads: groups of 8 for AVX-512's four blocks, of 4 for AVX2's eight)
/// and give fewer heads than blocks (3).
#[test]
fn calls_past_the_cache_match_small_calls() {
    use posenc::View;
    let hd = 128;
    let mut rng = Rng::new(0x5eed_1a7e);
    // tokens × heads × 128 f32 just past 12 MiB in place.
    for (heads, tokens, piece) in [(30, 860, 16), (3, 8200, 128)] {
        let n = tokens * heads * hd;
        let x: Vec<f32> = (0..n).map(|_| (8.0 * rng.unit() - 4.0) as f32).collect();
        let pos: Vec<i32> = (0..tokens as i32).map(|p| 7 * p + 3).collect();
        let view = View::token_major(heads, hd);
        let row = heads * hd;
        for layout in [Layout::RotateHalf, Layout::Interleaved] {
            for backend in available() {
                let rope = Rope::new(&RopeConfig::new(hd, 5e5, layout))
                    .unwrap()
                    .with_backend(backend)
                    .unwrap();
                let what = format!("{backend:?} {layout:?} {heads} heads");
                for skew in [0, 4] {
                    let (mut whole, at) = placed(&x, skew);
                    let mut pieces = whole.clone();
                    rope.apply(&mut whole[at..at + n], heads, &pos).unwrap();
                    for (rows, p) in pieces[at..at + n]
                        .chunks_mut(piece * row)
                        .zip(pos.chunks(piece))
                    {
                        rope.apply(rows, heads, p).unwrap();
                    }
                    let differ = differing(&whole, &pieces);
                    assert_eq!(differ, 0, "{what}: in place at +{skew}, one call vs pieces");
                }

                let (mut whole, mut pieces) = (vec![bf16::ZERO; n], vec![bf16::ZERO; n]);
                rope.apply_into(&x, heads, &mut whole, view, &pos).unwrap();
                let src = x.chunks(piece * row);
                for ((dst, s), p) in pieces
                    .chunks_mut(piece * row)
                    .zip(src)
                    .zip(pos.chunks(piece))
                {
                    rope.apply_into(s, heads, dst, view, p).unwrap();
                }
                let differ = differing(&whole, &pieces);
                assert_eq!(differ, 0, "{what}: into bf16, one call vs pieces");
            }
        }
    }
}

/// 16-bit heads keep their table in registers across a token's heads at every size where it
/// takes at most half the registers (`engine::rope`: head_dim 128 on AVX-512, 64 on AVX2): a
/// call past the caches (over 12 MiB of heads) is bit for bit the same heads rotated in small
/// calls, bf16 and f16, both layouts, in place. Only the tiers that take that path run it
/// (the reference and portable tiers never hold a 16-bit table across heads).
#[test]
fn sixteen_bit_calls_past_the_cache_match_small_calls() {
    let mut rng = Rng::new(0xb16_ca11);
    let tiers: Vec<Backend> = available()
        .into_iter()
        .filter(|b| matches!(b, Backend::Avx2 | Backend::Avx512))
        .collect();
    // 32 heads; tokens × 32 × head_dim × 2 bytes just past 12 MiB.
    for (hd, tokens) in [(64, 3104), (128, 1552)] {
        let (heads, piece) = (32, 16);
        let n = tokens * heads * hd;
        let x: Vec<f32> = (0..n).map(|_| (8.0 * rng.unit() - 4.0) as f32).collect();
        let pos: Vec<i32> = (0..tokens as i32).map(|p| 5 * p + 1).collect();
        for layout in [Layout::RotateHalf, Layout::Interleaved] {
            for &backend in &tiers {
                let rope = Rope::new(&RopeConfig::new(hd, 1e4, layout))
                    .unwrap()
                    .with_backend(backend)
                    .unwrap();
                whole_vs_pieces::<bf16>(&rope, &x, heads, &pos, piece);
                whole_vs_pieces::<f16>(&rope, &x, heads, &pos, piece);
            }
        }
    }
}

/// `x` rounded to `T`, rotated in one call and in calls of `piece` tokens: the same bits.
fn whole_vs_pieces<T: Element>(rope: &Rope, x: &[f32], heads: usize, pos: &[i32], piece: usize) {
    let mut whole: Vec<T> = x.iter().map(|&v| T::from_f32(v)).collect();
    let mut pieces = whole.clone();
    rope.apply(&mut whole, heads, pos).unwrap();
    let row = heads * rope.head_dim();
    for (rows, p) in pieces.chunks_mut(piece * row).zip(pos.chunks(piece)) {
        rope.apply(rows, heads, p).unwrap();
    }
    let differ = differing(&whole, &pieces);
    assert_eq!(
        differ,
        0,
        "{:?} {:?} head_dim {}: one call vs pieces",
        rope.backend(),
        rope.layout(),
        rope.head_dim()
    );
}

/// How many values differ in their bits (f16/bf16 widen to f32 exactly, bits and all).
fn differing<T: Element>(a: &[T], b: &[T]) -> usize {
    let bits = |v: &T| v.to_f32().to_bits();
    a.iter().zip(b).filter(|(x, y)| bits(x) != bits(y)).count()
}

/// `len` values of `src` copied to a buffer that starts `skew` elements past a 64-byte boundary;
/// returns the buffer and where the copy starts in it.
fn placed<T: Dt>(src: &[T], skew: usize) -> (Vec<T>, usize) {
    let mut buf = vec![T::from_f32(0.0); src.len() + 64];
    let size = core::mem::size_of::<T>();
    let at = (buf.as_ptr() as usize / size).wrapping_neg() % (64 / size) + skew;
    buf[at..at + src.len()].copy_from_slice(src);
    (buf, at)
}

/// A buffer's address decides which loop a tier runs (AVX2 and AVX-512 move f32 windows that
/// start half a vector past a vector boundary on whole vectors, their end pieces together):
/// every backend's rotation of buffers at every element offset in a cache line is bitwise its
/// rotation of a 64-byte-aligned one, and (whole windows) matches Scalar under the backend's
/// policy. Shapes where the tiers hold tables in registers (one token: four heads per pass and
/// a remainder; several tokens in cache), partial windows at an offset, apply, the table path
/// and rotate-into between two skewed f32 buffers.
#[test]
fn rotations_at_every_buffer_offset_vs_aligned_and_scalar() {
    let mut rng = Rng::new(0xA11C);
    for (head_dim, rotary_dim, offset) in [
        (32, 32, 0),
        (64, 64, 0),
        (96, 96, 0),
        (128, 128, 0),
        (160, 128, 16),
        (136, 128, 8),
        (112, 96, 8),
    ] {
        for layout in [Layout::Interleaved, Layout::RotateHalf] {
            for (n_heads, tokens) in [(1, 1), (6, 1), (3, 4)] {
                let cfg = RopeConfig::new(head_dim, 1e4, layout)
                    .rotary_dim(rotary_dim)
                    .rotary_offset(offset);
                let rope = Rope::new(&cfg).unwrap();
                let positions: Vec<i32> = (0..tokens).map(|_| rng.position()).collect();
                let x: Vec<f32> = (0..tokens * n_heads * head_dim)
                    .map(|_| rng.value())
                    .collect();
                let len = x.len();
                let (mut rc, mut rs) = (
                    vec![0f32; tokens * rotary_dim / 2],
                    vec![0f32; tokens * rotary_dim / 2],
                );
                let scalar = rope.with_backend(Backend::Scalar).unwrap();
                scalar.fill_cos_sin(&positions, &mut rc, &mut rs).unwrap();
                let mut want = x.clone();
                scalar.apply(&mut want, n_heads, &positions[..]).unwrap();
                for backend in available() {
                    let rope = rope.with_backend(backend).unwrap();
                    let mut tbuf = vec![0f32; rope.table_len(tokens)];
                    let table = rope.table(&positions, &mut tbuf).unwrap();
                    let (mut a, a0) = placed(&x, 0);
                    rope.apply(&mut a[a0..a0 + len], n_heads, &positions[..])
                        .unwrap();
                    let aligned = a[a0..a0 + len].to_vec();
                    if offset == 0 {
                        let p = Problem {
                            n_heads,
                            head_dim,
                            rotary_dim,
                            layout,
                            x: &x,
                            cos: &rc,
                            sin: &rs,
                        };
                        compare(policy(backend).0, &p, &aligned, &want)
                            .unwrap_or_else(|e| panic!("{backend:?} {head_dim} {layout:?}: {e}"));
                    }
                    for skew in 0..16 {
                        let ctx = format!(
                            "{backend:?} head_dim {head_dim} rotary {rotary_dim}+{offset} {layout:?} \
                             heads {n_heads} tokens {tokens} skew {skew}"
                        );
                        let (mut b, b0) = placed(&x, skew);
                        rope.apply(&mut b[b0..b0 + len], n_heads, &positions[..])
                            .unwrap();
                        assert!(
                            b[b0..b0 + len]
                                .iter()
                                .zip(&aligned)
                                .all(|(u, v)| u.to_bits() == v.to_bits()),
                            "apply, {ctx}"
                        );
                        let (mut c, c0) = placed(&x, skew);
                        rope.apply(&mut c[c0..c0 + len], n_heads, table).unwrap();
                        assert!(
                            c[c0..c0 + len]
                                .iter()
                                .zip(&aligned)
                                .all(|(u, v)| u.to_bits() == v.to_bits()),
                            "table, {ctx}"
                        );
                        let (mut d, d0) = placed(&vec![f32::NAN; len], skew);
                        let view = posenc::View::token_major(n_heads, head_dim);
                        let (src, s0) = placed(&x, skew);
                        rope.apply_into(
                            &src[s0..s0 + len],
                            n_heads,
                            &mut d[d0..d0 + len],
                            view,
                            &positions[..],
                        )
                        .unwrap();
                        assert!(
                            d[d0..d0 + len]
                                .iter()
                                .zip(&aligned)
                                .all(|(u, v)| u.to_bits() == v.to_bits()),
                            "apply_into, {ctx}"
                        );
                    }
                }
            }
        }
    }
}
