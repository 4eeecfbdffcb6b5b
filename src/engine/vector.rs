//! The vector trait: what a SIMD tier provides, and the per-dtype loads and stores built on it.
//!
//! A tier is a zero-sized *token* type (`Scalar`, `Portable`, `Avx2`, `Avx512`, …) that
//! implements [`Simd`]. Holding a token is the proof that the CPU can run the tier: the x86
//! tokens have one constructor each, which checks the CPU (see `detect.rs`), so the
//! arithmetic methods below are safe to call. Only the raw-pointer loads and stores are
//! `unsafe`, for the usual reason: the pointer must address `LANES` readable or writable
//! values. The slice forms ([`Simd::load`], [`Simd::store`], …) check that and are safe.
//!
//! Every method is `#[inline(always)]` in every implementation. The kernels that use them are
//! generic and `#[inline(always)]` too, and are instantiated inside one `#[target_feature]`
//! entry function per tier (`x86_64/avx2.rs`'s `run`, …): only when everything inlines into
//! that function does LLVM compile the intrinsics with the tier's features. (The same rule as
//! memchr's `Vector` trait.)
//!
//! The numeric contract of each method is written on it. Two properties matter everywhere:
//! * everything except [`Simd::mul_add`] and [`Simd::neg_mul_add`] is one IEEE operation per
//!   lane, so tiers agree bit for bit (cos/sin tables are identical on every backend);
//! * the tier says whether those two round once (x86 FMA) or twice (the scalar
//!   reference and `wide`), which is the only source of difference between backends.

use crate::element::{Dtype, Element};

/// The largest lane count of any tier (AVX-512: 16 f32).
pub(crate) const MAX_LANES: usize = 16;

/// The operations the kernels need, on `F` (`LANES` f32 lanes) and `D` (`LANES / 2` f64
/// lanes).
pub(crate) trait Simd: Copy {
    /// f32 lanes of [`Simd::F`] (even; [`Simd::D`] has half as many f64 lanes).
    const LANES: usize;
    /// Values of [`Simd::F`] the ISA's vector registers hold at once: a kernel whose working
    /// set is larger spills to the stack.
    const REGISTERS: usize;
    /// Whether this is the reference tier (`Scalar`). The RoPE driver runs it in its plainest
    /// form only, one head per pass in the general shape: the other tiers' grouped heads,
    /// whole-vector kernels and tables held in registers are checked against code that has none
    /// of them, and the reference costs one instantiation per dtype pair, layout and rounding.
    const REFERENCE: bool = false;
    /// Whether [`Simd::ld_f32_halves`] and [`Simd::st_f32_halves`] are two native accesses of
    /// half a vector each. Half a vector at an address that is a multiple of its size never
    /// straddles a cache line, so the RoPE driver then moves an f32 window that starts half a
    /// vector past a vector boundary (a `malloc`ed buffer on AVX2) on whole-vector boundaries,
    /// its two end pieces together in one vector (see `engine/rope/mod.rs`).
    const HALVES: bool = false;
    /// Whether [`Simd::ld_f32_split`] and [`Simd::st_f32_split`] also split a vector at a
    /// quarter and at three quarters of its lanes, as native accesses of a quarter vector each
    /// (AVX-512: a window 16 or 48 bytes past a cache line, where `malloc` puts large blocks,
    /// moved on vector boundaries as [`Simd::HALVES`] moves those half a vector past one).
    const QUARTERS: bool = false;
    /// Whether [`Simd::st_bf16_pair`] costs less than two [`Simd::st_bf16`] (a rounding whose
    /// per-vector test two vectors can share). Only then do kernels take two vectors at a
    /// time for it: elsewhere the pairing gains nothing and changed the portable tier's code
    /// for the worse (LLVM stopped vectorizing its bf16 stores; `benches/mca/neon.py`).
    const BF16_PAIR: bool = false;
    /// Whether [`Simd::ld_bf16_split`] and [`Simd::st_bf16_merge`] are cheaper than loading and
    /// storing bf16 vectors one at a time: a shift and a mask to widen `2·LANES` values, against
    /// a shuffle per vector. Only then does the RoPE driver rotate bf16 heads held against a
    /// table in registers as their even and odd values (`Run::resident_split`).
    const SPLIT_BF16: bool = false;
    /// Whether the streaming loops (a table in memory, loaded per vector for a group of
    /// heads) rotate whole bf16 windows as their even and odd values too, from a table the
    /// angle blocks write in that order once per token (`Run::rotate_split`). Pays where a
    /// bf16 vector's widening and narrowing are shuffles that compete with the rounding's
    /// shifts for the same ports (AVX2).
    const SPLIT_BF16_STREAM: bool = false;
    /// Whether a call of f32 heads past the caches computes the next token's table a block at
    /// a time between groups of the current token's heads (`Run::resident_tokens`), so that
    /// the angles' arithmetic runs while the heads' loads wait on memory. It won on AVX-512,
    /// and on the AVX2 tier of a CPU that has AVX-512 too, but lost on a CPU whose own tier
    /// is AVX2, where the angles made once after the token's heads kept the loads streaming
    /// (`cargo bench --bench ratio`, the apply column at 4096 tokens). The AVX2 tier runs by
    /// default only on CPUs without AVX-512, so it follows those; NEON and the portable tier
    /// were not timed with it.
    const ANGLES_BETWEEN_HEADS: bool = false;
    /// `LANES` f32.
    type F: Copy;
    /// `LANES / 2` f64.
    type D: Copy;

    /// Every lane `v`.
    fn splat(self, v: f32) -> Self::F;
    /// `a + b`.
    fn add(self, a: Self::F, b: Self::F) -> Self::F;
    /// `a − b`.
    fn sub(self, a: Self::F, b: Self::F) -> Self::F;
    /// `a · b`.
    fn mul(self, a: Self::F, b: Self::F) -> Self::F;
    /// `a·b + c`: one rounding on tiers with FMA (x86), else the product rounded, then the sum.
    fn mul_add(self, a: Self::F, b: Self::F, c: Self::F) -> Self::F;
    /// `c − a·b`, rounded as [`Simd::mul_add`].
    fn neg_mul_add(self, a: Self::F, b: Self::F, c: Self::F) -> Self::F;
    /// `[a1, a0, a3, a2, …]`.
    fn swap_pairs(self, a: Self::F) -> Self::F;
    /// `−a` (the sign bit flipped, so `−0.0` for `0.0`, as scalar negation).
    fn neg(self, a: Self::F) -> Self::F;
    /// Interleaves `a` and `b`: `([a0, b0, a1, b1, …], […, a_{L−1}, b_{L−1}])`.
    fn zip(self, a: Self::F, b: Self::F) -> (Self::F, Self::F);
    /// Applies the quadrant `k mod 4` to the polynomial values `(s, c)`, where `k` sits in the
    /// low mantissa bits of `y = angle·(2/π) + ROUND_MAGIC` (lanes `0 .. L/2` in `ylo`, the
    /// rest in `yhi`): swap when `k` is odd, negate sin when `k & 2`, negate cos when
    /// `(k + 1) & 2` — the selections `trig::quadrant` makes.
    fn quadrant(self, ylo: Self::D, yhi: Self::D, s: Self::F, c: Self::F) -> (Self::F, Self::F);
    /// Rounds `v` to f16 and back (nearest even), as a store and a load would.
    fn round_f16(self, v: Self::F) -> Self::F;
    /// Rounds `v` to bf16 and back (nearest even, NaN quieted), as a store and a load would.
    fn round_bf16(self, v: Self::F) -> Self::F;

    /// Every lane `v`.
    fn dsplat(self, v: f64) -> Self::D;
    /// `a + b`.
    fn dadd(self, a: Self::D, b: Self::D) -> Self::D;
    /// `a − b`.
    fn dsub(self, a: Self::D, b: Self::D) -> Self::D;
    /// `a · b`.
    fn dmul(self, a: Self::D, b: Self::D) -> Self::D;
    /// `acc + x·x` where `x·x` is exact in f64 (`x` widened from f32): one fused operation
    /// where the tier has it, a product and a sum elsewhere, the same bits either way.
    fn dsquare_add(self, x: Self::D, acc: Self::D) -> Self::D;
    /// `a − k·c` where `k·c` is exact in f64 (the range reduction's first two steps, see
    /// `trig.rs`): one fused operation where the tier has it, a product and a difference
    /// elsewhere, the same bits either way.
    fn dsub_exact(self, a: Self::D, k: Self::D, c: Self::D) -> Self::D;
    /// Rounds two f64 vectors to f32 and concatenates them (`lo` in the low lanes).
    fn narrow(self, lo: Self::D, hi: Self::D) -> Self::F;
    /// [`Simd::quadrant`] on f64 lanes: `k` in the low mantissa bits of each lane of `y`.
    fn dquadrant(self, y: Self::D, s: Self::D, c: Self::D) -> (Self::D, Self::D);

    /// `LANES` f32 from `p`.
    ///
    /// # Safety
    /// `p .. p + LANES` is readable.
    unsafe fn ld_f32(self, p: *const f32) -> Self::F;
    /// `LANES` f32 to `p`.
    ///
    /// # Safety
    /// `p .. p + LANES` is writable.
    unsafe fn st_f32(self, v: Self::F, p: *mut f32);
    /// [`Simd::st_f32`] of [`Simd::narrow`]`(lo, hi)`. The AVX-512 tier stores each converted
    /// half as it comes out rather than join the halves with a shuffle first: the sinusoidal
    /// fill's inner loop is bound by its conversions and that shuffle (`cargo bench --bench
    /// ratio -- sin`; on AVX2 the two ways measured alike).
    ///
    /// # Safety
    /// `p .. p + LANES` is writable.
    #[inline(always)]
    unsafe fn st_narrow_f32(self, lo: Self::D, hi: Self::D, p: *mut f32) {
        // SAFETY: the caller's precondition, passed on.
        unsafe { self.st_f32(self.narrow(lo, hi), p) }
    }
    /// [`Simd::st_f16`] of [`Simd::narrow`]`(lo, hi)`; the AVX-512 tier converts and stores
    /// each half as [`Simd::st_narrow_f32`] does (`cargo bench --bench ratio -- sin`, the
    /// f16 rows).
    ///
    /// # Safety
    /// `p .. p + LANES` is writable.
    #[inline(always)]
    unsafe fn st_narrow_f16(self, lo: Self::D, hi: Self::D, p: *mut half::f16) {
        // SAFETY: the caller's precondition, passed on.
        unsafe { self.st_f16(self.narrow(lo, hi), p) }
    }
    /// Lanes `0 .. LANES/2` from `lo`, lanes `LANES/2 .. LANES` from `hi`: two half vectors
    /// (here through a copy; tiers with [`Simd::HALVES`] load each half directly).
    ///
    /// # Safety
    /// `lo .. lo + LANES/2` and `hi .. hi + LANES/2` are readable.
    #[inline(always)]
    unsafe fn ld_f32_halves(self, lo: *const f32, hi: *const f32) -> Self::F {
        let (h, mut b) = (Self::LANES / 2, [0f32; MAX_LANES]);
        // SAFETY: the caller's precondition; `b` holds `2h = LANES ≤ MAX_LANES` values.
        unsafe {
            core::ptr::copy_nonoverlapping(lo, b.as_mut_ptr(), h);
            core::ptr::copy_nonoverlapping(hi, b.as_mut_ptr().add(h), h);
        }
        self.load(&b)
    }
    /// Lanes `0 .. LANES/2` of `v` to `lo`, lanes `LANES/2 .. LANES` to `hi`.
    ///
    /// # Safety
    /// `lo .. lo + LANES/2` and `hi .. hi + LANES/2` are writable.
    #[inline(always)]
    unsafe fn st_f32_halves(self, v: Self::F, lo: *mut f32, hi: *mut f32) {
        let (h, mut b) = (Self::LANES / 2, [0f32; MAX_LANES]);
        self.store(v, &mut b);
        // SAFETY: the caller's precondition; `b` holds `2h` values.
        unsafe {
            core::ptr::copy_nonoverlapping(b.as_ptr(), lo, h);
            core::ptr::copy_nonoverlapping(b.as_ptr().add(h), hi, h);
        }
    }
    /// Lanes `0 .. f` from `lo`, lanes `f .. LANES` from `hi`: [`Simd::ld_f32_halves`] when
    /// `f` is `LANES/2`, the only split a tier takes unless it has [`Simd::QUARTERS`].
    ///
    /// # Safety
    /// `lo .. lo + f` and `hi .. hi + LANES − f` are readable; `f` is `LANES/2`, or with
    /// `QUARTERS` a quarter or three quarters of `LANES`.
    #[inline(always)]
    unsafe fn ld_f32_split(self, lo: *const f32, hi: *const f32, f: usize) -> Self::F {
        debug_assert!(f == Self::LANES / 2);
        // SAFETY: the caller's precondition with `f = LANES/2`.
        unsafe { self.ld_f32_halves(lo, hi) }
    }
    /// Lanes `0 .. f` of `v` to `lo`, lanes `f .. LANES` to `hi` (see [`Simd::ld_f32_split`]).
    ///
    /// # Safety
    /// `lo .. lo + f` and `hi .. hi + LANES − f` are writable; `f` as for `ld_f32_split`.
    #[inline(always)]
    unsafe fn st_f32_split(self, v: Self::F, lo: *mut f32, hi: *mut f32, f: usize) {
        debug_assert!(f == Self::LANES / 2);
        // SAFETY: the caller's precondition with `f = LANES/2`.
        unsafe { self.st_f32_halves(v, lo, hi) }
    }
    /// `LANES` f16 from `p`, widened exactly.
    ///
    /// # Safety
    /// As [`Simd::ld_f32`].
    unsafe fn ld_f16(self, p: *const half::f16) -> Self::F;
    /// `LANES` lanes rounded to f16 (nearest even, `half`'s bits) and stored to `p`.
    ///
    /// # Safety
    /// As [`Simd::st_f32`].
    unsafe fn st_f16(self, v: Self::F, p: *mut half::f16);
    /// `LANES` bf16 from `p`, widened by moving the bits into place. A signalling NaN may
    /// stay signalling here (unlike `half::bf16::to_f32`, which quiets it): every kernel feeds
    /// loaded values to an arithmetic operation before storing, which quiets it, so outputs
    /// are `half`'s.
    ///
    /// # Safety
    /// As [`Simd::ld_f32`].
    unsafe fn ld_bf16(self, p: *const half::bf16) -> Self::F;
    /// `LANES` lanes rounded to bf16 exactly as `half::bf16::from_f32` and stored to `p`.
    ///
    /// # Safety
    /// As [`Simd::st_f32`].
    unsafe fn st_bf16(self, v: Self::F, p: *mut half::bf16);
    /// Two vectors rounded to bf16 as [`Simd::st_bf16`] and stored to `pa` and `pb`. Here two
    /// stores; a tier whose rounding has a per-vector test (AVX512-BF16's for subnormals,
    /// NEON's for NaNs) makes it once for both, and sets [`Simd::BF16_PAIR`].
    ///
    /// # Safety
    /// As [`Simd::st_f32`], for each of `pa` and `pb`.
    #[inline(always)]
    unsafe fn st_bf16_pair(self, a: Self::F, pa: *mut half::bf16, b: Self::F, pb: *mut half::bf16) {
        // SAFETY: the caller's precondition.
        unsafe {
            self.st_bf16(a, pa);
            self.st_bf16(b, pb);
        }
    }
    /// [`Simd::st_bf16_pair`] of two vectors stored together: `a` at `p`, `b` right after it
    /// (two consecutive vectors of an interleaved head). A tier may convert both as one.
    ///
    /// # Safety
    /// As [`Simd::st_f32`], for `p .. p + 2·LANES`.
    #[inline(always)]
    unsafe fn st_bf16_joined(self, a: Self::F, b: Self::F, p: *mut half::bf16) {
        // SAFETY: the caller's precondition.
        unsafe { self.st_bf16_pair(a, p, b, p.add(Self::LANES)) }
    }
    /// `2·LANES` bf16 from `p`, widened as [`Simd::ld_bf16`]: the values at even offsets
    /// (`p[0], p[2], …`) in the first vector, those at odd offsets in the second. Here through
    /// a copy; a tier with [`Simd::SPLIT_BF16`] widens each 32-bit word's two halves in place.
    ///
    /// # Safety
    /// `p .. p + 2·LANES` is readable.
    #[inline(always)]
    unsafe fn ld_bf16_split(self, p: *const half::bf16) -> (Self::F, Self::F) {
        let l = Self::LANES;
        let (mut e, mut o) = ([half::bf16::ZERO; MAX_LANES], [half::bf16::ZERO; MAX_LANES]);
        for i in 0..l {
            // SAFETY: `2i + 1 < 2·LANES`, readable (the caller's precondition).
            unsafe { (e[i], o[i]) = (*p.add(2 * i), *p.add(2 * i + 1)) };
        }
        (self.load(&e), self.load(&o))
    }
    /// `e` and `o` rounded to bf16 as [`Simd::st_bf16`] and stored interleaved from `p`: `e`'s
    /// lanes at even offsets, `o`'s at odd ones (the inverse of [`Simd::ld_bf16_split`]).
    ///
    /// # Safety
    /// `p .. p + 2·LANES` is writable.
    #[inline(always)]
    unsafe fn st_bf16_merge(self, e: Self::F, o: Self::F, p: *mut half::bf16) {
        let (lo, hi) = self.zip(e, o);
        // SAFETY: the caller's precondition.
        unsafe { self.st_bf16_joined(lo, hi, p) }
    }
    /// The even lanes of `a` then of `b` in the first vector, their odd lanes in the second:
    /// `([a0, a2, …, b0, b2, …], [a1, a3, …, b1, b3, …])`, the inverse of [`Simd::zip`].
    #[inline(always)]
    fn unzip(self, a: Self::F, b: Self::F) -> (Self::F, Self::F) {
        let l = Self::LANES;
        let (mut ab, mut e, mut o) = ([0f32; 2 * MAX_LANES], [0f32; MAX_LANES], [0f32; MAX_LANES]);
        self.store(a, &mut ab[..l]);
        self.store(b, &mut ab[l..]);
        for i in 0..l {
            (e[i], o[i]) = (ab[2 * i], ab[2 * i + 1]);
        }
        (self.load(&e), self.load(&o))
    }
    /// `LANES / 2` f64 from `p`.
    ///
    /// # Safety
    /// `p .. p + LANES / 2` is readable.
    unsafe fn ld_d(self, p: *const f64) -> Self::D;
    /// `LANES / 2` f64 to `p`.
    ///
    /// # Safety
    /// `p .. p + LANES / 2` is writable.
    unsafe fn st_d(self, v: Self::D, p: *mut f64);
    /// `LANES / 2` f32 from `p`, widened to f64 (exact).
    ///
    /// # Safety
    /// `p .. p + LANES / 2` is readable.
    unsafe fn ld_widen(self, p: *const f32) -> Self::D;
    /// `LANES / 2` i32 from `p`, widened to f64 (exact).
    ///
    /// # Safety
    /// `p .. p + LANES / 2` is readable.
    unsafe fn ld_i32_widen(self, p: *const i32) -> Self::D;

    /// `LANES` values of `T` from `p`, as f32 (f16/bf16 widened exactly).
    ///
    /// # Safety
    /// `p .. p + LANES` is readable.
    #[inline(always)]
    unsafe fn ld<T: Element>(self, p: *const T) -> Self::F {
        // SAFETY: the caller's precondition, passed on; `cast` checks that `T` is the type
        // `T::DTYPE` names, so the pointee type is right.
        unsafe {
            match T::DTYPE {
                Dtype::F32 => self.ld_f32(cast::<T, f32>(p)),
                Dtype::F16 => self.ld_f16(cast::<T, half::f16>(p)),
                Dtype::Bf16 => self.ld_bf16(cast::<T, half::bf16>(p)),
            }
        }
    }

    /// Stores `LANES` lanes to `p` as `T`, rounding once to nearest even.
    ///
    /// # Safety
    /// `p .. p + LANES` is writable.
    #[inline(always)]
    unsafe fn st<T: Element>(self, v: Self::F, p: *mut T) {
        // SAFETY: as in `ld`.
        unsafe {
            match T::DTYPE {
                Dtype::F32 => self.st_f32(v, cast::<T, f32>(p).cast_mut()),
                Dtype::F16 => self.st_f16(v, cast::<T, half::f16>(p).cast_mut()),
                Dtype::Bf16 => self.st_bf16(v, cast::<T, half::bf16>(p).cast_mut()),
            }
        }
    }

    /// [`Simd::st`] of [`Simd::narrow`]`(lo, hi)` to `p` (for f32 and f16,
    /// [`Simd::st_narrow_f32`] and [`Simd::st_narrow_f16`]).
    ///
    /// # Safety
    /// `p .. p + LANES` is writable.
    #[inline(always)]
    unsafe fn st_narrow<T: Element>(self, lo: Self::D, hi: Self::D, p: *mut T) {
        // SAFETY: the caller's precondition, passed on; `cast` checks that `T` is the type
        // `T::DTYPE` names.
        unsafe {
            match T::DTYPE {
                Dtype::F32 => self.st_narrow_f32(lo, hi, cast::<T, f32>(p).cast_mut()),
                Dtype::F16 => self.st_narrow_f16(lo, hi, cast::<T, half::f16>(p).cast_mut()),
                _ => self.st(self.narrow(lo, hi), p),
            }
        }
    }

    /// [`Simd::st`] of `a` to `pa` and `b` to `pb`: for bf16 on a tier with
    /// [`Simd::BF16_PAIR`], [`Simd::st_bf16_pair`]. Kernels producing two vectors at once (a
    /// rotate_half pair, two interleaved vectors) call it so that such a tier shares work
    /// between the two roundings.
    ///
    /// # Safety
    /// `pa .. pa + LANES` and `pb .. pb + LANES` are writable.
    #[inline(always)]
    unsafe fn st2<T: Element>(self, a: Self::F, pa: *mut T, b: Self::F, pb: *mut T) {
        // SAFETY: as in `st`.
        unsafe {
            match T::DTYPE {
                Dtype::Bf16 if Self::BF16_PAIR => self.st_bf16_pair(
                    a,
                    cast::<T, half::bf16>(pa).cast_mut(),
                    b,
                    cast::<T, half::bf16>(pb).cast_mut(),
                ),
                _ => {
                    self.st(a, pa);
                    self.st(b, pb);
                }
            }
        }
    }

    /// [`Simd::st2`] of two vectors stored together, `a` at `p` and `b` right after it: for
    /// bf16 on a tier with [`Simd::BF16_PAIR`], [`Simd::st_bf16_joined`]. (A method of its
    /// own, not a test of the two pointers in `st2`: with both paths in every kernel, LLVM
    /// kept the resident rotate_half loop rolled, its table reloaded from the stack; see
    /// `benches/LOG.md`, 2026-12-03 night.)
    ///
    /// # Safety
    /// `p .. p + 2·LANES` is writable.
    #[inline(always)]
    unsafe fn st2_joined<T: Element>(self, a: Self::F, b: Self::F, p: *mut T) {
        // SAFETY: as in `st`.
        unsafe {
            match T::DTYPE {
                Dtype::Bf16 if Self::BF16_PAIR => {
                    self.st_bf16_joined(a, b, cast::<T, half::bf16>(p).cast_mut())
                }
                _ => {
                    self.st(a, p);
                    self.st(b, p.add(Self::LANES));
                }
            }
        }
    }

    /// [`Simd::ld`] from `src[..LANES]` (bounds-checked).
    #[inline(always)]
    fn load<T: Element>(self, src: &[T]) -> Self::F {
        let src = &src[..Self::LANES];
        // SAFETY: `src` has exactly `LANES` readable elements.
        unsafe { self.ld(src.as_ptr()) }
    }

    /// [`Simd::st`] to `dst[..LANES]` (bounds-checked).
    #[inline(always)]
    fn store<T: Element>(self, v: Self::F, dst: &mut [T]) {
        let dst = &mut dst[..Self::LANES];
        // SAFETY: `dst` has exactly `LANES` writable elements.
        unsafe { self.st(v, dst.as_mut_ptr()) }
    }

    /// [`Simd::ld_d`] from `src[..LANES / 2]` (bounds-checked).
    #[inline(always)]
    fn load_d(self, src: &[f64]) -> Self::D {
        let src = &src[..Self::LANES / 2];
        // SAFETY: `src` has exactly `LANES / 2` readable elements.
        unsafe { self.ld_d(src.as_ptr()) }
    }

    /// [`Simd::st_d`] to `dst[..LANES / 2]` (bounds-checked).
    #[inline(always)]
    fn store_d(self, v: Self::D, dst: &mut [f64]) {
        let dst = &mut dst[..Self::LANES / 2];
        // SAFETY: `dst` has exactly `LANES / 2` writable elements.
        unsafe { self.st_d(v, dst.as_mut_ptr()) }
    }

    /// [`Simd::ld_widen`] from `src[..LANES / 2]` (bounds-checked).
    #[inline(always)]
    fn load_widen(self, src: &[f32]) -> Self::D {
        let src = &src[..Self::LANES / 2];
        // SAFETY: `src` has exactly `LANES / 2` readable elements.
        unsafe { self.ld_widen(src.as_ptr()) }
    }

    /// [`Simd::ld_i32_widen`] from `src[..LANES / 2]` (bounds-checked).
    #[inline(always)]
    fn load_i32_widen(self, src: &[i32]) -> Self::D {
        let src = &src[..Self::LANES / 2];
        // SAFETY: `src` has exactly `LANES / 2` readable elements.
        unsafe { self.ld_i32_widen(src.as_ptr()) }
    }

    /// `v` rounded to `T` and widened back (HF's eager intermediate roundings).
    #[inline(always)]
    fn round_to<T: Element>(self, v: Self::F) -> Self::F {
        match T::DTYPE {
            Dtype::F32 => v,
            Dtype::F16 => self.round_f16(v),
            Dtype::Bf16 => self.round_bf16(v),
        }
    }
}

/// `p` as a pointer to `U`, which the caller matched `T::DTYPE` against: `Element` is sealed
/// to exactly three types, so `T` is `U`. Checked, not assumed; the check folds away.
#[inline(always)]
fn cast<T: 'static, U: 'static>(p: *const T) -> *const U {
    assert!(core::any::TypeId::of::<T>() == core::any::TypeId::of::<U>());
    p.cast()
}

/// `x` as a slice of `U`, which `T` is: both are `Element`s with the same dtype, and
/// `Element` is sealed to exactly three types, one per dtype. Lets a generic entry point hand
/// its buffer to a function written for one concrete dtype (see `rope::rotate_same`).
#[inline(always)]
pub(crate) fn retype<T: Element, U: Element>(x: &mut [T]) -> &mut [U] {
    assert!(T::DTYPE == U::DTYPE);
    // SAFETY: `T` and `U` have the same dtype, so they are the same type (the sealed
    // `Element` has one type per dtype): same size, alignment and validity; the length and
    // the borrow carry over unchanged.
    unsafe { core::slice::from_raw_parts_mut(x.as_mut_ptr().cast::<U>(), x.len()) }
}

/// Copies `src` into the front of a zeroed `MAX_LANES`-wide buffer: vector tails run the same
/// code on padding, so every element gets the same operations as in a full vector.
#[inline(always)]
pub(crate) fn pad<T: Copy + Default>(src: &[T]) -> [T; MAX_LANES] {
    let mut buf = [T::default(); MAX_LANES];
    buf[..src.len()].copy_from_slice(src);
    buf
}

/// Runs `f` in a stack frame of its own ([`apart!`], unoptimised builds only). One function
/// serves every tier: unoptimised, a closure is never inlined, so its code runs without the
/// features of whatever calls it (a tier's `#[target_feature]` entry would add nothing), and
/// the intrinsics it reaches are calls to functions that carry their own features.
#[cfg(posenc_unoptimized)]
#[inline(never)]
pub(crate) fn in_own_frame<R>(f: impl FnOnce() -> R) -> R {
    f()
}

/// `$body`, in unoptimised builds in a stack frame of its own ([`in_own_frame`]); elsewhere
/// inlined where it stands.
///
/// Why: built without optimisation (`cargo build` and `cargo test` by default), LLVM inlines
/// only `#[inline(always)]` functions and keeps every local of every inlined copy in a stack
/// slot of its own for the whole function. A RoPE kernel inlines a head loop per table size,
/// split, head grouping and dtype path, and its entry function's frame grew to megabytes (it
/// overflowed a 2 MiB test thread). With each loop and each angle block in a frame of its
/// own, a call's stack holds one of them at a time. `posenc_unoptimized` is set by
/// `build.rs` from the opt-level; optimised builds, those with debug assertions included, keep
/// every loop inlined in the tier's entry function, where `.ci/check-asm.sh` checks it.
macro_rules! apart {
    ($body:expr) => {{
        #[cfg(posenc_unoptimized)]
        let r = $crate::engine::vector::in_own_frame(|| $body);
        #[cfg(not(posenc_unoptimized))]
        let r = $body;
        r
    }};
}
pub(crate) use apart;

/// An operation written once for every tier: `run` is instantiated with each tier's token
/// inside that tier's `#[target_feature]` entry function (see `dispatch.rs`), so it and
/// everything it calls must be `#[inline(always)]`.
pub(crate) trait Kernel {
    /// What the operation returns.
    type Output;
    /// Whether the operation rounds to bf16, so that a tier with a native bf16 conversion
    /// runs it with that conversion (a separate instantiation only for such kernels).
    #[cfg_attr(
        any(
            not(any(target_arch = "x86_64", target_arch = "aarch64")),
            posenc_portable_only
        ),
        allow(dead_code)
    )] // only x86-64 and aarch64 have such tiers
    const ROUNDS_TO_BF16: bool = false;
    /// Runs the operation with the vectors of `s`.
    fn run<S: Simd>(self, s: S) -> Self::Output;
}

#[cfg(test)]
mod tests {
    //! [`Simd::ld_bf16_split`], [`Simd::st_bf16_merge`], [`Simd::st_bf16_pair`] and
    //! [`Simd::unzip`] on every backend
    //! this CPU runs, inside each tier's entry function (a kernel that rounds to bf16, so the
    //! AVX512-BF16 / FEAT_BF16 entries run it where the CPU has them), against plain loops and
    //! `half`.

    use super::*;
    use crate::engine::dispatch::dispatch;
    use crate::types::Backend;

    const N: usize = 2 * MAX_LANES;

    /// One vector's worth of each method: `split` of `src`, `merge` of `e`, `o`, `unzip` of
    /// `a`, `b` (the first `2·LANES` values of each are used).
    struct Split<'a> {
        src: &'a [half::bf16; N],
        f: &'a [f32; N],
    }

    struct Out {
        lanes: usize,
        split: [f32; N],
        merge: [half::bf16; N],
        pair: [half::bf16; N],
        unzip: [f32; N],
    }

    impl Kernel for Split<'_> {
        type Output = Out;
        const ROUNDS_TO_BF16: bool = true;
        #[inline(always)]
        fn run<S: Simd>(self, s: S) -> Out {
            let l = S::LANES;
            let mut out = Out {
                lanes: l,
                split: [0.0; N],
                merge: [half::bf16::ZERO; N],
                pair: [half::bf16::ZERO; N],
                unzip: [0.0; N],
            };
            // SAFETY: every pointer addresses `2·LANES ≤ N` values of its array.
            let (e, o) = unsafe { s.ld_bf16_split(self.src.as_ptr()) };
            s.store(e, &mut out.split[..l]);
            s.store(o, &mut out.split[l..]);
            let (a, b) = (s.load(&self.f[..l]), s.load(&self.f[l..]));
            // SAFETY: as above.
            unsafe { s.st_bf16_merge(a, b, out.merge.as_mut_ptr()) };
            // SAFETY: as above (`pair[..l]` and `pair[l..2l]`).
            unsafe {
                let p = out.pair.as_mut_ptr();
                s.st_bf16_pair(a, p, b, p.add(l));
            }
            let (ue, uo) = s.unzip(a, b);
            s.store(ue, &mut out.unzip[..l]);
            s.store(uo, &mut out.unzip[l..]);
            out
        }
    }

    /// f32 patterns for the rounding: ties and their neighbours, subnormals (flushed by the
    /// native conversions), ±0, ±inf, NaNs with payloads, the overflow threshold, ordinary
    /// values; `(patterns, count)`.
    fn patterns() -> ([u32; 8192], usize) {
        let (mut v, mut n) = ([0u32; 8192], 0);
        let mut push = |u: u32| {
            v[n] = u;
            n += 1;
        };
        for base in [
            0u32,
            0x0000_8000,
            0x007f_ffff,
            0x0080_0000,
            0x3f80_8000,
            0x7f7f_ffff,
            0x7f80_0000,
            0x7fc0_0001,
            0x7f80_0001,
        ] {
            for d in 0..64u32 {
                for sign in [0, 0x8000_0000] {
                    push(base.wrapping_add(d) | sign);
                    push(base.wrapping_sub(d) | sign);
                    push(base.wrapping_add(d << 10) | sign);
                }
            }
        }
        for u in (0..(1u64 << 32)).step_by(1_000_003) {
            push(u as u32);
        }
        (v, n)
    }

    #[test]
    fn split_merge_pair_and_unzip_on_every_backend() {
        let (pats, n) = patterns();
        let pats = &pats[..n];
        let mut seen = 0;
        for backend in Backend::available() {
            for chunk in pats.chunks(N) {
                let mut f = [0f32; N];
                for (f, &u) in f.iter_mut().zip(chunk) {
                    *f = f32::from_bits(u);
                }
                let src: [half::bf16; N] = core::array::from_fn(|i| {
                    half::bf16::from_bits((chunk[i % chunk.len()] >> 7) as u16)
                });
                let out = dispatch(backend, Split { src: &src, f: &f });
                let l = out.lanes;
                for i in 0..l {
                    for (j, got) in [(2 * i, out.split[i]), (2 * i + 1, out.split[l + i])] {
                        assert_eq!(
                            got.to_bits(),
                            (src[j].to_bits() as u32) << 16,
                            "{backend:?} split {j}"
                        );
                    }
                    assert_eq!(
                        out.unzip[i].to_bits(),
                        f[2 * i].to_bits(),
                        "{backend:?} unzip even {i}"
                    );
                    assert_eq!(
                        out.unzip[l + i].to_bits(),
                        f[2 * i + 1].to_bits(),
                        "{backend:?} unzip odd {i}"
                    );
                    for j in [i, l + i] {
                        assert_eq!(
                            out.pair[j].to_bits(),
                            half::bf16::from_f32(f[j]).to_bits(),
                            "{backend:?} pair of {:#010x}",
                            f[j].to_bits()
                        );
                    }
                    for (j, v) in [(2 * i, f[i]), (2 * i + 1, f[l + i])] {
                        let want = half::bf16::from_f32(v).to_bits();
                        assert_eq!(
                            out.merge[j].to_bits(),
                            want,
                            "{backend:?} merge of {:#010x}",
                            v.to_bits()
                        );
                    }
                }
            }
            seen += 1;
        }
        assert!(seen >= 2, "at least Scalar and Portable");
    }
}
