//! Storage conversions, exhaustively: every f16 and bf16 bit pattern, a dense sample of f32
//! patterns with every rounding tie, and the same conversions *through the kernels* on every
//! backend (DESIGN.md: "f16/bf16 conversion matches `half` bit-for-bit", "one rounding per
//! output", "NaN stays NaN").
//!
//! Runtime: about 1–2 s at the test profile's opt-level 1.

mod common;

use posenc::{Backend, Element, Layout, Rope, RopeConfig, bf16, f16};

fn available() -> Vec<Backend> {
    Backend::available().collect()
}

// ---------------------------------------------------------------------------------------
// to_f32 / from_f32 against `half`
// ---------------------------------------------------------------------------------------

#[test]
fn f16_to_f32_all_patterns_match_half() {
    let mut bad = Vec::new();
    for u in 0..=u16::MAX {
        let h = f16::from_bits(u);
        let ours = <f16 as Element>::to_f32(h).to_bits();
        let theirs = half::f16::to_f32(h).to_bits();
        if ours != theirs {
            bad.push((u, ours, theirs));
        }
    }
    assert!(
        bad.is_empty(),
        "{} f16 patterns widen differently from half, e.g. (bits, posenc, half) {:#x?}",
        bad.len(),
        &bad[..bad.len().min(4)]
    );
}

#[test]
fn bf16_to_f32_all_patterns_match_half() {
    let mut bad = Vec::new();
    for u in 0..=u16::MAX {
        let h = bf16::from_bits(u);
        let ours = <bf16 as Element>::to_f32(h).to_bits();
        let theirs = half::bf16::to_f32(h).to_bits();
        if ours != theirs {
            bad.push((u, ours, theirs));
        }
    }
    // Non-NaN patterns are the value itself, shifted: checked separately so a failure above
    // on NaNs alone is recognisable.
    for u in 0..=u16::MAX {
        let h = bf16::from_bits(u);
        if !h.is_nan() {
            assert_eq!(
                <bf16 as Element>::to_f32(h).to_bits(),
                (u as u32) << 16,
                "{u:#06x}"
            );
        } else {
            assert!(
                <bf16 as Element>::to_f32(h).is_nan(),
                "{u:#06x}: NaN must stay NaN"
            );
        }
    }
    let all_snan = bad
        .iter()
        .all(|&(u, _, _)| (u & 0x7FFF) > 0x7F80 && (u & 0x0040) == 0);
    assert!(
        bad.is_empty(),
        "BUG: {} bf16 patterns widen differently from half (DESIGN: conversion matches half \
         bit for bit){}. (bits, posenc, half): {:#x?}",
        bad.len(),
        if all_snan {
            "; all of them signalling NaNs: half::bf16::to_f32 quiets a NaN (sets bit 22), \
             <bf16 as Element>::to_f32 keeps it signalling"
        } else {
            ""
        },
        &bad[..bad.len().min(4)]
    );
}

/// `from_f32(to_f32(x))` is bitwise `half`'s round trip, and the identity for every non-NaN
/// pattern (a NaN stays a NaN).
#[test]
fn round_trip_all_patterns() {
    for u in 0..=u16::MAX {
        let h = f16::from_bits(u);
        let ours = <f16 as Element>::from_f32(<f16 as Element>::to_f32(h));
        let theirs = half::f16::from_f32(half::f16::to_f32(h));
        assert_eq!(ours.to_bits(), theirs.to_bits(), "f16 {u:#06x}");
        if h.is_nan() {
            assert!(ours.is_nan(), "f16 {u:#06x}");
        } else {
            assert_eq!(ours.to_bits(), u, "f16 {u:#06x}");
        }

        let b = bf16::from_bits(u);
        let ours = <bf16 as Element>::from_f32(<bf16 as Element>::to_f32(b));
        let theirs = half::bf16::from_f32(half::bf16::to_f32(b));
        assert_eq!(ours.to_bits(), theirs.to_bits(), "bf16 {u:#06x}");
        if b.is_nan() {
            assert!(ours.is_nan(), "bf16 {u:#06x}");
        } else {
            assert_eq!(ours.to_bits(), u, "bf16 {u:#06x}");
        }
    }
    // f32 is the identity, NaN payloads included.
    for u in [
        0u32,
        0x8000_0000,
        0x7F80_0001,
        0xFFC1_2345,
        0x3F80_0000,
        0x0000_0001,
    ] {
        let v = f32::from_bits(u);
        assert_eq!(
            <f32 as Element>::from_f32(<f32 as Element>::to_f32(v)).to_bits(),
            u
        );
    }
}

/// The f32 inputs of the rounding checks: every 4099th pattern (both signs, all exponents),
/// every rounding midpoint between consecutive f16 and between consecutive bf16 values with
/// its two f32 neighbours, and the edges (f16 max and overflow ties, subnormal ties,
/// f32 subnormals, ±0, ±inf, NaN payloads that only the low bits carry).
fn f32_inputs() -> Vec<f32> {
    let mut v: Vec<u32> = (0..=u32::MAX).step_by(4099).collect();
    let around = |v: &mut Vec<u32>, m: f32| {
        let b = m.to_bits();
        v.extend([b, b.wrapping_add(1), b.wrapping_sub(1)]);
    };
    for u in 0..=u16::MAX {
        // f16: the midpoint to the next pattern (12 significant bits: exact in f32).
        let (h, n) = (f16::from_bits(u), f16::from_bits(u.wrapping_add(1)));
        if h.is_finite() && n.is_finite() && (u & 0x7FFF) != 0x7FFF {
            let m = (h.to_f64() + n.to_f64()) / 2.0;
            if (m as f32) as f64 == m {
                around(&mut v, m as f32);
            }
        }
        // bf16: the midpoint to the next pattern is the pattern with the half-bit set.
        around(&mut v, f32::from_bits(((u as u32) << 16) | 0x8000));
    }
    let edges: [f32; 16] = [
        65504.0,
        65519.0,
        65519.996,
        65520.0,
        65536.0,
        5.960_464_5e-8, // 2^-24, the smallest f16 subnormal
        2.980_232_2e-8, // 2^-25: a tie, rounds to 0
        4.470_348_4e-8, // 1.5 · 2^-25: above the tie, rounds up to 2^-24
        6.103_515_6e-5, // the smallest normal f16
        f32::MAX,
        f32::MIN_POSITIVE,
        1e-45,
        f32::INFINITY,
        f32::NEG_INFINITY,
        0.0,
        -0.0,
    ];
    for e in edges {
        around(&mut v, e);
        around(&mut v, -e);
    }
    v.extend([
        0x7F80_0001,
        0x7F80_2000,
        0x7F80_FFFF,
        0x7FC0_0000,
        0x7FC0_0001,
        0x7FFF_FFFF,
        0xFF80_0001,
        0xFFC0_0000,
        0xFFFF_FFFF,
        0x7F7F_8000, // bf16 tie at the top: rounds to inf
        0x7F7F_7FFF,
    ]);
    v.into_iter().map(f32::from_bits).collect()
}

#[test]
fn from_f32_matches_half_on_dense_sample_and_all_ties() {
    let inputs = f32_inputs();
    for &x in &inputs {
        let (o16, t16) = (<f16 as Element>::from_f32(x), half::f16::from_f32(x));
        assert_eq!(
            o16.to_bits(),
            t16.to_bits(),
            "f16 from {:#010x}",
            x.to_bits()
        );
        let (ob, tb) = (<bf16 as Element>::from_f32(x), half::bf16::from_f32(x));
        assert_eq!(
            ob.to_bits(),
            tb.to_bits(),
            "bf16 from {:#010x}",
            x.to_bits()
        );
        if x.is_nan() {
            assert!(
                o16.is_nan() && ob.is_nan(),
                "NaN {:#010x} must stay NaN",
                x.to_bits()
            );
        }
    }
    println!("{} f32 inputs", inputs.len());
}

// ---------------------------------------------------------------------------------------
// through the kernels
// ---------------------------------------------------------------------------------------

/// The storage types with the *reference* conversions (`half`'s, never posenc's own
/// `Element` methods, which are what is under test).
trait Dt: Element {
    fn bits(self) -> u32;
    fn all() -> Vec<Self>;
    /// `half`'s widening.
    fn ref_f32(self) -> f32;
    /// `half`'s rounding.
    fn ref_from(v: f32) -> Self;
    fn sign(self) -> bool {
        self.ref_f32().is_sign_negative()
    }
}

impl Dt for f16 {
    fn bits(self) -> u32 {
        self.to_bits() as u32
    }
    fn all() -> Vec<Self> {
        (0..=u16::MAX).map(f16::from_bits).collect()
    }
    fn ref_f32(self) -> f32 {
        half::f16::to_f32(self)
    }
    fn ref_from(v: f32) -> Self {
        half::f16::from_f32(v)
    }
}
impl Dt for bf16 {
    fn bits(self) -> u32 {
        self.to_bits() as u32
    }
    fn all() -> Vec<Self> {
        (0..=u16::MAX).map(bf16::from_bits).collect()
    }
    fn ref_f32(self) -> f32 {
        half::bf16::to_f32(self)
    }
    fn ref_from(v: f32) -> Self {
        half::bf16::from_f32(v)
    }
}
impl Dt for f32 {
    fn bits(self) -> u32 {
        self.to_bits()
    }
    fn all() -> Vec<Self> {
        f32_inputs()
    }
    fn ref_f32(self) -> f32 {
        self
    }
    fn ref_from(v: f32) -> Self {
        v
    }
}

/// What a rotation by `c = 1, s = +0` gives, worked out exactly:
/// `out_a = a·1 − b·(+0)`, `out_b = b·1 + a·(+0)`, with `x·(+0) = ±0` carrying x's sign for
/// finite x and NaN for ±inf or NaN.
///
/// * a NaN operand, or a partner that is ±inf (inf·0) or NaN, gives NaN;
/// * otherwise the result is the element itself (`x ∓ 0 = x` exactly, ±inf included), except
///   when the element is a zero, where IEEE's zero sums decide: `out_a = −0` only for
///   `a = −0` with a partner of positive sign (`−0 − (+0) = −0`, `−0 − (−0) = +0`), and
///   `out_b = −0` only for `b = −0` with a partner of negative sign (`−0 + (−0) = −0`).
///
/// This holds for fused and unfused evaluation alike (the products are exact), and the store
/// is exact (the value is the element's own). `None` means "must be NaN".
fn identity_model<T: Dt>(a: T, b: T, first: bool) -> Option<u32> {
    let (af, bf) = (a.ref_f32(), b.ref_f32());
    if af.is_nan() || !bf.is_finite() {
        return None;
    }
    if af != 0.0 {
        return Some(a.bits());
    }
    let neg_zero = if first {
        a.sign() && !b.sign()
    } else {
        a.sign() && b.sign()
    };
    Some(if neg_zero {
        T::ref_from(-0.0).bits()
    } else {
        T::ref_from(0.0).bits()
    })
}

/// Checks `out` (rotated by cos 1, sin +0) against [`identity_model`]; `pairs` lists the
/// element pairs `(ia, ib)`.
fn check_identity<T: Dt>(what: &str, x: &[T], out: &[T], pairs: &[(usize, usize)]) {
    let mut checked = vec![false; x.len()];
    for &(ia, ib) in pairs {
        for (i, partner, first) in [(ia, ib, true), (ib, ia, false)] {
            checked[i] = true;
            match identity_model(x[i], x[partner], first) {
                None => assert!(
                    out[i].ref_f32().is_nan(),
                    "{what} {:?}: element {i} {:#x} (partner {:#x}) must become NaN, got {:#x}",
                    T::DTYPE,
                    x[i].bits(),
                    x[partner].bits(),
                    out[i].bits()
                ),
                Some(want) => assert_eq!(
                    out[i].bits(),
                    want,
                    "{what} {:?}: element {i} {:#x} (partner {:#x}, {})",
                    T::DTYPE,
                    x[i].bits(),
                    x[partner].bits(),
                    if first { "a" } else { "b" }
                ),
            }
        }
    }
    // Channels outside every pair are untouched.
    for (i, c) in checked.iter().enumerate() {
        if !c {
            assert_eq!(out[i].bits(), x[i].bits(), "{what}: untouched element {i}");
        }
    }
}

fn pairs_of(
    layout: Layout,
    n_heads: usize,
    head_dim: usize,
    rotary_dim: usize,
) -> Vec<(usize, usize)> {
    let half = rotary_dim / 2;
    (0..n_heads)
        .flat_map(|h| {
            (0..half).map(move |j| {
                let (a, b) = match layout {
                    Layout::Interleaved => (2 * j, 2 * j + 1),
                    Layout::RotateHalf => (j, j + half),
                };
                (h * head_dim + a, h * head_dim + b)
            })
        })
        .collect()
}

/// Rows to rotate: every pattern next to its neighbour pattern and (rotate_half, one head of
/// all patterns) next to its own negation; and every pattern in both slots of a pair with each
/// of a set of partners (±1, ±0, ±inf, NaN, the smallest subnormal).
fn identity_rows<T: Dt>() -> Vec<(usize, Vec<T>)> {
    let all = T::all();
    let n = all.len() / 2 * 2;
    let tiny = all[1]; // the smallest positive subnormal (f16, bf16) / a subnormal (f32)
    let mut rows = vec![(n, all[..n].to_vec())];
    let partners: Vec<T> = [
        1.0f32,
        -1.0,
        0.0,
        -0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        1e-45,
    ]
    .iter()
    .map(|&v| T::ref_from(v))
    .chain([tiny])
    .collect();
    let mut mixed = Vec::with_capacity(all.len() * 4);
    for (i, &x) in all[..all.len() / 4 * 4].iter().enumerate() {
        let p = partners[i % partners.len()];
        let q = partners[(i / partners.len() + i) % partners.len()];
        mixed.extend([x, p, q, x]);
    }
    rows.push((16, mixed));
    rows
}

fn identity_through_kernels<T: Dt>() {
    // Rows wider than a rope's largest rotary dim are cut into heads of 512 (and a last row
    // of what is left), so every pattern still goes through the table path.
    let mut rows = vec![];
    for (head_dim, x) in identity_rows::<T>() {
        if head_dim <= 512 {
            rows.push((head_dim, x));
        } else {
            let whole = x.len() / 512 * 512;
            rows.push((512, x[..whole].to_vec()));
            if whole < x.len() {
                rows.push((x.len() - whole, x[whole..].to_vec()));
            }
        }
    }
    for (head_dim, x) in rows {
        let n_heads = x.len() / head_dim;
        for layout in [Layout::Interleaved, Layout::RotateHalf] {
            let pairs = pairs_of(layout, n_heads, head_dim, head_dim);
            let cos = vec![1.0f32; head_dim / 2];
            let sin = vec![0.0f32; head_dim / 2];
            for backend in available() {
                let mut out = x.clone();
                common::table_on(backend, &mut out, n_heads, head_dim, layout, &cos, &sin).unwrap();
                check_identity(
                    &format!("{backend:?} table {layout:?} head_dim {head_dim}"),
                    &x,
                    &out,
                    &pairs,
                );
            }
        }
    }
    // Rope::apply at position 0 has cos exactly 1 and sin exactly +0 on every backend, so
    // the same model holds (head_dim 16: frequencies inline).
    for backend in available() {
        let rope = Rope::new(&RopeConfig::new(16, 10_000.0, Layout::Interleaved))
            .unwrap()
            .with_backend(backend)
            .unwrap();
        let (mut c, mut s) = ([0f32; 8], [0f32; 8]);
        rope.fill_cos_sin(&[0], &mut c, &mut s).unwrap();
        assert!(
            c.iter().all(|v| v.to_bits() == 1f32.to_bits()),
            "{backend:?}: cos(0) {c:?}"
        );
        assert!(
            s.iter().all(|v| v.to_bits() == 0),
            "{backend:?}: sin(0) {s:?}"
        );
        for layout in [Layout::Interleaved, Layout::RotateHalf] {
            let rope = Rope::new(&RopeConfig::new(16, 10_000.0, layout))
                .unwrap()
                .with_backend(backend)
                .unwrap();
            let (_, x) = identity_rows::<T>().pop().unwrap();
            let n_heads = x.len() / 16;
            let mut out = x.clone();
            rope.apply(&mut out, n_heads, &[0]).unwrap();
            check_identity(
                &format!("{backend:?} apply(p=0) {layout:?}"),
                &x,
                &out,
                &pairs_of(layout, n_heads, 16, 16),
            );
        }
    }
}

/// cos 1, sin 0 on all 65,536 f16 patterns (and the f32 sample) through every backend: each
/// element comes back exactly as [`identity_model`] says.
#[test]
fn identity_rotation_all_f16_patterns_every_backend() {
    identity_through_kernels::<f16>();
}

#[test]
fn identity_rotation_all_bf16_patterns_every_backend() {
    identity_through_kernels::<bf16>();
}

#[test]
fn identity_rotation_f32_sample_every_backend() {
    identity_through_kernels::<f32>();
}

/// The store rounding inside the kernels: cos `c`, sin 0, partner +1. Then
/// `out_a = store(f32(a·c) − (+0)) = store(f32(a·c))` (`p − (+0) = p` for every p, zeros
/// included, and a fused evaluation rounds `a·c` once too), and `out_b = store(c)`
/// (`1·c + a·0 = c`; NaN when `a` is ±inf or NaN). With `c = 1.5` or `0.75` the products of
/// f16/bf16 values have one bit more than the type: every odd pattern is an exact tie, so
/// round-half-to-even is checked on every pattern; `1 + 2^-11`, `0.7` and `3` check
/// ordinary rounding and overflow to infinity. Expected values use `half`'s conversions.
fn rounding_through_kernels<T: Dt>() {
    let all = T::all();
    for c in [1.5f32, 0.75, 1.0 + 1.0 / 2048.0, 0.7, 3.0] {
        let mut x = Vec::with_capacity(all.len() * 2);
        for &a in &all {
            x.extend([a, T::ref_from(1.0)]);
        }
        let n_pairs = all.len();
        let cos = vec![c; 8];
        let sin = vec![0.0f32; 8];
        for backend in available() {
            let mut out = x.clone();
            common::table_on(
                backend,
                &mut out,
                n_pairs / 8,
                16,
                Layout::Interleaved,
                &cos,
                &sin,
            )
            .unwrap();
            for i in 0..n_pairs {
                let a = x[2 * i];
                let p = a.ref_f32() * c;
                let want_a = T::ref_from(p);
                let got_a = out[2 * i];
                if p.is_nan() {
                    assert!(
                        got_a.ref_f32().is_nan(),
                        "{backend:?} {:?} c {c}: {:#x}",
                        T::DTYPE,
                        a.bits()
                    );
                } else {
                    assert_eq!(
                        got_a.bits(),
                        want_a.bits(),
                        "{backend:?} {:?} c {c}: a {:#x} ({:e}), a·c = {p:e}",
                        T::DTYPE,
                        a.bits(),
                        a.ref_f32()
                    );
                }
                let got_b = out[2 * i + 1];
                if a.ref_f32().is_finite() {
                    assert_eq!(
                        got_b.bits(),
                        T::ref_from(c).bits(),
                        "{backend:?} c {c}: partner of {:#x}",
                        a.bits()
                    );
                } else {
                    assert!(
                        got_b.ref_f32().is_nan(),
                        "{backend:?} c {c}: partner of {:#x}",
                        a.bits()
                    );
                }
            }
        }
    }
}

#[test]
fn store_rounding_through_kernels_f16() {
    rounding_through_kernels::<f16>();
}

#[test]
fn store_rounding_through_kernels_bf16() {
    rounding_through_kernels::<bf16>();
}

/// `Dtype`'s two facts: its byte size is the storage type's `size_of`, and its name is the
/// lower-case dtype name its docs give (the C ABI and error messages print it).
#[test]
fn dtype_size_and_name() {
    use posenc::Dtype;
    fn check<T: Element>(name: &str) {
        assert_eq!(T::DTYPE.size_bytes(), std::mem::size_of::<T>(), "{name}");
        assert_eq!(T::DTYPE.name(), name);
    }
    check::<f32>("f32");
    check::<f16>("f16");
    check::<bf16>("bf16");
    assert_eq!(
        [Dtype::F32, Dtype::F16, Dtype::Bf16].map(Dtype::size_bytes),
        [4, 2, 2]
    );
}

/// A lone subnormal anywhere in a head comes back exact through every kernel shape: tiers
/// whose native bf16 conversion reads subnormals as zero test each vector (AVX512-BF16), and
/// kernels that store two vectors at once (a rotate_half pair, two interleaved vectors) test
/// them together, so a subnormal in either one must send both down the exact path. Position 0
/// rotates by cos 1, sin +0, so every output is its input (`identity_through_kernels`);
/// head `h` holds its subnormal at value `8h + h % 8`, one in every 8 values of the rotary
/// window across the heads, so every lane group of every tier's vectors gets one. Shapes:
/// head_dim 128 (the table held in registers), 256 (streamed), and a rotary window of 96 in
/// heads of 128 (the general shape); decode and several tokens.
fn lone_subnormal_through_kernels<T: Dt>() {
    let tiny = T::all()[1]; // the smallest positive subnormal
    let ordinary = [T::ref_from(1.0), T::ref_from(0.75), T::ref_from(-1.5)];
    for (head_dim, rotary) in [(128, 128), (256, 256), (128, 96)] {
        let n_heads = rotary / 8;
        for tokens in [1, 3] {
            let mut x: Vec<T> = (0..tokens * n_heads * head_dim)
                .map(|i| ordinary[i % 3])
                .collect();
            for t in 0..tokens {
                for h in 0..n_heads {
                    x[(t * n_heads + h) * head_dim + 8 * h + h % 8] = tiny;
                }
            }
            for layout in [Layout::Interleaved, Layout::RotateHalf] {
                let cfg = RopeConfig::new(head_dim, 10_000.0, layout).rotary_dim(rotary);
                for backend in available() {
                    let rope = Rope::new(&cfg).unwrap().with_backend(backend).unwrap();
                    let mut out = x.clone();
                    rope.apply(&mut out, n_heads, &vec![0; tokens][..]).unwrap();
                    let bad = (0..x.len()).find(|&i| out[i].bits() != x[i].bits());
                    assert!(
                        bad.is_none(),
                        "{backend:?} {layout:?} head_dim {head_dim} rotary {rotary} tokens \
                         {tokens}: value {} is {:#06x}, not {:#06x}",
                        bad.unwrap_or(0),
                        out[bad.unwrap_or(0)].bits(),
                        x[bad.unwrap_or(0)].bits()
                    );
                }
            }
        }
    }
}

#[test]
fn lone_subnormal_survives_every_kernel_shape_bf16() {
    lone_subnormal_through_kernels::<bf16>();
}

#[test]
fn lone_subnormal_survives_every_kernel_shape_f16() {
    lone_subnormal_through_kernels::<f16>();
}
