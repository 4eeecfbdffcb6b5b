//! `RotaryEmbedding` against an f64 rotation by exact angles `p · ω` (ω the rope's f32
//! `inv_freq`), on presets of every layout and partial rotary kind, CPU f32/f16/bf16 (posenc
//! in place) and f64 (candle_nn's kernels from posenc's tables).

mod common;

use candle_core::{DType, Result, Tensor};
use common::{EPS32, Rng, randn, unit_roundoff, values};
use posenc::{Layout, Rope, presets};
use posenc_candle::RotaryEmbedding;

/// The ropes checked: full rotate-half, partial interleaved, partial rotate-half, an
/// interleaved YaRN one and a YaRN one with an attention factor.
fn ropes() -> Vec<(&'static str, Rope)> {
    vec![
        ("llama3", presets::LLAMA_3_8B.rope().unwrap()),
        ("gpt-j", presets::GPT_J_6B.rope().unwrap()),
        ("gpt-neox", presets::GPT_NEOX_20B.rope().unwrap()),
        ("deepseek-v3", presets::DEEPSEEK_V3.rope().unwrap()),
        ("qwen2.5-yarn", presets::QWEN2_5_7B_YARN.rope().unwrap()),
    ]
}

/// Checks `y` (rotated from `x`, both `(b, h, t, d)`) against the f64 rotation by exact
/// angles: within DESIGN.md's bound (sin/cos within 2.4e-7, rotation `2·eps32·(|a·c|+|b·s|)`,
/// the attention factor's multiply) plus one rounding to the dtype; channels outside the
/// rotary window bit-identical.
fn check(rope: &Rope, x: &Tensor, y: &Tensor, pos: &[i32], what: &str) -> Result<()> {
    let (b, h, t, d) = x.dims4()?;
    let (xv, yv) = (values(x)?, values(y)?);
    let (rd, off, m) = (
        rope.rotary_dim(),
        rope.rotary_offset(),
        rope.attention_factor() as f64,
    );
    let freq = rope.inv_freq();
    let (u, tiny) = unit_roundoff(x.dtype());
    // f32 and f64 store no rounding of their own here (f64: candle_nn's f64 arithmetic on
    // f32 tables, which the 2.4e-7 + eps32 table term covers).
    let (u, tiny) = if matches!(x.dtype(), DType::F32 | DType::F64) {
        (0.0, 0.0)
    } else {
        (u, tiny)
    };
    let table_err = 2.4e-7 + if x.dtype() == DType::F64 { EPS32 } else { 0.0 };
    for bi in 0..b {
        for hi in 0..h {
            for ti in 0..t {
                let p = if pos.len() == t {
                    pos[ti]
                } else {
                    pos[bi * t + ti]
                } as f64;
                let base = ((bi * h + hi) * t + ti) * d;
                for c in (0..off).chain(off + rd..d) {
                    assert_eq!(
                        yv[base + c],
                        xv[base + c],
                        "{what}: channel {c} outside the window"
                    );
                }
                for (i, &w) in freq.iter().enumerate().take(rd / 2) {
                    let (i1, i2) = match rope.layout() {
                        Layout::Interleaved => (base + off + 2 * i, base + off + 2 * i + 1),
                        _ => (base + off + i, base + off + i + rd / 2),
                    };
                    let theta = p * w as f64;
                    let (sn, cs) = theta.sin_cos();
                    let (a, bb) = (xv[i1], xv[i2]);
                    for (k, exact, mag) in [
                        (i1, m * (a * cs - bb * sn), (a * cs).abs() + (bb * sn).abs()),
                        (i2, m * (a * sn + bb * cs), (a * sn).abs() + (bb * cs).abs()),
                    ] {
                        let bound = m * (table_err * (a.abs() + bb.abs()) + 2.0 * EPS32 * mag)
                            + 2.0 * EPS32 * exact.abs()
                            + u * (exact.abs() + m * mag * 4.0 * EPS32)
                            + tiny;
                        assert!(
                            (yv[k] - exact).abs() <= bound,
                            "{what}: p {p} pair {i}: {} vs exact {exact} (bound {bound})",
                            yv[k]
                        );
                    }
                }
            }
        }
    }
    Ok(())
}

#[test]
fn exact_angles_at_long_and_short_positions_every_dtype() -> Result<()> {
    let mut rng = Rng::new(21);
    for (name, rope) in ropes() {
        let rot = RotaryEmbedding::new(rope);
        let d = rope.head_dim();
        for dtype in [DType::F32, DType::F16, DType::BF16, DType::F64] {
            for (b, h, t) in [(1, 3, 1), (2, 2, 5)] {
                let x = randn(&mut rng, &[b, h, t, d], dtype)?;
                for start in [0, 99_990, 1 << 20] {
                    let what = format!("{name} {dtype:?} b{b} h{h} t{t} from {start}");
                    let pos: Vec<i32> = (start..start + t as i32).collect();
                    let y = rot.apply(&x, &pos)?;
                    check(&rope, &x, &y, &pos, &what)?;
                    // Per batch entry positions (b · t of them).
                    let pos_b: Vec<i32> = (0..(b * t) as i32).map(|i| start + 7 * i).collect();
                    let y = rot.apply(&x, &pos_b)?;
                    check(&rope, &x, &y, &pos_b, &format!("{what} per batch"))?;
                }
            }
        }
    }
    Ok(())
}

#[test]
fn in_place_copy_and_token_major_agree() -> Result<()> {
    let mut rng = Rng::new(23);
    for (name, rope) in ropes() {
        let rot = RotaryEmbedding::new(rope);
        let d = rope.head_dim();
        for dtype in [DType::F32, DType::F16, DType::BF16, DType::F64] {
            let x = randn(&mut rng, &[2, 3, 4, d], dtype)?;
            let before = values(&x)?;
            for pos in [
                vec![5, 6, 7, 8],
                (0..8).map(|i| 1000 * i).collect::<Vec<i32>>(),
            ] {
                let y = rot.apply(&x, &pos)?;
                assert_eq!(
                    values(&x)?,
                    before,
                    "{name} {dtype:?}: apply must not touch x"
                );
                // In place on a fresh copy: the same values, in the copy's own storage.
                let z = x.copy()?;
                rot.apply_inplace(&z, &pos)?;
                assert_eq!(values(&z)?, values(&y)?, "{name} {dtype:?} in place");
                // Token-major input: the same rotation, transposed.
                let x_thd = x.transpose(1, 2)?.contiguous()?;
                let w = rot.apply_thd(&x_thd, &pos)?.transpose(1, 2)?;
                assert_eq!(values(&w)?, values(&y)?, "{name} {dtype:?} thd");
                let w2 = x_thd.copy()?;
                rot.apply_thd_inplace(&w2, &pos)?;
                assert_eq!(
                    values(&w2.transpose(1, 2)?)?,
                    values(&y)?,
                    "{name} {dtype:?} thd in place"
                );
                // A non-contiguous input is copied first by `apply`.
                let y2 = rot.apply(&x_thd.transpose(1, 2)?, &pos)?;
                assert_eq!(values(&y2)?, values(&y)?, "{name} {dtype:?} view");
            }
        }
    }
    Ok(())
}

#[test]
fn forward_rotates_q_and_k_from_index_pos() -> Result<()> {
    let mut rng = Rng::new(29);
    let rope = presets::LLAMA_3_8B.rope().unwrap();
    let rot = RotaryEmbedding::new(rope);
    let q = randn(&mut rng, &[1, 4, 3, 128], DType::BF16)?;
    let k = randn(&mut rng, &[1, 2, 3, 128], DType::BF16)?;
    let (q2, k2) = rot.forward(&q, &k, 70_000)?;
    check(&rope, &q, &q2, &[70_000, 70_001, 70_002], "forward q")?;
    check(&rope, &k, &k2, &[70_000, 70_001, 70_002], "forward k")?;
    assert!(
        rot.forward(&q, &k, i32::MAX as usize).is_err(),
        "positions past i32"
    );
    Ok(())
}

#[test]
fn bad_input_is_an_error_and_leaves_the_tensor_alone() -> Result<()> {
    let mut rng = Rng::new(31);
    let rot = RotaryEmbedding::new(presets::LLAMA_3_8B.rope().unwrap());
    for dtype in [DType::F32, DType::F16, DType::BF16, DType::F64] {
        let x = randn(&mut rng, &[2, 3, 4, 128], dtype)?;
        let before = values(&x)?;
        // head_dim 64 ≠ 128, positions neither t nor b·t, not 4-D, a view in place.
        let small = randn(&mut rng, &[2, 3, 4, 64], dtype)?;
        assert!(rot.apply_inplace(&small, &[0, 1, 2, 3]).is_err());
        assert!(rot.apply_inplace(&x, &[0, 1, 2]).is_err());
        assert!(rot.apply_inplace(&x, &[0; 9]).is_err());
        assert!(
            rot.apply_thd_inplace(&x, &[0, 1, 2, 3]).is_err(),
            "t is 3 in thd order"
        );
        assert!(rot.apply_inplace(&x.flatten(0, 1)?, &[0, 1, 2, 3]).is_err());
        assert!(rot.apply_inplace(&x.transpose(1, 2)?, &[0, 1, 2]).is_err());
        assert_eq!(values(&x)?, before, "{dtype:?}: nothing written on error");
    }
    // Tensors that are empty are fine (nothing to do).
    let e = Tensor::zeros((0, 3, 4, 128), DType::F32, &candle_core::Device::Cpu)?;
    rot.apply_inplace(&e, &[0, 1, 2, 3])?;
    Ok(())
}

/// `from_hf_config` on published configs: each layer's rope is the one posenc's loader reads
/// (itself checked against HF elsewhere), and it rotates within the exact-angle bound; a NoPE
/// layer has none, and a model that never rotates is an error.
#[test]
fn from_hf_config_gives_each_layers_rope() -> Result<()> {
    let config = |name: &str| {
        let path = format!(
            "{}/../tests/data/configs/{name}.json",
            env!("CARGO_MANIFEST_DIR")
        );
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
    };
    let llama = RotaryEmbedding::from_hf_config(&config("llama-3.1-8b"), 5)?.unwrap();
    assert_eq!(*llama.rope(), presets::LLAMA_3_1_8B.rope().unwrap());
    let mut rng = Rng::new(7);
    let x = randn(&mut rng, &[1, 4, 3, 128], DType::F32)?;
    let pos = [0, 4095, 131_000];
    check(
        llama.rope(),
        &x,
        &llama.apply(&x, &pos)?,
        &pos,
        "llama-3.1 from config.json",
    )?;
    // Gemma 3: layer 5 is global (θ 1e6, linear ×8), layer 0 local (θ 1e4).
    let gemma = config("gemma-3-4b-it");
    let global = RotaryEmbedding::from_hf_config(&gemma, 5)?.unwrap();
    let local = RotaryEmbedding::from_hf_config(&gemma, 0)?.unwrap();
    assert_eq!(global.rope().inv_freq()[0], 0.125);
    assert_eq!(local.rope().inv_freq()[0], 1.0);
    // Llama 4's every fourth layer runs without rope.
    let scout = r#"{"model_type": "llama4_text", "head_dim": 128, "rope_theta": 500000.0}"#;
    assert!(RotaryEmbedding::from_hf_config(scout, 3)?.is_none());
    assert!(RotaryEmbedding::from_hf_config(scout, 4)?.is_some());
    let gpt2 = r#"{"model_type": "gpt2", "n_embd": 768, "n_head": 12}"#;
    let err = RotaryEmbedding::from_hf_config(gpt2, 0)
        .unwrap_err()
        .to_string();
    assert!(err.contains("model_type"), "{err}");
    Ok(())
}
