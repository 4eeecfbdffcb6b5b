//! The backward pass of RoPE: the vector-Jacobian product of each rotation posenc applies.
//!
//! A forward call maps each pair `(a, b)` to `m·R(θ)·(a, b)` (`m` the attention factor); its
//! Jacobian is that matrix, so the VJP of an upstream gradient `g` is `m·R(θ)ᵀ·g = m·R(−θ)·g`:
//! the same engine call with cos scaled by `m` and sin by `−m`. Channels outside the rotary
//! window pass through (identity), so their gradient is left as it is. Everything the forward
//! takes (positions of any integer type or a [`Table`](crate::Table), views, axes) the
//! backward takes too, and it rotates with the same angles, bit for bit.

use crate::angles::{Angles, Position};
use crate::element::Element;
use crate::engine::job::Target;
use crate::engine::pairs;
use crate::error::Error;
use crate::rope::Rope;
use crate::types::View;
use crate::validate::check_rows;
use crate::view;

impl Rope {
    /// The gradient with respect to the input of [`Rope::apply`]: `g` (`tokens × n_heads ×
    /// head_dim`, the gradient of the output) becomes, in place, the gradient of the input,
    /// `m·R(θ)ᵀ·g`. Unlike [`Rope::apply_inverse`] (which divides by `m`) this is the
    /// vector-Jacobian product for every scaling, attention factor included.
    ///
    /// ```
    /// use posenc::{Layout, Rope, RopeConfig, Scaling, Yarn};
    /// let cfg = RopeConfig::new(8, 1e4, Layout::RotateHalf)
    ///     .scaling(Scaling::Yarn(Yarn::new(4.0, 4096)));
    /// let rope = Rope::new(&cfg).unwrap();
    /// // ⟨J·v, w⟩ = ⟨v, Jᵀ·w⟩
    /// let v: Vec<f32> = (0..8).map(|i| i as f32 - 3.5).collect();
    /// let w: Vec<f32> = (0..8).map(|i| (i * i) as f32 * 0.1).collect();
    /// let (mut jv, mut jtw) = (v.clone(), w.clone());
    /// rope.apply(&mut jv, 1, &[77]).unwrap();
    /// rope.apply_backward(&mut jtw, 1, &[77]).unwrap();
    /// let dot = |a: &[f32], b: &[f32]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>();
    /// assert!((dot(&jv, &w) - dot(&v, &jtw)).abs() < 1e-4);
    /// ```
    pub fn apply_backward<'a, T: Element>(
        &self,
        g: &mut [T],
        n_heads: usize,
        at: impl Angles<'a>,
    ) -> Result<(), Error> {
        let src = at.source();
        check_rows("g", g.len(), n_heads, self.head_dim(), src.tokens())?;
        self.check_source(&src)?;
        let views = [self.contiguous(n_heads)];
        let m = self.attention_factor();
        self.launch(&mut [Target::in_place(g, &views)], src, m, -m);
        Ok(())
    }

    /// The backward of [`Rope::apply_qk`]: both gradients in place, one angle source.
    ///
    /// ```
    /// use posenc::{Layout, Rope, RopeConfig};
    /// let rope = Rope::new(&RopeConfig::new(8, 1e4, Layout::Interleaved)).unwrap();
    /// let (mut gq, mut gk) = (vec![0.5f32; 4 * 8], vec![0.5f32; 2 * 8]);
    /// rope.apply_qk_backward(&mut gq, 4, &mut gk, 2, &[3]).unwrap();
    /// let mut g = vec![0.5f32; 2 * 8];
    /// rope.apply_backward(&mut g, 2, &[3]).unwrap();
    /// assert_eq!(gk, g);
    /// ```
    pub fn apply_qk_backward<'a, T: Element>(
        &self,
        gq: &mut [T],
        n_q_heads: usize,
        gk: &mut [T],
        n_kv_heads: usize,
        at: impl Angles<'a>,
    ) -> Result<(), Error> {
        let src = at.source();
        self.check_qk(gq.len(), n_q_heads, gk.len(), n_kv_heads, src.tokens())?;
        self.check_source(&src)?;
        let (qs, ks) = ([self.contiguous(n_q_heads)], [self.contiguous(n_kv_heads)]);
        let m = self.attention_factor();
        let mut targets = [Target::in_place(gq, &qs), Target::in_place(gk, &ks)];
        self.launch(&mut targets, src, m, -m);
        Ok(())
    }

    /// The backward of [`Rope::apply_views`]: the gradients of the heads `views` describes
    /// (validated as the forward validates them), in place.
    ///
    /// ```
    /// use posenc::{Layout, Rope, RopeConfig, View};
    /// let rope = Rope::new(&RopeConfig::new(8, 1e4, Layout::RotateHalf)).unwrap();
    /// let mut g = vec![0.25f32; 3 * 2 * 8];
    /// rope.apply_views_backward(&mut g, &[View::head_major(2, 3, 8)], &[0, 1, 2]).unwrap();
    /// ```
    pub fn apply_views_backward<'a, T: Element>(
        &self,
        g: &mut [T],
        views: &[View],
        at: impl Angles<'a>,
    ) -> Result<(), Error> {
        let src = at.source();
        view::validate(views, g.len(), self.head_dim(), src.tokens())?;
        self.check_source(&src)?;
        if src.tokens() == 0 {
            return Ok(());
        }
        let m = self.attention_factor();
        self.launch(&mut [Target::in_place(g, views)], src, m, -m);
        Ok(())
    }

    /// The backward of [`Rope::apply_axes`] (M-RoPE, 2-D vision): each pair's transposed
    /// rotation at its axis's position, times the attention factor.
    ///
    /// ```
    /// use posenc::{Axes, Layout, Rope, RopeConfig};
    /// let cfg = RopeConfig::new(16, 1e4, Layout::RotateHalf).axes(Axes::MRope { sections: [2, 3, 3] });
    /// let rope = Rope::new(&cfg).unwrap();
    /// let (mut a, mut b) = (vec![0.5f32; 16], vec![0.5f32; 16]);
    /// rope.apply_axes_backward(&mut a, 1, &[[9, 9, 9]]).unwrap();
    /// rope.apply_backward(&mut b, 1, &[9]).unwrap();
    /// assert_eq!(a, b);
    /// ```
    pub fn apply_axes_backward<T: Element, P: Position, const A: usize>(
        &self,
        g: &mut [T],
        n_heads: usize,
        positions: &[[P; A]],
    ) -> Result<(), Error> {
        let n_axes = self.check_axes(A)?;
        check_rows("g", g.len(), n_heads, self.head_dim(), positions.len())?;
        let flat = P::ints(positions.as_flattened());
        flat.check("positions", self.position_limit())?;
        let views = [self.contiguous(n_heads)];
        let targets = &mut [Target::in_place(g, &views)];
        let m = self.attention_factor();
        self.for_positions(flat, Some(n_axes), |first, tokens, angles| {
            let job = self.job(first, tokens, angles.scaled(m, -m));
            pairs::rotate(self.backend(), targets, job);
        });
        Ok(())
    }
}
