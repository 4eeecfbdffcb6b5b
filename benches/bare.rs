//! Bare loops: posenc's angles-once path against the same rotations written as plain
//! AVX-512 (or AVX2) loops, side by side in one process, in cache.
//!
//! `cargo bench -p posenc-benches --bench bare [-- TOKENS]` (64 by default; x86-64 only: the
//! AVX-512 loops on a CPU with AVX-512F, the AVX2 ones below otherwise, or when
//! `POSENC_BENCH_BACKEND=avx2`). Tokens × 32 heads × 128 f32 in place, a table per
//! token, 31 alternating rounds, medians in ns per token-head; ratio = bytes-ceiling time /
//! time, as in `--bench ratio`. It answers two questions:
//!
//! - **Interleaved: an expanded table or a pair-interleaved one?** `il_expanded` holds
//!   `[c0, c0, c1, c1, …]` and `[−s0, s0, −s1, s1, …]` (posenc's layout: a swap, a multiply
//!   and an FMA per vector); `il_moveldup` holds `[c0, s0, c1, s1, …]`, half the bytes, and
//!   duplicates them in the loop (`vmovsldup`, `vmovshdup`, then `vfmaddsub`: two more
//!   shuffles per vector, and it rounds the sine product instead of the cosine one, so it is
//!   not bitwise posenc's rotation nor its rotate_half). `il_expanded_reg` expands the compact
//!   table once per token instead.
//! - **What posenc's driver costs over its inner loop.** `rh_bare` is posenc's rotate_half
//!   loop with the table loaded straight into registers; `rh_staged` stages each token's table
//!   through a stack buffer as posenc's driver does; `posenc_rh` / `posenc_il` are
//!   `Rope::apply` from a `Rope::table`. The `h8` rows put the same bytes in 8 heads per token
//!   instead of 32, so a cost paid per token weighs four times as much there.
//!
//! On the AVX2 tier it asks that tier's question instead: how far can a rotation with 16
//! registers get from its bytes? `rh_const` / `il_const` rotate with cos/sin held in two
//! registers, no table at all (the least any rotation of that layout does); `rh_two`,
//! `rh_four` and `rh_eight` load each table vector once for two, four or eight heads from the
//! caller's rows, `il_one` once per head from an expanded table and `il_two` / `il_four` once
//! for two or four heads; `touch1` / `touch2` are no rotation but the ceiling's pass plus a
//! table vector read per head vector (once per head, once for two heads), the memory work a
//! table adds with no arithmetic beyond the ceiling's; `il_split1` / `il_split2` read a compact
//! table (one cos and one sin per pair, in `vshufps` order), split two head vectors into their
//! even and odd values, rotate those as rotate_half pairs and interleave them back (a table
//! vector per two head vectors, four shuffles; once per head or once for two heads);
//! `il_dup` reads a pair-interleaved table (`[c0, s0, c1, s1, …]`, one table vector per head
//! vector) and duplicates it in registers with `il_one`'s rounding (`vmovsldup`, `vmovshdup`
//! and an xor for the sines' signs: three more operations per vector than `il_one`, one load
//! fewer); `touch_expanded` is no rotation but the memory work of an expanded table (two table
//! vectors per head vector) with one multiply-add per vector, the least any loop that reads
//! an expanded table does; `rh_two_pf`, `rh_four_pf`, `rh_eight_pf` and `il_four_pf` are
//! `rh_two`, `rh_four`, `rh_eight` and `il_four` with the next group of heads' lines
//! prefetched (`prefetcht0`) a few per step, in memory order; `rh_table1` and `rh_table2` are
//! `rh_heads` over posenc's own table (`Rope::table`'s layout: the cosines of every token, then
//! the sines) in place of the rows the other loops read, one or two heads per table load;
//! `posenc_*` are `Rope::apply` from a `Rope::table` on the AVX2 backend.
//!
//! Every table, the loops' and posenc's, starts on a 64-byte boundary, so each run times the
//! same path: posenc reads such a table's rows where they lie.
//!
//! `-- overlap` asks a third question on the AVX-512 tier: how much of a token's angles can
//! hide under its heads' rotation (`bare/overlap.rs`).

/// What both tiers' runs share: the head shape, the buffer, the timing and the report.
#[cfg(target_arch = "x86_64")]
mod shared {
    use std::hint::black_box;
    use std::time::Instant;

    pub const D: usize = 128;
    pub const HALF: usize = D / 2;

    /// A cache line of f32, so the buffer starts on a 64-byte boundary.
    #[repr(align(64))]
    #[derive(Clone, Copy)]
    #[allow(dead_code)] // read and written only through the f32 slice over the lines
    pub struct Line([f32; 16]);

    /// The token count from the command line (64 by default).
    pub fn tokens() -> usize {
        std::env::args()
            .skip(1)
            .find_map(|a| a.parse().ok())
            .unwrap_or(64)
    }

    /// The buffer every loop rotates: the token count from the command line ([`tokens`]) ×
    /// 32 heads × `D` f32 in `lines` (as [`aligned`]); returns the tokens, the heads and the
    /// values.
    pub fn heads_buffer(lines: &mut Vec<Line>) -> (usize, usize, &mut [f32]) {
        let tokens = tokens();
        let heads = 32;
        (tokens, heads, aligned(lines, tokens * heads * D))
    }

    /// `n` f32 (a multiple of 16), each 0.5, starting on a 64-byte boundary, in `lines`.
    pub fn aligned(lines: &mut Vec<Line>, n: usize) -> &mut [f32] {
        *lines = vec![Line([0.5; 16]); n / 16];
        // SAFETY: `Line` is 16 f32 and nothing else (64 bytes, aligned to 64), so the lines
        // are `n` f32 in a row, borrowed mutably with `lines`.
        unsafe { core::slice::from_raw_parts_mut(lines.as_mut_ptr().cast(), n) }
    }

    /// `v` copied to a 64-byte boundary in `lines` (as [`aligned`]), so that which loads
    /// straddle cache lines does not change from run to run with the allocator.
    pub fn aligned_copy<'a>(lines: &'a mut Vec<Line>, v: &[f32]) -> &'a [f32] {
        let a = aligned(lines, v.len().next_multiple_of(16));
        a[..v.len()].copy_from_slice(v);
        &a[..v.len()]
    }

    /// Each loop's median time over 31 rounds that run every loop in turn, in ns per head of
    /// `x` (`run(k, x)` runs loop `k` once over `x`).
    pub fn medians(
        loops: usize,
        x: &mut [f32],
        mut run: impl FnMut(usize, &mut [f32]),
    ) -> Vec<f64> {
        let reps = (4 << 20) / (4 * x.len()) + 1;
        let heads = x.len() / D;
        let mut times = vec![vec![]; loops];
        for _ in 0..31 {
            for (k, times) in times.iter_mut().enumerate() {
                let start = Instant::now();
                for _ in 0..reps {
                    run(k, &mut *x);
                    black_box(&mut *x);
                }
                times.push(start.elapsed().as_secs_f64() * 1e9 / (reps * heads) as f64);
            }
        }
        times
            .iter_mut()
            .map(|v| {
                v.sort_by(f64::total_cmp);
                v[v.len() / 2]
            })
            .collect()
    }

    /// The table of loops: time and ratio (loop 0, the ceiling's time ÷ its time).
    pub fn print(names: &[&str], m: &[f64]) {
        println!("| loop | ns per token-head | ratio |");
        println!("|---|---:|---:|");
        for (name, t) in names.iter().zip(m) {
            println!("| {name} | {t:.2} | {:.2} |", m[0] / t);
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod bare {
    use super::shared::{D, HALF, Line, aligned, aligned_copy, heads_buffer, medians, print};
    use core::arch::x86_64::*;
    use posenc::{Layout, Rope, RopeConfig};
    use std::hint::black_box;

    /// A token's heads, rotate_half, from the table in registers.
    #[target_feature(enable = "avx512f,fma")]
    #[inline]
    fn rh_heads(tok: &mut [f32], c: &[__m512; 4], s: &[__m512; 4]) {
        for head in tok.chunks_exact_mut(D) {
            let p = head.as_mut_ptr();
            for v in 0..4 {
                // SAFETY: 16 values at offsets ≤ 112 of a 128-value head.
                unsafe {
                    let a = _mm512_loadu_ps(p.add(16 * v));
                    let b = _mm512_loadu_ps(p.add(HALF + 16 * v));
                    let lo = _mm512_fnmadd_ps(b, s[v], _mm512_mul_ps(a, c[v]));
                    let hi = _mm512_fmadd_ps(a, s[v], _mm512_mul_ps(b, c[v]));
                    _mm512_storeu_ps(p.add(16 * v), lo);
                    _mm512_storeu_ps(p.add(HALF + 16 * v), hi);
                }
            }
        }
    }

    /// A token's heads, interleaved, from the expanded table in registers.
    #[target_feature(enable = "avx512f,fma")]
    #[inline]
    fn il_heads(tok: &mut [f32], c: &[__m512; 8], s: &[__m512; 8]) {
        for head in tok.chunks_exact_mut(D) {
            let p = head.as_mut_ptr();
            for v in 0..8 {
                // SAFETY: 16 values at offsets ≤ 112 of a 128-value head.
                unsafe {
                    let a = _mm512_loadu_ps(p.add(16 * v));
                    let sw = _mm512_permute_ps::<0xB1>(a);
                    let r = _mm512_fmadd_ps(sw, s[v], _mm512_mul_ps(a, c[v]));
                    _mm512_storeu_ps(p.add(16 * v), r);
                }
            }
        }
    }

    /// rotate_half, the token's cos/sin (`[c; 64]`, `[s; 64]` per token) in registers.
    #[target_feature(enable = "avx512f,fma")]
    fn rh_bare(x: &mut [f32], tab: &[f32], heads: usize) {
        for (t, tok) in x.chunks_exact_mut(heads * D).enumerate() {
            let tp = &tab[t * D..(t + 1) * D];
            // SAFETY: (the table loads below) 16 values at offsets ≤ 112 of a
            // 128-value token table.
            let (mut c, mut s) = ([_mm512_setzero_ps(); 4], [_mm512_setzero_ps(); 4]);
            for v in 0..4 {
                unsafe {
                    c[v] = _mm512_loadu_ps(tp[16 * v..].as_ptr());
                    s[v] = _mm512_loadu_ps(tp[HALF + 16 * v..].as_ptr());
                }
            }
            rh_heads(tok, &c, &s);
        }
    }

    /// A 64-byte aligned token table, as posenc's driver keeps one.
    #[repr(C, align(64))]
    struct Staged {
        c: [f32; HALF],
        s: [f32; HALF],
    }

    /// Token `t`'s table times `scale` into `b`.
    #[target_feature(enable = "avx512f,fma")]
    fn stage(b: &mut Staged, tab: &[f32], t: usize, scale: f32) {
        let (k, tp) = (_mm512_set1_ps(scale), &tab[t * D..(t + 1) * D]);
        for v in 0..4 {
            // SAFETY: 16 values at offsets ≤ 112 of the token's table and ≤ 48 of the
            // 64-value arrays.
            unsafe {
                let c = _mm512_mul_ps(_mm512_loadu_ps(tp[16 * v..].as_ptr()), k);
                let s = _mm512_mul_ps(_mm512_loadu_ps(tp[HALF + 16 * v..].as_ptr()), k);
                _mm512_storeu_ps(b.c[16 * v..].as_mut_ptr(), c);
                _mm512_storeu_ps(b.s[16 * v..].as_mut_ptr(), s);
            }
        }
    }

    /// `rh_bare`, each token's table scaled (by 1) into one of two stack buffers after the
    /// previous token's heads and loaded back before its own.
    #[target_feature(enable = "avx512f,fma")]
    fn rh_staged(x: &mut [f32], tab: &[f32], heads: usize, scale: f32) {
        let zero = || Staged {
            c: [0.0; HALF],
            s: [0.0; HALF],
        };
        let mut bufs = [zero(), zero()];
        stage(&mut bufs[0], tab, 0, scale);
        let tokens = x.len() / (heads * D);
        for (t, tok) in x.chunks_exact_mut(heads * D).enumerate() {
            let (a, b) = bufs.split_at_mut(1);
            let (cur, next) = if t % 2 == 0 {
                (&a[0], &mut b[0])
            } else {
                (&b[0], &mut a[0])
            };
            let cur = black_box(cur);
            let (mut c, mut s) = ([_mm512_setzero_ps(); 4], [_mm512_setzero_ps(); 4]);
            for v in 0..4 {
                // SAFETY: 16 values at offsets ≤ 48 of the 64-value arrays.
                unsafe {
                    c[v] = _mm512_loadu_ps(cur.c[16 * v..].as_ptr());
                    s[v] = _mm512_loadu_ps(cur.s[16 * v..].as_ptr());
                }
            }
            rh_heads(tok, &c, &s);
            if t + 1 < tokens {
                stage(next, tab, t + 1, scale);
            }
        }
    }

    /// Interleaved from a table already expanded in memory: per token `[c0, c0, …]` (128)
    /// then `[−s0, s0, …]` (128).
    #[target_feature(enable = "avx512f,fma")]
    fn il_expanded(x: &mut [f32], tab: &[f32], heads: usize) {
        for (t, tok) in x.chunks_exact_mut(heads * D).enumerate() {
            let tp = &tab[t * 2 * D..(t + 1) * 2 * D];
            // SAFETY: (the table loads below) 16 values at offsets ≤ 240 of a 256-value
            // token table.
            let (mut c, mut s) = ([_mm512_setzero_ps(); 8], [_mm512_setzero_ps(); 8]);
            for v in 0..8 {
                unsafe {
                    c[v] = _mm512_loadu_ps(tp[16 * v..].as_ptr());
                    s[v] = _mm512_loadu_ps(tp[D + 16 * v..].as_ptr());
                }
            }
            il_heads(tok, &c, &s);
        }
    }

    /// Interleaved from the compact `[c0, s0, c1, s1, …]` table (128 per token), expanded into
    /// registers once per token.
    #[target_feature(enable = "avx512f,fma")]
    fn il_expanded_reg(x: &mut [f32], tab: &[f32], heads: usize) {
        let even = _mm512_set1_epi64(i32::MIN as u32 as i64);
        for (t, tok) in x.chunks_exact_mut(heads * D).enumerate() {
            let tp = &tab[t * D..(t + 1) * D];
            // SAFETY: (the table loads below) 16 values at offsets ≤ 112 of a
            // 128-value token table.
            let (mut c, mut s) = ([_mm512_setzero_ps(); 8], [_mm512_setzero_ps(); 8]);
            for v in 0..8 {
                let cs = unsafe { _mm512_loadu_ps(tp[16 * v..].as_ptr()) };
                c[v] = _mm512_moveldup_ps(cs);
                let odd = _mm512_castps_si512(_mm512_movehdup_ps(cs));
                s[v] = _mm512_castsi512_ps(_mm512_xor_si512(odd, even));
            }
            il_heads(tok, &c, &s);
        }
    }

    /// Interleaved from the compact table, duplicated per vector in the loop:
    /// `fmaddsub(x, dup_even(cs), swap(x) · dup_odd(cs))`.
    #[target_feature(enable = "avx512f,fma")]
    fn il_moveldup(x: &mut [f32], tab: &[f32], heads: usize) {
        for (t, tok) in x.chunks_exact_mut(heads * D).enumerate() {
            let tp = &tab[t * D..(t + 1) * D];
            // SAFETY: (the table loads below) 16 values at offsets ≤ 112 of a
            // 128-value token table.
            let mut cs = [_mm512_setzero_ps(); 8];
            for (v, cs) in cs.iter_mut().enumerate() {
                *cs = unsafe { _mm512_loadu_ps(tp[16 * v..].as_ptr()) };
            }
            for head in tok.chunks_exact_mut(D) {
                let p = head.as_mut_ptr();
                for (v, &cs) in cs.iter().enumerate() {
                    // SAFETY: as above.
                    unsafe {
                        let a = _mm512_loadu_ps(p.add(16 * v));
                        let sw = _mm512_permute_ps::<0xB1>(a);
                        let c = _mm512_moveldup_ps(cs);
                        let s = _mm512_movehdup_ps(cs);
                        let r = _mm512_fmaddsub_ps(a, c, _mm512_mul_ps(sw, s));
                        _mm512_storeu_ps(p.add(16 * v), r);
                    }
                }
            }
        }
    }

    /// The bytes ceiling of `--bench ratio` for f32: `x·a + b` in place.
    #[target_feature(enable = "avx512f,fma")]
    fn ceiling(x: &mut [f32]) {
        let (a, b) = (_mm512_set1_ps(0.999), _mm512_set1_ps(1e-4));
        for v in x.chunks_exact_mut(16) {
            // SAFETY: 16 values.
            unsafe {
                _mm512_storeu_ps(
                    v.as_mut_ptr(),
                    _mm512_fmadd_ps(_mm512_loadu_ps(v.as_ptr()), a, b),
                )
            };
        }
    }

    pub fn main() {
        if !is_x86_feature_detected!("avx512f") || !is_x86_feature_detected!("fma") {
            println!("bare: needs AVX-512F and FMA; this CPU has not got them");
            return;
        }
        let mut lines: Vec<Line> = vec![];
        let (tokens, heads, x) = heads_buffer(&mut lines);
        // Tables: rotate_half `[c; 64][s; 64]` per token (for 4× the tokens too, the `h8`
        // rows), interleaved expanded `[c, c, …][−s, s, …]` and compact `[c, s, …]`.
        let (mut rh, mut il_e, mut il_c) = (vec![0.0; 4 * tokens * D], vec![], vec![]);
        for t in 0..4 * tokens {
            for i in 0..HALF {
                let (s, c) = (t as f32 * 0.01 + i as f32 * 1e-3).sin_cos();
                rh[t * D + i] = c;
                rh[t * D + HALF + i] = s;
            }
        }
        for t in 0..tokens {
            let (c, s) = (&rh[t * D..t * D + HALF], &rh[t * D + HALF..(t + 1) * D]);
            il_e.extend(c.iter().flat_map(|&c| [c, c]));
            il_e.extend(s.iter().flat_map(|&s| [-s, s]));
            il_c.extend(c.iter().zip(s).flat_map(|(&c, &s)| [c, s]));
        }
        let rope = |l| Rope::new(&RopeConfig::new(D, 500_000.0, l)).unwrap();
        let (r_rh, r_il) = (rope(Layout::RotateHalf), rope(Layout::Interleaved));
        let pos: Vec<i32> = (0..4 * tokens as i32).map(|p| p + 1000).collect();
        // Every table on a 64-byte boundary, the bare loops' and posenc's.
        let mut stores: [Vec<Line>; 6] = Default::default();
        let [b_rh, b_il_e, b_il_c, s_rh, s_il, s_h8] = &mut stores;
        let (rh, il_e, il_c) = (
            aligned_copy(b_rh, &rh),
            aligned_copy(b_il_e, &il_e),
            aligned_copy(b_il_c, &il_c),
        );
        let t_rh = r_rh.table(&pos[..tokens], aligned(s_rh, r_rh.table_len(tokens)));
        let t_il = r_il.table(&pos[..tokens], aligned(s_il, r_il.table_len(tokens)));
        let t_h8 = r_rh.table(&pos, aligned(s_h8, r_rh.table_len(4 * tokens)));
        let (t_rh, t_il, t_h8) = (t_rh.unwrap(), t_il.unwrap(), t_h8.unwrap());

        let names = [
            "ceiling",
            "rh_bare",
            "rh_staged",
            "posenc_rh",
            "il_expanded",
            "il_expanded_reg",
            "il_moveldup",
            "posenc_il",
            "rh_bare h8",
            "posenc_rh h8",
        ];
        // SAFETY: (each call) AVX-512F and FMA were detected above.
        let m = medians(names.len(), x, |k, x| unsafe {
            match k {
                0 => ceiling(x),
                1 => rh_bare(x, rh, heads),
                2 => rh_staged(x, rh, heads, black_box(1.0)),
                3 => r_rh.apply(x, heads, t_rh).unwrap(),
                4 => il_expanded(x, il_e, heads),
                5 => il_expanded_reg(x, il_c, heads),
                6 => il_moveldup(x, il_c, heads),
                7 => r_il.apply(x, heads, t_il).unwrap(),
                8 => rh_bare(x, rh, 8),
                _ => r_rh.apply(x, 8, t_h8).unwrap(),
            }
        });
        println!("{tokens} tokens × 32 heads × 128 f32 (h8: × 8 heads, 4× the tokens), in place");
        print(&names, &m);
        println!(
            "posenc_rh / rh_bare {:.2}, rh_staged / rh_bare {:.2}, il_moveldup / il_expanded_reg \
             {:.2}; per-token cost beyond the loop (from the h8 rows): posenc {:.0} ns, bare {:.0} ns",
            m[3] / m[1],
            m[2] / m[1],
            m[6] / m[5],
            // time per token-head = loop + per_token / heads_per_token, solved from 32 and 8.
            (m[9] - m[3]) / (1.0 / 8.0 - 1.0 / 32.0),
            (m[8] - m[1]) / (1.0 / 8.0 - 1.0 / 32.0),
        );
    }
}

/// The AVX2 tier's loops (see the module docs): 16 registers, 8 lanes.
#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::shared::{D, HALF, Line, aligned, aligned_copy, heads_buffer, medians, print};
    use core::arch::x86_64::*;
    use posenc::bench::memory_ceiling_pass;
    use posenc::{Backend, Layout, Rope, RopeConfig};

    /// One rotate_half pair of vectors: values `8v ..` and `HALF + 8v ..` of `head`.
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    fn rh_pair(head: &mut [f32], v: usize, c: __m256, s: __m256) {
        let (lo, hi) = head.split_at_mut(HALF);
        let (a, b) = (&mut lo[8 * v..8 * v + 8], &mut hi[8 * v..8 * v + 8]);
        // SAFETY: `a` and `b` are 8 values each.
        unsafe {
            let (x, y) = (_mm256_loadu_ps(a.as_ptr()), _mm256_loadu_ps(b.as_ptr()));
            _mm256_storeu_ps(a.as_mut_ptr(), _mm256_fnmadd_ps(y, s, _mm256_mul_ps(x, c)));
            _mm256_storeu_ps(b.as_mut_ptr(), _mm256_fmadd_ps(x, s, _mm256_mul_ps(y, c)));
        }
    }

    /// One interleaved vector: values `8v ..` of `head`, `c`/`s` expanded (`s` signed).
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    fn il_vector(head: &mut [f32], v: usize, c: __m256, s: __m256) {
        let x = &mut head[8 * v..8 * v + 8];
        // SAFETY: `x` is 8 values.
        unsafe {
            let a = _mm256_loadu_ps(x.as_ptr());
            let sw = _mm256_permute_ps::<0xB1>(a);
            _mm256_storeu_ps(x.as_mut_ptr(), _mm256_fmadd_ps(sw, s, _mm256_mul_ps(a, c)));
        }
    }

    /// rotate_half with cos/sin in two registers: the pairs and the arithmetic, no table.
    #[target_feature(enable = "avx2,fma")]
    fn rh_const(x: &mut [f32]) {
        let (c, s) = (_mm256_set1_ps(0.6), _mm256_set1_ps(0.8));
        for head in x.chunks_exact_mut(D) {
            for v in 0..HALF / 8 {
                rh_pair(head, v, c, s);
            }
        }
    }

    /// Interleaved with cos/sin in two registers: the swap and the arithmetic, no table.
    #[target_feature(enable = "avx2,fma")]
    fn il_const(x: &mut [f32]) {
        let (c, s) = (_mm256_set1_ps(0.6), _mm256_set1_ps(0.8));
        for head in x.chunks_exact_mut(D) {
            for v in 0..D / 8 {
                il_vector(head, v, c, s);
            }
        }
    }

    /// rotate_half from the caller's rows (`[c; 64][s; 64]` per token), each table vector
    /// loaded once for `H` heads (`rh_two`: 2, `rh_four`: 4, `rh_eight`: 8).
    #[target_feature(enable = "avx2,fma")]
    fn rh_heads<const H: usize>(x: &mut [f32], tab: &[f32], heads: usize) {
        for (tok, row) in x.chunks_exact_mut(heads * D).zip(tab.chunks_exact(D)) {
            for group in tok.chunks_exact_mut(H * D) {
                for v in 0..HALF / 8 {
                    let (c, s) = (&row[8 * v..8 * v + 8], &row[HALF + 8 * v..HALF + 8 * v + 8]);
                    // SAFETY: `c` and `s` are 8 values each.
                    let (c, s) =
                        unsafe { (_mm256_loadu_ps(c.as_ptr()), _mm256_loadu_ps(s.as_ptr())) };
                    for head in group.chunks_exact_mut(D) {
                        rh_pair(head, v, c, s);
                    }
                }
            }
        }
    }

    /// Not a rotation: the least memory work of a loop that reads its table once per `H`
    /// heads. It is the ceiling's pass (one `x·a + t` per vector, in the ceiling's order
    /// within a head) with `t` a vector of the caller's row (`[c; 64][s; 64]` per token, one
    /// table vector per head vector), loaded once for `H` heads (`touch1`, `touch2`).
    #[target_feature(enable = "avx2,fma")]
    fn touch<const H: usize>(x: &mut [f32], tab: &[f32], heads: usize) {
        let a = _mm256_set1_ps(0.999);
        for (tok, row) in x.chunks_exact_mut(heads * D).zip(tab.chunks_exact(D)) {
            for group in tok.chunks_exact_mut(H * D) {
                for v in 0..D / 8 {
                    // SAFETY: `row` and every head are `D` values; `8v + 8 <= D`.
                    unsafe {
                        let t = _mm256_loadu_ps(row[8 * v..].as_ptr());
                        for head in group.chunks_exact_mut(D) {
                            let p = head[8 * v..8 * v + 8].as_mut_ptr();
                            _mm256_storeu_ps(p, _mm256_fmadd_ps(_mm256_loadu_ps(p), a, t));
                        }
                    }
                }
            }
        }
    }

    /// Interleaved from an expanded table (`[c, c, …][−s, s, …]` per token), each table
    /// vector loaded once for `H` heads (`il_one`: 1, `il_two`: 2).
    #[target_feature(enable = "avx2,fma")]
    fn il_heads<const H: usize>(x: &mut [f32], tab: &[f32], heads: usize) {
        for (tok, row) in x.chunks_exact_mut(heads * D).zip(tab.chunks_exact(2 * D)) {
            for group in tok.chunks_exact_mut(H * D) {
                for v in 0..D / 8 {
                    let (c, s) = (&row[8 * v..8 * v + 8], &row[D + 8 * v..D + 8 * v + 8]);
                    // SAFETY: `c` and `s` are 8 values each.
                    let (c, s) =
                        unsafe { (_mm256_loadu_ps(c.as_ptr()), _mm256_loadu_ps(s.as_ptr())) };
                    for head in group.chunks_exact_mut(D) {
                        il_vector(head, v, c, s);
                    }
                }
            }
        }
    }

    /// The prefetches of `*_pf` for call `v` of 8 per group: lines `v·H .. (v + 1)·H` of the
    /// `8H` lines that the next group of `H` heads of 128 f32 fills (it starts `H·D` values
    /// after `g0`, counted from the start of `x`, which holds `n`); none past `x`.
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    fn prefetch_next<const H: usize>(x: *const f32, n: usize, g0: usize, v: usize) {
        let next = g0 + H * D;
        for k in 0..H {
            let at = next + (v * H + k) * 16;
            if at < n {
                // SAFETY: `at < n`, inside `x`; `prefetcht0` reads nothing a program observes.
                unsafe { _mm_prefetch::<_MM_HINT_T0>(x.add(at).cast()) };
            }
        }
    }

    /// `il_heads::<H>` (`il_four_pf`: 4) with the next group's lines prefetched
    /// ([`prefetch_next`], called on every other of the group's sixteen vector steps).
    #[target_feature(enable = "avx2,fma")]
    fn il_heads_pf<const H: usize>(x: &mut [f32], tab: &[f32], heads: usize) {
        let (base, n) = (x.as_ptr(), x.len());
        let mut g0 = 0;
        for (tok, row) in x.chunks_exact_mut(heads * D).zip(tab.chunks_exact(2 * D)) {
            for group in tok.chunks_exact_mut(H * D) {
                for v in 0..D / 8 {
                    if v % 2 == 0 {
                        prefetch_next::<H>(base, n, g0, v / 2);
                    }
                    let (c, s) = (&row[8 * v..8 * v + 8], &row[D + 8 * v..D + 8 * v + 8]);
                    // SAFETY: `c` and `s` are 8 values each.
                    let (c, s) =
                        unsafe { (_mm256_loadu_ps(c.as_ptr()), _mm256_loadu_ps(s.as_ptr())) };
                    for head in group.chunks_exact_mut(D) {
                        il_vector(head, v, c, s);
                    }
                }
                g0 += H * D;
            }
        }
    }

    /// `rh_heads::<H>` (`rh_two_pf`, `rh_four_pf`, `rh_eight_pf`: 2, 4, 8) with the next
    /// group's lines prefetched ([`prefetch_next`]), so the `2H` streams a step interleaves
    /// need no hardware prefetcher to follow them.
    #[target_feature(enable = "avx2,fma")]
    fn rh_heads_pf<const H: usize>(x: &mut [f32], tab: &[f32], heads: usize) {
        let (base, n) = (x.as_ptr(), x.len());
        let mut g0 = 0;
        for (tok, row) in x.chunks_exact_mut(heads * D).zip(tab.chunks_exact(D)) {
            for group in tok.chunks_exact_mut(H * D) {
                for v in 0..HALF / 8 {
                    prefetch_next::<H>(base, n, g0, v);
                    let (c, s) = (&row[8 * v..8 * v + 8], &row[HALF + 8 * v..HALF + 8 * v + 8]);
                    // SAFETY: `c` and `s` are 8 values each.
                    let (c, s) =
                        unsafe { (_mm256_loadu_ps(c.as_ptr()), _mm256_loadu_ps(s.as_ptr())) };
                    for head in group.chunks_exact_mut(D) {
                        rh_pair(head, v, c, s);
                    }
                }
                g0 += H * D;
            }
        }
    }

    /// `rh_heads::<H>` from posenc's own table (`Rope::table`: every token's cosines, then
    /// every token's sines), read where it lies (`rh_table1`, `rh_table2`: 1, 2): how far a
    /// bare loop gets on the table `posenc_rh` reads.
    #[target_feature(enable = "avx2,fma")]
    fn rh_blocks<const H: usize>(x: &mut [f32], cos: &[f32], sin: &[f32], heads: usize) {
        let rows = cos.chunks_exact(HALF).zip(sin.chunks_exact(HALF));
        for (tok, (cr, sr)) in x.chunks_exact_mut(heads * D).zip(rows) {
            for group in tok.chunks_exact_mut(H * D) {
                for v in 0..HALF / 8 {
                    let (c, s) = (&cr[8 * v..8 * v + 8], &sr[8 * v..8 * v + 8]);
                    // SAFETY: `c` and `s` are 8 values each.
                    let (c, s) =
                        unsafe { (_mm256_loadu_ps(c.as_ptr()), _mm256_loadu_ps(s.as_ptr())) };
                    for head in group.chunks_exact_mut(D) {
                        rh_pair(head, v, c, s);
                    }
                }
            }
        }
    }

    /// Interleaved from a compact split table (per token `[c; 64][s; 64]`, each group of 8
    /// pairs in `vshufps` order `0 1 4 5 2 3 6 7`): two head vectors are split into their even
    /// and odd values, rotated as rotate_half pairs, and interleaved back; each table vector
    /// loaded once for `H` heads.
    #[target_feature(enable = "avx2,fma")]
    fn il_split<const H: usize>(x: &mut [f32], tab: &[f32], heads: usize) {
        for (tok, row) in x.chunks_exact_mut(heads * D).zip(tab.chunks_exact(D)) {
            for group in tok.chunks_exact_mut(H * D) {
                for v in 0..HALF / 8 {
                    let (c, s) = (&row[8 * v..8 * v + 8], &row[HALF + 8 * v..HALF + 8 * v + 8]);
                    // SAFETY: `c` and `s` are 8 values each; each head's 16 values at `16v`.
                    unsafe {
                        let (c, s) = (_mm256_loadu_ps(c.as_ptr()), _mm256_loadu_ps(s.as_ptr()));
                        for head in group.chunks_exact_mut(D) {
                            let p = head[16 * v..16 * v + 16].as_mut_ptr();
                            let (x0, x1) = (_mm256_loadu_ps(p), _mm256_loadu_ps(p.add(8)));
                            let e = _mm256_shuffle_ps::<0x88>(x0, x1);
                            let o = _mm256_shuffle_ps::<0xDD>(x0, x1);
                            let re = _mm256_fnmadd_ps(o, s, _mm256_mul_ps(e, c));
                            let ro = _mm256_fmadd_ps(e, s, _mm256_mul_ps(o, c));
                            _mm256_storeu_ps(p, _mm256_unpacklo_ps(re, ro));
                            _mm256_storeu_ps(p.add(8), _mm256_unpackhi_ps(re, ro));
                        }
                    }
                }
            }
        }
    }

    /// Interleaved from a pair-interleaved table (`[c0, s0, c1, s1, …]` per token, one table
    /// vector per head vector): `vmovsldup` / `vmovshdup` duplicate the cos and sin of each
    /// pair and an xor signs the sines, so each value gets `il_one`'s operations (the cosine
    /// product rounded, the sine one fused); a table vector loaded once per head.
    #[target_feature(enable = "avx2,fma")]
    fn il_dup(x: &mut [f32], tab: &[f32], heads: usize) {
        let sign = _mm256_setr_ps(-0.0, 0.0, -0.0, 0.0, -0.0, 0.0, -0.0, 0.0);
        for (tok, row) in x.chunks_exact_mut(heads * D).zip(tab.chunks_exact(D)) {
            for head in tok.chunks_exact_mut(D) {
                for v in 0..D / 8 {
                    // SAFETY: `row` is `D` values; `8v + 8 <= D`.
                    let t = unsafe { _mm256_loadu_ps(row[8 * v..].as_ptr()) };
                    let c = _mm256_moveldup_ps(t);
                    let s = _mm256_xor_ps(_mm256_movehdup_ps(t), sign);
                    il_vector(head, v, c, s);
                }
            }
        }
    }

    /// Not a rotation: the memory work of an expanded interleaved table (two table vectors
    /// per head vector, loaded once per head) with one multiply-add per vector, the ceiling's
    /// arithmetic: `x·t0 + t1`, `t0`/`t1` the vectors of an expanded table.
    #[target_feature(enable = "avx2,fma")]
    fn touch_expanded(x: &mut [f32], tab: &[f32], heads: usize) {
        for (tok, row) in x.chunks_exact_mut(heads * D).zip(tab.chunks_exact(2 * D)) {
            for head in tok.chunks_exact_mut(D) {
                for v in 0..D / 8 {
                    // SAFETY: `row` is `2·D` values and each head `D`; `8v + 8 <= D`.
                    unsafe {
                        let t0 = _mm256_loadu_ps(row[8 * v..].as_ptr());
                        let t1 = _mm256_loadu_ps(row[D + 8 * v..].as_ptr());
                        let p = head[8 * v..8 * v + 8].as_mut_ptr();
                        _mm256_storeu_ps(p, _mm256_fmadd_ps(_mm256_loadu_ps(p), t0, t1));
                    }
                }
            }
        }
    }

    pub fn main() {
        if !is_x86_feature_detected!("avx2") || !is_x86_feature_detected!("fma") {
            println!("bare: needs AVX2 and FMA; this CPU has not got them");
            return;
        }
        let mut lines: Vec<Line> = vec![];
        let (tokens, heads, x) = heads_buffer(&mut lines);
        let n = x.len();
        let (mut rh, mut il) = (vec![0.0; tokens * D], vec![]);
        for t in 0..tokens {
            for i in 0..HALF {
                let (s, c) = (t as f32 * 0.01 + i as f32 * 1e-3).sin_cos();
                rh[t * D + i] = c;
                rh[t * D + HALF + i] = s;
            }
            let (c, s) = (&rh[t * D..t * D + HALF], &rh[t * D + HALF..(t + 1) * D]);
            il.extend(c.iter().flat_map(|&c| [c, c]));
            il.extend(s.iter().flat_map(|&s| [-s, s]));
        }
        let rope = |l| {
            Rope::new(&RopeConfig::new(D, 500_000.0, l))
                .and_then(|r| r.with_backend(Backend::Avx2))
                .unwrap()
        };
        let (r_rh, r_il) = (rope(Layout::RotateHalf), rope(Layout::Interleaved));
        let pos: Vec<i32> = (0..tokens as i32).map(|p| p + 1000).collect();
        // Every table on a 64-byte boundary, the bare loops' and posenc's.
        let mut stores: [Vec<Line>; 4] = Default::default();
        let [b_rh, b_il, s_rh, s_il] = &mut stores;
        let mut sp = rh.clone();
        for row in sp.chunks_exact_mut(8) {
            let r = [
                row[0], row[1], row[4], row[5], row[2], row[3], row[6], row[7],
            ];
            row.copy_from_slice(&r);
        }
        let mut b_sp = vec![];
        let sp = aligned_copy(&mut b_sp, &sp);
        // The pair-interleaved table of `il_dup`: `[c0, s0, c1, s1, …]` per token.
        let pairs: Vec<f32> = rh
            .chunks_exact(D)
            .flat_map(|r| (0..HALF).flat_map(move |i| [r[i], r[HALF + i]]))
            .collect();
        let mut b_pairs = vec![];
        let pairs = aligned_copy(&mut b_pairs, &pairs);
        let (rh, il) = (aligned_copy(b_rh, &rh), aligned_copy(b_il, &il));
        let t_rh = r_rh.table(&pos, aligned(s_rh, r_rh.table_len(tokens)));
        let t_il = r_il.table(&pos, aligned(s_il, r_il.table_len(tokens)));
        let (t_rh, t_il) = (t_rh.unwrap(), t_il.unwrap());
        // The split loops and `il_dup` are rotations of their own: each value gets `il_one`'s
        // operations (one product, then one fused multiply-add), so before timing them, their
        // result on varied values must be `il_one`'s bit for bit.
        let varied: Vec<f32> = (0..n)
            .map(|i| ((i * 7919) % 1000) as f32 / 250.0 - 2.0)
            .collect();
        let mut want = varied.clone();
        // SAFETY: AVX2 and FMA were detected above.
        unsafe { il_heads::<1>(&mut want, il, heads) };
        let check = |name: &str, rotate: &dyn Fn(&mut [f32])| {
            let mut got = varied.clone();
            rotate(&mut got);
            let same = got
                .iter()
                .zip(&want)
                .all(|(a, b)| a.to_bits() == b.to_bits());
            assert!(same, "{name} is not il_one's rotation");
        };
        // SAFETY: (each call) AVX2 and FMA were detected above.
        check("il_split1", &|x| unsafe { il_split::<1>(x, sp, heads) });
        check("il_split2", &|x| unsafe { il_split::<2>(x, sp, heads) });
        check("il_dup", &|x| unsafe { il_dup(x, pairs, heads) });
        check("il_four_pf", &|x| unsafe { il_heads_pf::<4>(x, il, heads) });
        let names = [
            "ceiling",
            "rh_const",
            "rh_two",
            "rh_four",
            "rh_eight",
            "posenc_rh",
            "il_const",
            "il_one",
            "il_two",
            "il_four",
            "posenc_il",
            "il_split1",
            "il_split2",
            "touch1",
            "touch2",
            "il_dup",
            "touch_expanded",
            "rh_two_pf",
            "rh_four_pf",
            "rh_eight_pf",
            "il_four_pf",
            "rh_table1",
            "rh_table2",
        ];
        // SAFETY: (each call) AVX2 and FMA were detected above.
        let m = medians(names.len(), x, |k, x| unsafe {
            match k {
                // The bytes ceiling of `--bench ratio` for f32, on this tier.
                0 => memory_ceiling_pass(Backend::Avx2, x, 0.999, 1e-4).unwrap(),
                1 => rh_const(x),
                2 => rh_heads::<2>(x, rh, heads),
                3 => rh_heads::<4>(x, rh, heads),
                4 => rh_heads::<8>(x, rh, heads),
                5 => r_rh.apply(x, heads, t_rh).unwrap(),
                6 => il_const(x),
                7 => il_heads::<1>(x, il, heads),
                8 => il_heads::<2>(x, il, heads),
                9 => il_heads::<4>(x, il, heads),
                10 => r_il.apply(x, heads, t_il).unwrap(),
                11 => il_split::<1>(x, sp, heads),
                12 => il_split::<2>(x, sp, heads),
                13 => touch::<1>(x, rh, heads),
                14 => touch::<2>(x, rh, heads),
                15 => il_dup(x, pairs, heads),
                16 => touch_expanded(x, il, heads),
                17 => rh_heads_pf::<2>(x, rh, heads),
                18 => rh_heads_pf::<4>(x, rh, heads),
                19 => rh_heads_pf::<8>(x, rh, heads),
                20 => il_heads_pf::<4>(x, il, heads),
                21 => rh_blocks::<1>(x, t_rh.cos(), t_rh.sin(), heads),
                _ => rh_blocks::<2>(x, t_rh.cos(), t_rh.sin(), heads),
            }
        });
        println!("AVX2: {tokens} tokens × 32 heads × 128 f32, in place");
        print(&names, &m);
    }
}

#[cfg(target_arch = "x86_64")]
#[path = "bare/overlap.rs"]
mod overlap;

fn main() {
    #[cfg(target_arch = "x86_64")]
    {
        if std::env::args().any(|a| a == "overlap") {
            return overlap::main();
        }
        let avx2 = std::env::var("POSENC_BENCH_BACKEND").as_deref() == Ok("avx2");
        if avx2 || !is_x86_feature_detected!("avx512f") {
            avx2::main()
        } else {
            bare::main()
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    println!("bare: x86-64 only");
}
