//! Can a token's angles hide under its heads' rotation? A model on the AVX-512 tier, in cache.
//!
//! `cargo bench -p posenc-benches --bench bare -- overlap [TOKENS]`. The angles are FP
//! arithmetic that keeps every backend bitwise the scalar model (an exact f64 reduction,
//! unfused f32 polynomials), and the rotation in cache leaves the FP pipes part of each head
//! idle, so hiding the one under the other looks free on paper. If nothing hides, `apply`
//! from positions takes at least its rotation from a table plus the angles made alone (the
//! last row); these loops ask how much any placement of that arithmetic among the heads hides.
//!
//! Every loop rotates tokens × 32 heads × 128 f32 in place with the interleaved rotation of
//! posenc's register loop (an expanded table, 16 vectors, loaded into registers from the
//! stack; per head vector a swap, a multiply and a multiply-add). The angle work is a
//! stand-in for posenc's: four blocks per token (64 pairs of 16), each with one exact block's
//! instruction mix as `perf annotate` shows it (the f64 product and three-part reduction of
//! two halves, the narrowing, the unfused sine and cosine polynomials, the quadrant's blends
//! and signs, the interleaved expansion and its four stores into the next token's stack
//! table). Its values are not cos and sin: only its cost is modelled.
//!
//! - `rotate`: the rotation alone (what a table costs).
//! - `angles`: the angle work alone, block after block; `angles_staged`: the same in three
//!   stages (reduction, polynomials, quadrant and stores), each stage the four blocks'
//!   independent chains, which is the most the work alone gains from interleaving (posenc
//!   computes its blocks two at a time for that reason: `math::sin_cos2`).
//! - `after_all`: the rotation, then the next token's four blocks (posenc's order in cache).
//! - `after_16`, `after_8`: two blocks after every 16 heads, one after every 8.
//! - `staged`, `staged_late`: `angles_staged`'s three stages after heads 8, 16 and 24
//!   (`staged`) or 16, 24 and 32 (`staged_late`). What a placement hides is `rotate` plus the
//!   angles alone, minus its time.
//! - `groups_8`: the rotation alone, in groups of 8 heads (what splitting the loop costs).
//! - `posenc_table`, `posenc_angles`, `posenc_apply`: `Rope::apply` (interleaved) from a
//!   `Rope::table`, the making of that table (`Rope::table`, the angles alone), and
//!   `Rope::apply` from positions; the last row is the first two added.

use super::shared::{D, Line, aligned, heads_buffer, medians, print};
use core::arch::x86_64::*;
use posenc::bench::memory_ceiling_pass;
use posenc::{Backend, Layout, Rope, RopeConfig};

/// Vectors of 16 f32 per head.
const NV: usize = D / 16;
/// Angle blocks per token: 64 pairs, 16 per block.
const BLOCKS: usize = 4;

/// An expanded interleaved table on the stack, as posenc's driver stages a token's: cos at
/// `0 ..`, sin at `256 ..`.
#[repr(C, align(64))]
struct Tab([f32; 512]);

/// The angle work's state between stages: each block's reduced angle, sine and cosine.
struct Stages {
    r: [__m512; BLOCKS],
    sn: [__m512; BLOCKS],
    cs: [__m512; BLOCKS],
}

/// The polynomial and reduction constants, in registers as posenc keeps most of its own.
struct Consts([__m512; 8]);

impl Consts {
    #[target_feature(enable = "avx512f")]
    fn new() -> Consts {
        Consts(
            [1.0, 0.166_66, 0.008_33, -0.001_38, 0.041_6, -0.5, 0.5, 1.0]
                .map(|v| _mm512_set1_ps(v)),
        )
    }
}

/// Stage 1 of block `b`: the exact products `p·ω` of its two halves, reduced by three parts
/// of π/2 in f64 and narrowed to f32.
#[target_feature(enable = "avx512f,avx512dq")]
fn reduce(st: &mut Stages, b: usize, p: f64, w: &[f32; 64]) {
    let pd = _mm512_set1_pd(p);
    let mut halves = [_mm256_setzero_ps(); 2];
    for (h, half) in halves.iter_mut().enumerate() {
        let wv: &[f32; 8] = w[16 * b + 8 * h..][..8].try_into().unwrap();
        // SAFETY: `wv` is 8 f32.
        let th = _mm512_mul_pd(pd, _mm512_cvtps_pd(unsafe { _mm256_loadu_ps(wv.as_ptr()) }));
        let magic = _mm512_set1_pd(6_755_399_441_055_744.0);
        let q = _mm512_add_pd(
            _mm512_mul_pd(th, _mm512_set1_pd(core::f64::consts::FRAC_2_PI)),
            magic,
        );
        let q = _mm512_sub_pd(q, magic);
        let r = _mm512_fnmadd_pd(q, _mm512_set1_pd(1.570_796_326_734_125_6), th);
        let r = _mm512_fnmadd_pd(q, _mm512_set1_pd(6.077_100_506_506_192e-11), r);
        let r = _mm512_sub_pd(
            r,
            _mm512_mul_pd(q, _mm512_set1_pd(2.022_266_248_795_950_6e-21)),
        );
        *half = _mm512_cvtpd_ps(r);
    }
    st.r[b] = _mm512_insertf32x8::<1>(_mm512_castps256_ps512(halves[0]), halves[1]);
}

/// Stage 2 of block `b`: the sine and cosine polynomials, unfused.
#[target_feature(enable = "avx512f")]
fn polynomials(st: &mut Stages, b: usize, k: &Consts) {
    let k = &k.0;
    let r = st.r[b];
    let r2 = _mm512_mul_ps(r, r);
    let sp = _mm512_sub_ps(k[0], _mm512_mul_ps(r2, k[1]));
    let sp = _mm512_add_ps(_mm512_mul_ps(sp, r2), k[2]);
    st.sn[b] = _mm512_add_ps(_mm512_mul_ps(_mm512_mul_ps(sp, r2), r), r);
    let cp = _mm512_add_ps(_mm512_mul_ps(r2, k[3]), k[4]);
    let cp = _mm512_add_ps(_mm512_mul_ps(cp, r2), k[5]);
    let cp = _mm512_mul_ps(_mm512_mul_ps(cp, r2), r2);
    st.cs[b] = _mm512_add_ps(_mm512_sub_ps(cp, _mm512_mul_ps(r2, k[6])), k[7]);
}

/// Stage 3 of block `b`: the quadrant (a blend each way, the signs), then the interleaved
/// expansion (`[c0, c0, …]`, `[−s0, s0, …]`) stored into the next token's table.
#[target_feature(enable = "avx512f,avx512dq")]
fn expand(st: &Stages, b: usize, out: &mut Tab) {
    let q = _mm512_castps_si512(st.r[b]);
    let odd = _mm512_test_epi32_mask(q, _mm512_set1_epi32(1));
    let (c, s) = (
        _mm512_mask_blend_ps(odd, st.cs[b], st.sn[b]),
        _mm512_mask_blend_ps(odd, st.sn[b], st.cs[b]),
    );
    let (sign, top) = (_mm512_slli_epi32::<30>(q), _mm512_set1_epi32(i32::MIN));
    let c = _mm512_ternarylogic_epi32::<0x78>(_mm512_castps_si512(c), sign, top);
    let s_sign = _mm512_add_epi32(sign, _mm512_set1_epi32(1 << 30));
    let s = _mm512_ternarylogic_epi32::<0x6c>(_mm512_castps_si512(s), s_sign, top);
    let (c, s) = (_mm512_castsi512_ps(c), _mm512_castsi512_ps(s));
    let lo = _mm512_set_epi32(7, 7, 6, 6, 5, 5, 4, 4, 3, 3, 2, 2, 1, 1, 0, 0);
    let hi = _mm512_set_epi32(15, 15, 14, 14, 13, 13, 12, 12, 11, 11, 10, 10, 9, 9, 8, 8);
    let s_lo = _mm512_set_epi32(23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
    let s_hi = _mm512_set_epi32(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8);
    let neg = _mm512_xor_ps(s, _mm512_set1_ps(-0.0));
    let o = &mut out.0[32 * b..];
    let (oc, os) = o.split_at_mut(256);
    // SAFETY: `b < BLOCKS`, so `oc` holds at least 32 f32 from `32·b` and `os` (from `256 +
    // 32·b`) at least 32; `Tab` is 64-byte aligned and `32·b` f32 is a multiple of 64 bytes,
    // as 256 f32 is, so every store is aligned.
    unsafe {
        _mm512_store_ps(oc.as_mut_ptr(), _mm512_permutexvar_ps(lo, c));
        _mm512_store_ps(oc.as_mut_ptr().add(16), _mm512_permutexvar_ps(hi, c));
        _mm512_store_ps(os.as_mut_ptr(), _mm512_permutex2var_ps(neg, s_lo, s));
        _mm512_store_ps(
            os.as_mut_ptr().add(16),
            _mm512_permutex2var_ps(neg, s_hi, s),
        );
    }
}

/// Heads `h0 .. h0 + n` of token `t` (of `heads`) rotated from `tab`, loaded into registers.
#[target_feature(enable = "avx512f")]
fn rotate(x: &mut [f32], tab: &Tab, heads: usize, t: usize, h0: usize, n: usize) {
    let mut c = [_mm512_setzero_ps(); NV];
    let mut s = [_mm512_setzero_ps(); NV];
    for v in 0..NV {
        // SAFETY: entries `16·v .. + 16` and `256 + 16·v .. + 16` lie in the 512 of the
        // 64-byte aligned table, on 64-byte boundaries.
        unsafe {
            c[v] = _mm512_load_ps(tab.0.as_ptr().add(16 * v));
            s[v] = _mm512_load_ps(tab.0.as_ptr().add(256 + 16 * v));
        }
    }
    let from = (t * heads + h0) * D;
    for head in x[from..from + n * D].chunks_exact_mut(D) {
        for (v, xv) in head.chunks_exact_mut(16).enumerate() {
            // SAFETY: `xv` is 16 f32.
            unsafe {
                let a = _mm512_loadu_ps(xv.as_ptr());
                let sw = _mm512_permute_ps::<0xB1>(a);
                _mm512_storeu_ps(
                    xv.as_mut_ptr(),
                    _mm512_fmadd_ps(sw, s[v], _mm512_mul_ps(a, c[v])),
                );
            }
        }
    }
}

/// One placement of the angle work among a token's heads.
#[derive(Clone, Copy)]
enum Plan {
    /// The rotation only, in groups of this many heads.
    Rotate(usize),
    /// The angle work only.
    Angles,
    /// The angle work only, in the three stages of `Plan::Staged`, back to back.
    AnglesStaged,
    /// The rotation in groups of this many heads, whole blocks spread evenly after them.
    Blocks(usize),
    /// The rotation in groups of 8 heads; the three stages, each of all four blocks, after
    /// groups `at`, `at + 1` and `at + 2`.
    Staged(usize),
}

/// Every token of `x` (32 heads each) under `plan`. The rotation reads one table that turns
/// every pair by the same angle (cos 0.6, sin 0.8: the values keep their size over any number
/// of runs), staged on the stack as posenc stages a token's table; the angle work stores into
/// two other stack tables, alternating by token as posenc's driver alternates its own.
#[target_feature(enable = "avx512f,avx512dq")]
fn run(x: &mut [f32], heads: usize, plan: Plan, w: &[f32; 64]) {
    let k = Consts::new();
    let zero = _mm512_setzero_ps();
    let mut st = Stages {
        r: [zero; BLOCKS],
        sn: [zero; BLOCKS],
        cs: [zero; BLOCKS],
    };
    let mut turn = Tab([0.6; 512]);
    for pair in turn.0[256..].chunks_exact_mut(2) {
        pair.copy_from_slice(&[-0.8, 0.8]);
    }
    let turn = std::hint::black_box(turn);
    let mut next = [Tab([0.0; 512]), Tab([0.0; 512])];
    let tokens = x.len() / (heads * D);
    let group = match plan {
        Plan::Rotate(g) | Plan::Blocks(g) => g,
        Plan::Staged(_) => 8,
        Plan::Angles | Plan::AnglesStaged => heads,
    };
    let groups = heads / group;
    for t in 0..tokens {
        let next = &mut next[t % 2];
        let p = (t + 1001) as f64;
        let mut done = 0;
        for g in 0..groups {
            if !matches!(plan, Plan::Angles | Plan::AnglesStaged) {
                rotate(x, &turn, heads, t, g * group, group);
            }
            match plan {
                Plan::Rotate(_) => {}
                Plan::AnglesStaged => {
                    (0..BLOCKS).for_each(|b| reduce(&mut st, b, p, w));
                    (0..BLOCKS).for_each(|b| polynomials(&mut st, b, &k));
                    (0..BLOCKS).for_each(|b| expand(&st, b, next));
                }
                Plan::Angles | Plan::Blocks(_) => {
                    // Blocks `done .. (g + 1)·BLOCKS / groups` after group `g`.
                    while done < (g + 1) * BLOCKS / groups {
                        reduce(&mut st, done, p, w);
                        polynomials(&mut st, done, &k);
                        expand(&st, done, next);
                        done += 1;
                    }
                }
                Plan::Staged(at) => {
                    let stage = g.wrapping_sub(at);
                    for b in 0..BLOCKS {
                        match stage {
                            0 => reduce(&mut st, b, p, w),
                            1 => polynomials(&mut st, b, &k),
                            2 => expand(&st, b, next),
                            _ => {}
                        }
                    }
                }
            }
        }
    }
    std::hint::black_box(&next);
}

pub fn main() {
    if !is_x86_feature_detected!("avx512f") || !is_x86_feature_detected!("avx512dq") {
        println!("bare overlap: needs AVX-512F and AVX-512DQ; this CPU has not got them");
        return;
    }
    let mut lines: Vec<Line> = vec![];
    let (tokens, heads, x) = heads_buffer(&mut lines);
    // posenc's frequencies at base 500000, and its positions from 1000, as `--bench ratio`.
    let w: [f32; 64] = core::array::from_fn(|j| 500_000f32.powf(-(j as f32) / 64.0));
    let rope = Rope::new(&RopeConfig::new(D, 500_000.0, Layout::Interleaved))
        .and_then(|r| r.with_backend(Backend::Avx512))
        .unwrap();
    let pos: Vec<i32> = (0..tokens as i32).map(|p| p + 1000).collect();
    let mut store = vec![];
    let table = aligned(&mut store, rope.table_len(tokens).next_multiple_of(16));
    let table = rope
        .table(&pos, &mut table[..rope.table_len(tokens)])
        .unwrap();
    let names = [
        "ceiling",
        "rotate",
        "angles",
        "angles_staged",
        "after_all",
        "after_16",
        "after_8",
        "staged",
        "staged_late",
        "groups_8",
        "posenc_table",
        "posenc_angles",
        "posenc_apply",
    ];
    let mut angles = vec![0.0; rope.table_len(tokens)];
    // SAFETY: (each `run`) AVX-512F and AVX-512DQ were detected above.
    let m = medians(names.len(), x, |k, x| unsafe {
        match k {
            0 => memory_ceiling_pass(Backend::Avx512, x, 0.999, 1e-4).unwrap(),
            1 => run(x, heads, Plan::Rotate(heads), &w),
            2 => run(x, heads, Plan::Angles, &w),
            3 => run(x, heads, Plan::AnglesStaged, &w),
            4 => run(x, heads, Plan::Blocks(heads), &w),
            5 => run(x, heads, Plan::Blocks(16), &w),
            6 => run(x, heads, Plan::Blocks(8), &w),
            7 => run(x, heads, Plan::Staged(0), &w),
            8 => run(x, heads, Plan::Staged(1), &w),
            9 => run(x, heads, Plan::Rotate(8), &w),
            10 => rope.apply(x, heads, table).unwrap(),
            11 => {
                rope.table(&pos, &mut angles).unwrap();
            }
            _ => rope.apply(x, heads, &pos).unwrap(),
        }
    });
    println!("AVX-512, the angles among the heads: {tokens} tokens × 32 heads × 128 f32, in place");
    print(&names, &m);
    // What `apply` would take if its angles hid nowhere and cost nothing beyond their own
    // time: the rotation from a table plus the table's making.
    let floor = m[10] + m[11];
    println!(
        "| posenc_table + posenc_angles | {floor:.2} | {:.2} |",
        m[0] / floor
    );
}
