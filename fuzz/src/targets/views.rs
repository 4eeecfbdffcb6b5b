//! Strided views and the per-call variants: `Rope::apply_views` (random views: absurd strides,
//! offsets and head counts up to `usize::MAX`, 0..=6 views, 0..=6 tokens), `apply_qk`,
//! `shift`, `apply_axes` (1, 2 or 3 axes against M-RoPE, interleaved M-RoPE, 2-D vision and
//! plain ropes), `Rope::from_inv_freq` (frequency lists and attention factors from
//! `FloatParam`), under every `Rounding` mode, window offset and backend. Checked:
//!
//! * nothing panics (overflow checks and debug assertions are on in the fuzz build);
//! * a call that returns `Err` leaves every buffer bitwise unchanged;
//! * `apply_views`: a call with a head out of bounds or two heads sharing an element (found by
//!   brute force, or by pigeonhole when the heads hold more elements than the buffer) is
//!   refused; an accepted call changes nothing outside the declared heads and rotates each
//!   view exactly as `apply` rotates its heads gathered into a contiguous buffer;
//! * `apply_qk`, `shift`, `apply_axes`: succeed exactly when their documented shape rules hold
//!   (and, for `apply_axes`, whose axis positions are any `i32`, every position is in the
//!   domain `|p| · max ω ≤ 2^26`);
//!   `apply_qk` equals two `apply` calls; `shift` equals `apply` of the same frequencies with
//!   attention factor 1 (`from_inv_freq(.., 1.0)`); `apply_axes` with every axis of a token
//!   equal to `p` equals `apply` at `p`;
//! * `from_inv_freq` succeeds exactly when the documented rules hold (head_dim even and
//!   non-zero, `1 ≤ len ≤ MAX_ROTARY_DIM/2`, `2·len ≤ head_dim`, frequencies finite, ≥ 0 and
//!   at most 2^16, attention factor finite and > 0) and then returns the frequencies bit for
//!   bit.
//!
//! Computed values compare bitwise up to NaN payloads (`assert_same`); "untouched" is bitwise.

use crate::{
    DtypeSel, FloatParam, Fz, MAX_ELEMS, PosSel, assert_bits_eq, assert_same, gen_vec, positions,
};
use arbitrary::Arbitrary;
use posenc::{
    Axes, Backend, Layout, MAX_ROTARY_DIM, Rope, RopeConfig, Rounding, Scaling, View, Yarn, bf16,
    f16,
};

/// A claimed stride/offset/count, relative to `head_dim` where it matters.
#[derive(Arbitrary, Debug, Clone, Copy)]
enum Num {
    Zero,
    Small(u8),
    /// `k·head_dim + adj − 4`.
    Heads(u8, u8),
    Any(usize),
    Max,
    MaxMinus(u16),
    HalfMax(i8),
}

impl Num {
    fn get(self, hd: usize) -> usize {
        match self {
            Num::Zero => 0,
            Num::Small(v) => v as usize,
            Num::Heads(k, adj) => ((k % 16) as usize * hd + (adj % 9) as usize).saturating_sub(4),
            Num::Any(v) => v,
            Num::Max => usize::MAX,
            Num::MaxMinus(k) => usize::MAX - k as usize,
            Num::HalfMax(d) => (usize::MAX / 2).wrapping_add(d as isize as usize),
        }
    }

    /// A head count: small (0..=33) unless one of the huge variants was chosen.
    fn count(self) -> usize {
        match self {
            Num::Any(_) | Num::Max | Num::MaxMinus(_) | Num::HalfMax(_) => self.get(1),
            _ => self.get(1) % 34,
        }
    }
}

#[derive(Arbitrary, Debug, Clone, Copy)]
struct ViewSel {
    /// Bit 0: take the first view's token stride; bit 1: its head stride (fused QKV views
    /// share strides, which is what reaches the interleaved-footprint rule).
    share: u8,
    n_heads: Num,
    token_stride: Num,
    head_stride: Num,
    offset: Num,
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum AxesSel {
    Single,
    MRope(u8, u8),
    MRopeInterleaved(u8, u8),
    Vision2d,
}

#[derive(Arbitrary, Debug)]
struct Input {
    // the rope
    half_dim: u8,
    rotary_half: u8,
    offset: u8,
    interleaved: bool,
    yarn: bool,
    axes: AxesSel,
    rounding: u8,
    backend: u8,
    dtype: DtypeSel,
    // the calls
    tokens: u8,
    views: Vec<ViewSel>,
    len_delta: i16,
    nq: Num,
    nk: Num,
    q_delta: i8,
    k_delta: i8,
    n_axes: u8,
    equal_axes: bool,
    pos: Vec<PosSel>,
    axis_pos: Vec<PosSel>,
    // from_inv_freq
    freqs: Vec<FloatParam>,
    f_head_dim: Num,
    factor: FloatParam,
    data: Vec<u32>,
}

fn rounding(k: u8) -> Rounding {
    [Rounding::Once, Rounding::HfEager, Rounding::HfUpcast][k as usize % 3]
}

/// A valid rope from the input (falls back to plain axes if the chosen ones do not fit).
fn rope(inp: &Input) -> Rope {
    let hd = 2 * (1 + inp.half_dim as usize % 48);
    let offset = inp.offset as usize % hd;
    let rd = 2 * (1 + inp.rotary_half as usize % ((hd - offset) / 2).max(1));
    let (offset, rd) = if offset + rd > hd {
        (0, hd)
    } else {
        (offset, rd)
    };
    let layout = if inp.interleaved {
        Layout::Interleaved
    } else {
        Layout::RotateHalf
    };
    let mut cfg = RopeConfig::new(hd, 1e6, layout)
        .rotary_dim(rd)
        .rotary_offset(offset);
    if inp.yarn {
        cfg = cfg.scaling(Scaling::Yarn(Yarn::new(4.0, 32_768)));
    }
    let pairs = rd / 2;
    let sections = |a: u8, b: u8| {
        let s0 = a as usize % (pairs + 1);
        let s1 = b as usize % (pairs - s0 + 1);
        [s0, s1, pairs - s0 - s1]
    };
    let axes = match inp.axes {
        AxesSel::Single => Axes::Single,
        AxesSel::MRope(a, b) => Axes::MRope {
            sections: sections(a, b),
        },
        AxesSel::MRopeInterleaved(a, b) => Axes::MRopeInterleaved {
            sections: sections(a, b),
        },
        AxesSel::Vision2d => Axes::Vision2d,
    };
    let r = Rope::new(&cfg.axes(axes)).unwrap_or_else(|_| Rope::new(&cfg).unwrap());
    let backends: Vec<Backend> = Backend::ALL
        .iter()
        .copied()
        .filter(|b| b.is_available())
        .collect();
    r.with_backend(backends[inp.backend as usize % backends.len()])
        .unwrap()
        .with_rounding(rounding(inp.rounding))
}

/// Head `h` of token `t` of `v` starts here (None: overflow).
fn start(v: &View, t: usize, h: usize) -> Option<usize> {
    t.checked_mul(v.token_stride)?
        .checked_add(h.checked_mul(v.head_stride)?)?
        .checked_add(v.offset)
}

/// Brute force: `Some(true)` in bounds and disjoint, `Some(false)` in bounds but overlapping,
/// `None` out of bounds (or zero heads, or too many views).
/// Views per input the target generates (posenc itself has no limit).
const MAX_VIEWS: usize = 6;

fn oracle(views: &[View], tokens: usize, len: usize, hd: usize) -> Option<bool> {
    if views.iter().any(|v| v.n_heads == 0) {
        return None;
    }
    if tokens == 0 {
        return Some(true);
    }
    // Pigeonhole first: more head elements than buffer elements must overlap (or be out).
    let total = views.iter().try_fold(0usize, |acc, v| {
        tokens
            .checked_mul(v.n_heads)?
            .checked_mul(hd)?
            .checked_add(acc)
    });
    match total {
        Some(n) if n <= len => {}
        _ => return Some(false),
    }
    let mut count = vec![0u8; len];
    let mut disjoint = true;
    for v in views {
        for t in 0..tokens {
            for h in 0..v.n_heads {
                let s = start(v, t, h)?;
                let e = s.checked_add(hd)?;
                if e > len {
                    return None;
                }
                for c in &mut count[s..e] {
                    *c = c.saturating_add(1);
                    disjoint &= *c == 1;
                }
            }
        }
    }
    Some(disjoint)
}

/// Runs `f` on copies of `bufs`; on `Err` asserts they are unchanged. Returns the result and
/// the copies.
fn guarded<T: Fz, const N: usize>(
    bufs: [&[T]; N],
    what: &str,
    f: impl FnOnce(&mut [Vec<T>; N]) -> Result<(), posenc::Error>,
) -> (bool, [Vec<T>; N]) {
    let mut copies: [Vec<T>; N] = bufs.map(|b| b.to_vec());
    let r = f(&mut copies);
    if r.is_err() {
        for (c, b) in copies.iter().zip(bufs) {
            assert_bits_eq(c, b, &format!("{what}: Err({r:?}) but a buffer changed"));
        }
    }
    (r.is_ok(), copies)
}

fn check_views<T: Fz>(inp: &Input, rope: &Rope, pos: &[i32]) {
    let hd = rope.head_dim();
    let tokens = pos.len();
    let mut views: Vec<View> = Vec::new();
    for s in inp.views.iter().take(MAX_VIEWS + 2) {
        let first = views.first().copied();
        let mut v = View {
            n_heads: s.n_heads.count(),
            token_stride: s.token_stride.get(hd),
            head_stride: s.head_stride.get(hd),
            offset: s.offset.get(hd),
        };
        if let Some(f) = first {
            if s.share & 1 != 0 {
                v.token_stride = f.token_stride;
            }
            if s.share & 2 != 0 {
                v.head_stride = f.head_stride;
            }
        }
        views.push(v);
    }
    // Buffer length: the largest claimed end (if representable and small) plus a delta.
    let end = views
        .iter()
        .filter_map(|v| {
            let t = tokens.checked_sub(1)?;
            start(v, t, v.n_heads.checked_sub(1)?)?.checked_add(hd)
        })
        .max()
        .unwrap_or(0);
    let len = if end <= MAX_ELEMS {
        (end as i64 + inp.len_delta as i64).clamp(0, MAX_ELEMS as i64) as usize
    } else {
        (inp.len_delta.unsigned_abs() as usize) % (MAX_ELEMS + 1)
    };
    let x: Vec<T> = gen_vec(len, &inp.data);
    let verdict = oracle(&views, tokens, len, hd);
    let (ok, [y]) = guarded([&x[..]], "apply_views", |[b]| {
        rope.apply_views(b, &views, pos)
    });
    if !ok {
        return;
    }
    assert_eq!(
        verdict,
        Some(true),
        "apply_views accepted {views:?} with {tokens} tokens over {len} elements"
    );
    if tokens == 0 {
        assert_bits_eq(&y, &x, "apply_views with no tokens");
        return;
    }
    // Expected: each view's heads gathered, rotated by `apply`, scattered back.
    let mut want = x.clone();
    for v in &views {
        let mut g = Vec::with_capacity(tokens * v.n_heads * hd);
        for t in 0..tokens {
            for h in 0..v.n_heads {
                let s = start(v, t, h).unwrap();
                g.extend_from_slice(&x[s..s + hd]);
            }
        }
        rope.apply(&mut g, v.n_heads, pos).unwrap();
        let mut k = 0;
        for t in 0..tokens {
            for h in 0..v.n_heads {
                let s = start(v, t, h).unwrap();
                want[s..s + hd].copy_from_slice(&g[k..k + hd]);
                k += hd;
            }
        }
    }
    // Outside the heads `want` is `x` bit for bit, so this also checks "untouched".
    assert_same(&y, &want, "apply_views vs gathered apply");
    let mut covered = vec![false; len];
    for v in &views {
        for t in 0..tokens {
            for h in 0..v.n_heads {
                let s = start(v, t, h).unwrap();
                covered[s..s + hd].fill(true);
            }
        }
    }
    for (i, c) in covered.iter().enumerate() {
        if !c {
            assert_eq!(
                y[i].bits(),
                x[i].bits(),
                "apply_views wrote element {i} outside the heads"
            );
        }
    }
}

fn rows(tokens: usize, n: usize, hd: usize) -> Option<usize> {
    (n > 0).then_some(())?;
    tokens.checked_mul(n.checked_mul(hd)?)
}

fn sized(expected: Option<usize>, delta: i8) -> usize {
    match expected.filter(|&e| e <= MAX_ELEMS) {
        Some(e) => (e as i64 + (delta % 3) as i64).clamp(0, MAX_ELEMS as i64) as usize,
        None => delta.unsigned_abs() as usize,
    }
}

fn check_qk_shift<T: Fz>(inp: &Input, rope: &Rope, pos: &[i32]) {
    let hd = rope.head_dim();
    let tokens = pos.len();
    let (nq, nk) = (inp.nq.count(), inp.nk.get(1) % 5);
    let (eq, ek) = (rows(tokens, nq, hd), rows(tokens, nk, hd));
    let (lq, lk) = (sized(eq, inp.q_delta), sized(ek, inp.k_delta));
    let q: Vec<T> = gen_vec(lq, &inp.data);
    let k: Vec<T> = gen_vec(lk, inp.data.get(1..).unwrap_or(&[]));
    let (ok, [q1, k1]) = guarded([&q[..], &k[..]], "apply_qk", |[a, b]| {
        rope.apply_qk(a, nq, b, nk, pos)
    });
    assert_eq!(
        ok,
        eq == Some(lq) && ek == Some(lk),
        "apply_qk acceptance: nq {nq} nk {nk} tokens {tokens} hd {hd} lens {lq} {lk}"
    );
    if ok {
        let (mut q2, mut k2) = (q.clone(), k.clone());
        rope.apply(&mut q2, nq, pos).unwrap();
        rope.apply(&mut k2, nk, pos).unwrap();
        assert_same(&q1, &q2, "apply_qk q vs apply");
        assert_same(&k1, &k2, "apply_qk k vs apply");
    }
    // shift on q's buffer
    let (ok, [s1]) = guarded([&q[..]], "shift", |[a]| rope.shift(a, nq, pos));
    assert_eq!(ok, eq == Some(lq), "shift acceptance");
    if ok && rope.rotary_offset() == 0 {
        let plain = Rope::from_inv_freq(hd, rope.layout(), rope.inv_freq(), 1.0)
            .unwrap()
            .with_backend(rope.backend())
            .unwrap()
            .with_rounding(rope.rounding());
        let mut s2 = q.clone();
        plain.apply(&mut s2, nq, pos).unwrap();
        assert_same(&s1, &s2, "shift vs apply with attention factor 1");
    }
}

fn axes_call<T: Fz, const A: usize>(inp: &Input, rope: &Rope, pos: &[i32], n: usize) {
    let hd = rope.head_dim();
    let tokens = pos.len();
    let p: Vec<[i32; A]> = (0..tokens)
        .map(|t| {
            core::array::from_fn(|a| {
                if inp.equal_axes || inp.axis_pos.is_empty() {
                    pos[t]
                } else {
                    inp.axis_pos[(t * A + a) % inp.axis_pos.len()].get()
                }
            })
        })
        .collect();
    let e = rows(tokens, n, hd);
    let len = sized(e, inp.q_delta);
    let x: Vec<T> = gen_vec(len, &inp.data);
    let (ok, [y]) = guarded([&x[..]], "apply_axes", |[a]| rope.apply_axes(a, n, &p));
    // Axis positions are any i32: in the domain when `|p| · max ω ≤ 2^26` for the rope's
    // largest frequency (crate docs, *Accuracy contract*).
    let lim = crate::position_limit(crate::max_freq(rope.inv_freq()));
    let in_domain = p.iter().flatten().all(|&q| (q as i64).abs() <= lim);
    assert_eq!(
        ok,
        A == rope.axes().count() && e == Some(len) && in_domain,
        "apply_axes acceptance"
    );
    if ok && (inp.equal_axes || inp.axis_pos.is_empty()) {
        let mut z = x.clone();
        rope.apply(&mut z, n, pos).unwrap();
        assert_same(&y, &z, "apply_axes with equal axes vs apply");
    }
}

fn check_axes<T: Fz>(inp: &Input, rope: &Rope, pos: &[i32]) {
    let n = 1 + inp.nk.get(1) % 3;
    match inp.n_axes % 3 {
        0 => axes_call::<T, 1>(inp, rope, pos, n),
        1 => axes_call::<T, 2>(inp, rope, pos, n),
        _ => axes_call::<T, 3>(inp, rope, pos, n),
    }
}

/// The largest frequency `from_inv_freq` accepts (its docs: "at most 2^16").
const MAX_INV_FREQ: f32 = 65_536.0;

fn check_from_inv_freq(inp: &Input) {
    let w: Vec<f32> = inp
        .freqs
        .iter()
        .take(MAX_ROTARY_DIM / 2 + 2)
        .map(|f| f.get())
        .collect();
    let hd = inp.f_head_dim.get(2 * w.len().max(1));
    let m = inp.factor.get();
    let valid = hd > 0
        && hd.is_multiple_of(2)
        && !w.is_empty()
        && w.len() <= MAX_ROTARY_DIM / 2
        && 2 * w.len() <= hd
        && w.iter()
            .all(|v| v.is_finite() && (0.0..=MAX_INV_FREQ).contains(v))
        && m.is_finite()
        && m > 0.0;
    let layout = if inp.interleaved {
        Layout::Interleaved
    } else {
        Layout::RotateHalf
    };
    match Rope::from_inv_freq(hd, layout, &w, m) {
        Ok(r) => {
            assert!(
                valid,
                "from_inv_freq accepted hd {hd} len {} m {m} {w:?}",
                w.len()
            );
            let same = r
                .inv_freq()
                .iter()
                .zip(&w)
                .all(|(a, b)| a.to_bits() == b.to_bits());
            assert!(
                same && r.inv_freq().len() == w.len(),
                "inv_freq not returned bit for bit"
            );
            assert_eq!(r.attention_factor().to_bits(), m.to_bits());
            assert_eq!(
                (r.head_dim(), r.rotary_dim(), r.rotary_offset()),
                (hd, 2 * w.len(), 0)
            );
        }
        Err(e) => assert!(!valid, "from_inv_freq refused a valid input: {e:?}"),
    }
}

fn run<T: Fz>(inp: &Input) {
    let rope = rope(inp);
    let tokens = inp.tokens as usize % 7;
    let pos = positions(tokens, &inp.pos);
    check_views::<T>(inp, &rope, &pos);
    check_qk_shift::<T>(inp, &rope, &pos);
    check_axes::<T>(inp, &rope, &pos);
}

/// One fuzz input: `data` decoded as libFuzzer's typed `fuzz_target!` decodes it
/// (`Input::arbitrary_take_rest`), then checked; bytes that decode to nothing are skipped.
pub fn fuzz(data: &[u8]) {
    let Ok(inp) = Input::arbitrary_take_rest(arbitrary::Unstructured::new(data)) else {
        return;
    };
    check_from_inv_freq(&inp);
    match inp.dtype {
        DtypeSel::F32 => run::<f32>(&inp),
        DtypeSel::F16 => run::<f16>(&inp),
        DtypeSel::Bf16 => run::<bf16>(&inp),
    }
}
