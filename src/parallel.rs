//! Data-parallel forms of the large calls (feature `rayon`).
//!
//! Each `par_*` method validates its arguments exactly as the serial call does (same errors,
//! and nothing is written on error), then splits the buffer into disjoint pieces and runs the
//! serial call on each piece in rayon's current pool. The pieces are
//!
//! * runs of a few whole tokens (rows) when a token is small, and
//! * groups of whole heads of one token when a token alone is larger than the grain (e.g. a
//!   single decode token with many heads): the heads of one token are contiguous, so a group
//!   is the serial call on a sub-slice with `n_heads = group size` and that token's position.
//!
//! Every output element goes through exactly the operations the serial call gives it (cos/sin
//! are per token and the kernels never look across heads), so the results are **bitwise**
//! those of the serial call on the same backend. Calls on fewer than [`PAR_MIN_ELEMENTS`]
//! elements, and calls in a pool of one thread, run as the serial call on the calling thread:
//! there, waking the pool or splitting costs more than it gives. Nothing here allocates;
//! rayon's splitting uses stack jobs.

use crate::angles::{Angles, Source};
use crate::element::Element;
use crate::error::Error;
use crate::rope::Rope;
use crate::sinusoidal::Sinusoidal;
use crate::validate::check_rows;
use rayon::prelude::*;

/// Buffers shorter than this (in elements) are processed on the calling thread by the
/// `par_*` methods; longer ones are split into tasks of at least [`PAR_GRAIN`] elements.
///
/// ```
/// assert_eq!(posenc::PAR_MIN_ELEMENTS, 2 * posenc::PAR_GRAIN);
/// ```
pub const PAR_MIN_ELEMENTS: usize = 2 * PAR_GRAIN;

/// The smallest piece of work (in elements) a `par_*` method hands to one rayon task,
/// 64 KiB of f32: a few tokens of a typical attention row.
///
/// ```
/// // A decode step of Llama-3-8B queries (32 × 128 f32) stays on the calling thread.
/// assert!(32 * 128 < posenc::PAR_MIN_ELEMENTS);
/// ```
pub const PAR_GRAIN: usize = 16 * 1024;

/// Whether a call of `len` elements runs as one serial call on the calling thread: below
/// [`PAR_MIN_ELEMENTS`] (waking the pool costs more than the work), or in a pool of one
/// thread, where splitting only adds task boundaries, each a fresh call (`par_apply` on a
/// one-thread pool against serial `apply` and the one-thread ceiling in `cargo bench
/// --features rayon --bench parallel`).
fn serial(len: usize) -> bool {
    len < PAR_MIN_ELEMENTS || rayon::current_num_threads() == 1
}

/// Tokens per task when a token is shorter than the grain: at least the grain, and otherwise
/// as long as possible with about four tasks per thread (for balance). Long tasks matter:
/// the RoPE driver computes each token's cos/sin behind the previous token's heads, so every
/// task boundary costs one cos/sin computation in the open; tasks of one grain (4 tokens of
/// 32 × 128) made `par_apply` on a one-thread pool visibly slower than `apply` (`cargo bench
/// --features rayon --bench parallel`).
fn tokens_per_task(tokens: usize, row: usize) -> usize {
    let tasks = 4 * rayon::current_num_threads();
    PAR_GRAIN.div_ceil(row).max(tokens.div_ceil(tasks))
}

/// Runs `f(piece, n_heads_of_piece, angles_of_piece)` over disjoint pieces of a
/// validated token-major buffer `x` (`src.tokens() × n_heads × head_dim`).
fn split_rows<T, F>(x: &mut [T], n_heads: usize, head_dim: usize, src: Source<'_>, f: F)
where
    T: Element,
    F: Fn(&mut [T], usize, Source<'_>) + Sync,
{
    let row = n_heads * head_dim; // validated: no overflow, x.len() == tokens · row
    if serial(x.len()) {
        f(x, n_heads, src);
    } else if row < PAR_GRAIN {
        let per = tokens_per_task(src.tokens(), row);
        x.par_chunks_mut(per * row)
            .enumerate()
            .for_each(|(i, x)| f(x, n_heads, src.slice(i * per..i * per + x.len() / row)));
    } else {
        // A token alone is larger than the grain: groups of whole heads of one token.
        let group = PAR_GRAIN.div_ceil(head_dim).min(n_heads);
        x.par_chunks_mut(row).enumerate().for_each(|(t, r)| {
            r.par_chunks_mut(group * head_dim).for_each(|h| {
                f(h, h.len() / head_dim, src.slice(t..t + 1));
            })
        });
    }
}

/// The serial call on a piece the splitter made: its shape is valid by construction.
#[inline]
fn ok(r: Result<(), Error>) {
    debug_assert!(
        r.is_ok(),
        "a piece of a validated buffer was rejected: {r:?}"
    );
    let _ = r;
}

impl Rope {
    /// `serial` (one of `apply`, `apply_inverse`, `shift`) on runs of rows of `x`, after the
    /// same check `serial` makes, so the errors and the untouched-on-error rule are its own.
    fn par_rows<'a, T, F>(
        &self,
        x: &mut [T],
        n_heads: usize,
        at: impl Angles<'a>,
        serial: F,
    ) -> Result<(), Error>
    where
        T: Element,
        F: Fn(&Rope, &mut [T], usize, Source<'_>) -> Result<(), Error> + Sync,
    {
        let src = at.source();
        check_rows("x", x.len(), n_heads, self.head_dim(), src.tokens())?;
        self.check_source(&src)?;
        split_rows(x, n_heads, self.head_dim(), src, |x, h, p| {
            ok(serial(self, x, h, p))
        });
        Ok(())
    }

    /// [`Rope::apply`] on rayon's current thread pool: bitwise the same result, the same
    /// errors (checked before any work starts; `x` is untouched on error).
    ///
    /// ```
    /// use posenc::{Layout, Rope, RopeConfig};
    /// let rope = Rope::new(&RopeConfig::new(128, 500_000.0, Layout::RotateHalf)).unwrap();
    /// let positions: Vec<i32> = (0..64).collect();
    /// let mut q = vec![0.5f32; 64 * 32 * 128];
    /// let mut serial = q.clone();
    /// rope.par_apply(&mut q, 32, &positions).unwrap();
    /// rope.apply(&mut serial, 32, &positions).unwrap();
    /// assert_eq!(q, serial);
    /// ```
    pub fn par_apply<'a, T: Element>(
        &self,
        x: &mut [T],
        n_heads: usize,
        at: impl Angles<'a>,
    ) -> Result<(), Error> {
        self.par_rows(x, n_heads, at, |r, x, h, p| r.apply(x, h, p))
    }

    /// [`Rope::apply_inverse`] on rayon's current thread pool: bitwise the same result, the
    /// same errors.
    ///
    /// ```
    /// use posenc::{Layout, Rope, RopeConfig};
    /// let rope = Rope::new(&RopeConfig::new(64, 1e4, Layout::Interleaved)).unwrap();
    /// let mut k = vec![0.25f32; 512 * 8 * 64];
    /// let positions: Vec<i32> = (0..512).collect();
    /// rope.par_apply(&mut k, 8, &positions).unwrap();
    /// rope.par_apply_inverse(&mut k, 8, &positions).unwrap();
    /// assert!(k.iter().all(|v| (v - 0.25).abs() < 1e-6));
    /// ```
    pub fn par_apply_inverse<'a, T: Element>(
        &self,
        x: &mut [T],
        n_heads: usize,
        at: impl Angles<'a>,
    ) -> Result<(), Error> {
        self.par_rows(x, n_heads, at, |r, x, h, p| r.apply_inverse(x, h, p))
    }

    /// [`Rope::shift`] on rayon's current thread pool (a whole KV cache moved at once):
    /// bitwise the same result, the same errors.
    ///
    /// ```
    /// use posenc::{Layout, Rope, RopeConfig};
    /// let rope = Rope::new(&RopeConfig::new(64, 1e4, Layout::RotateHalf)).unwrap();
    /// let mut k = vec![0.25f32; 300 * 8 * 64];
    /// let (mut serial, deltas) = (k.clone(), vec![-7; 300]);
    /// rope.par_shift(&mut k, 8, &deltas).unwrap();
    /// rope.shift(&mut serial, 8, &deltas).unwrap();
    /// assert_eq!(k, serial);
    /// ```
    pub fn par_shift<'a, T: Element>(
        &self,
        k: &mut [T],
        n_heads: usize,
        deltas: impl Angles<'a>,
    ) -> Result<(), Error> {
        self.par_rows(k, n_heads, deltas, |r, k, h, d| r.shift(k, h, d))
    }

    /// [`Rope::apply_qk`] (GQA/MQA: different head counts) on rayon's current thread pool:
    /// bitwise the same result, the same errors (both buffers untouched on error). Runs of
    /// tokens go through `apply_qk`, so cos/sin stay shared by q and k within a run.
    ///
    /// ```
    /// use posenc::{Layout, Rope, RopeConfig};
    /// let rope = Rope::new(&RopeConfig::new(128, 500_000.0, Layout::RotateHalf)).unwrap();
    /// let positions: Vec<i32> = (0..16).collect();
    /// let (mut q, mut k) = (vec![0.5f32; 16 * 32 * 128], vec![0.5f32; 16 * 8 * 128]);
    /// let (mut q2, mut k2) = (q.clone(), k.clone());
    /// rope.par_apply_qk(&mut q, 32, &mut k, 8, &positions).unwrap();
    /// rope.apply_qk(&mut q2, 32, &mut k2, 8, &positions).unwrap();
    /// assert!(q == q2 && k == k2);
    /// ```
    pub fn par_apply_qk<'a, T: Element>(
        &self,
        q: &mut [T],
        n_q_heads: usize,
        k: &mut [T],
        n_kv_heads: usize,
        at: impl Angles<'a>,
    ) -> Result<(), Error> {
        let d = self.head_dim();
        let src = at.source();
        let (q_row, k_row) =
            self.check_qk(q.len(), n_q_heads, k.len(), n_kv_heads, src.tokens())?;
        self.check_source(&src)?;
        // q_row + k_row cannot overflow: both buffers exist.
        let row = q_row + k_row;
        if serial(q.len() + k.len()) {
            ok(self.apply_qk(q, n_q_heads, k, n_kv_heads, src));
        } else if row < PAR_GRAIN {
            let per = tokens_per_task(src.tokens(), row);
            q.par_chunks_mut(per * q_row)
                .zip(k.par_chunks_mut(per * k_row))
                .enumerate()
                .for_each(|(i, (q, k))| {
                    let p = src.slice(i * per..i * per + q.len() / q_row);
                    ok(self.apply_qk(q, n_q_heads, k, n_kv_heads, p))
                });
        } else {
            // Large tokens: q and k of each token in head groups, each through `apply`
            // (bitwise `apply_qk`: the same per-token cos/sin and kernels).
            let rot = |x: &mut [T], h: usize, p: Source<'_>| ok(self.apply(x, h, p));
            rayon::join(
                || split_rows(q, n_q_heads, d, src, rot),
                || split_rows(k, n_kv_heads, d, src, rot),
            );
        }
        Ok(())
    }
}

impl Sinusoidal {
    /// Rows per task: at least the grain, and few enough tasks that the per-call frequency
    /// setup (`d_model / 2` powers) stays small next to the rows.
    fn par_rows(&self, rows: usize) -> usize {
        let d = self.d_model();
        PAR_GRAIN
            .div_ceil(d)
            .max(rows.div_ceil(4 * rayon::current_num_threads()))
            .max(1)
    }

    /// [`Sinusoidal::fill`] on rayon's current thread pool: bitwise the same table, the same
    /// errors (`out` untouched on error).
    ///
    /// ```
    /// use posenc::{Sinusoidal, SinusoidalLayout};
    /// let pe = Sinusoidal::new(512, 10_000.0, SinusoidalLayout::Split).unwrap();
    /// let (mut a, mut b) = (vec![0f32; 2048 * 512], vec![0f32; 2048 * 512]);
    /// pe.par_fill(&mut a, 100).unwrap();
    /// pe.fill(&mut b, 100).unwrap();
    /// assert_eq!(a, b);
    /// ```
    pub fn par_fill<T: Element>(&self, out: &mut [T], first_position: u32) -> Result<(), Error> {
        let d = self.d_model();
        self.check_fill(out.len(), first_position)?;
        if serial(out.len()) {
            return self.fill(out, first_position);
        }
        let rows = out.len() / d;
        // Every row's position is at most 2^26 (checked above), so each piece's first
        // position fits a u32.
        let per = self.par_rows(rows);
        out.par_chunks_mut(per * d)
            .enumerate()
            .for_each(|(i, o)| ok(self.fill(o, first_position + (i * per) as u32)));
        Ok(())
    }

    /// [`Sinusoidal::fill_positions`] on rayon's current thread pool: bitwise the same table,
    /// the same errors.
    ///
    /// ```
    /// use posenc::{Sinusoidal, SinusoidalLayout};
    /// let pe = Sinusoidal::new(256, 10_000.0, SinusoidalLayout::Interleaved).unwrap();
    /// let positions: Vec<i32> = (0..1000).map(|i| 7 * i - 300).collect();
    /// let (mut a, mut b) = (vec![0f32; 1000 * 256], vec![0f32; 1000 * 256]);
    /// pe.par_fill_positions(&mut a, &positions).unwrap();
    /// pe.fill_positions(&mut b, &positions).unwrap();
    /// assert_eq!(a, b);
    /// ```
    pub fn par_fill_positions<T: Element>(
        &self,
        out: &mut [T],
        positions: &[i32],
    ) -> Result<(), Error> {
        self.check_positions(out.len(), "out", positions)?;
        self.split_positions(out, positions, |o, p| ok(self.fill_positions(o, p)));
        Ok(())
    }

    /// [`Sinusoidal::add`] on rayon's current thread pool: bitwise the same result, the same
    /// errors (`x` untouched on error).
    ///
    /// ```
    /// use posenc::{Sinusoidal, SinusoidalLayout};
    /// let pe = Sinusoidal::new(512, 10_000.0, SinusoidalLayout::Interleaved).unwrap();
    /// let positions: Vec<i32> = (0..300).collect();
    /// let (mut a, mut b) = (vec![0.5f32; 300 * 512], vec![0.5f32; 300 * 512]);
    /// pe.par_add(&mut a, &positions).unwrap();
    /// pe.add(&mut b, &positions).unwrap();
    /// assert_eq!(a, b);
    /// ```
    pub fn par_add<T: Element>(&self, x: &mut [T], positions: &[i32]) -> Result<(), Error> {
        self.check_positions(x.len(), "x", positions)?;
        self.split_positions(x, positions, |x, p| ok(self.add(x, p)));
        Ok(())
    }

    fn split_positions<T, F>(&self, x: &mut [T], positions: &[i32], f: F)
    where
        T: Element,
        F: Fn(&mut [T], &[i32]) + Sync,
    {
        if serial(x.len()) {
            return f(x, positions);
        }
        let d = self.d_model();
        let per = self.par_rows(positions.len());
        x.par_chunks_mut(per * d)
            .zip(positions.par_chunks(per))
            .for_each(|(x, p)| f(x, p));
    }
}
