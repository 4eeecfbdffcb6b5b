//! GGUF: `load::rope_from_gguf` with llama.cpp's keys, layouts and semantics, and (feature
//! `gguf`) `load::GgufHeader` on headers written byte by byte here. Expected values come from
//! the presets (checked against HF elsewhere) or from llama.cpp's formulas recomputed here in
//! f64; never from the code under test.

use posenc::load::{GgufArray, GgufErrorKind, GgufValue, rope_from_gguf};
use posenc::{Axes, Layout, Rope, presets};

type Meta = Vec<(String, GgufValue<'static>)>;

fn meta(arch: &'static str, kv: &[(&str, GgufValue<'static>)]) -> Meta {
    let mut m = vec![("general.architecture".to_owned(), GgufValue::Str(arch))];
    for (k, v) in kv {
        m.push((format!("{arch}.{k}"), *v));
    }
    m
}

fn build(m: &Meta, freqs: Option<&[f32]>) -> Result<Rope, posenc::load::GgufError> {
    rope_from_gguf(
        |k| m.iter().find(|(key, _)| key == k).map(|(_, v)| *v),
        freqs,
    )
}

fn rel_close(a: &[f32], b: &[f32], tol: f64, what: &str) {
    assert_eq!(a.len(), b.len(), "{what}: lengths");
    for (j, (&x, &y)) in a.iter().zip(b).enumerate() {
        let r = ((x as f64 - y as f64) / y as f64).abs();
        assert!(r <= tol, "{what}: pair {j}: {x} vs {y} (rel {r:e})");
    }
}

/// ggml's YaRN frequencies (correction dims, ramp, mix), recomputed in f64.
fn ggml_yarn(
    d: usize,
    base: f64,
    s: f64,
    n_ctx_orig: f64,
    beta_fast: f64,
    beta_slow: f64,
) -> Vec<f32> {
    let c = |n: f64| {
        d as f64 * (n_ctx_orig / (n * 2.0 * std::f64::consts::PI)).ln() / (2.0 * base.ln())
    };
    let lo = c(beta_fast).floor().max(0.0);
    let hi = c(beta_slow).ceil().min(d as f64 - 1.0);
    (0..d / 2)
        .map(|j| {
            let w = base.powf(-(2.0 * j as f64) / d as f64);
            let y = (j as f64 - lo) / (hi - lo).max(0.001);
            let r = 1.0 - y.clamp(0.0, 1.0);
            (w / s * (1.0 - r) + w * r) as f32
        })
        .collect()
}

#[test]
fn llama_is_interleaved_and_rope_freqs_divide() {
    // Llama 3.1 8B as llama.cpp's converter writes it: no scaling keys, llama3 smoothing as a
    // `rope_freqs` tensor of divisors (convert_hf_to_gguf.py's formula, in f64 here).
    let (base, d, factor, low, high, old) = (500_000.0f64, 128usize, 8.0, 1.0, 4.0, 8192.0);
    let freqs: Vec<f32> = (0..d / 2)
        .map(|j| {
            let w = 1.0 / base.powf(2.0 * j as f64 / d as f64);
            let wavelen = 2.0 * std::f64::consts::PI / w;
            if wavelen < old / high {
                1.0
            } else if wavelen > old / low {
                factor as f32
            } else {
                let smooth = (old / wavelen - low) / (high - low);
                (1.0 / ((1.0 - smooth) / factor + smooth)) as f32
            }
        })
        .collect();
    let m = meta(
        "llama",
        &[
            ("context_length", GgufValue::U32(131072)),
            ("embedding_length", GgufValue::U32(4096)),
            ("attention.head_count", GgufValue::U32(32)),
            ("rope.dimension_count", GgufValue::U32(128)),
            ("rope.freq_base", GgufValue::F32(500_000.0)),
        ],
    );
    let rope = build(&m, Some(&freqs)).unwrap();
    assert_eq!((rope.head_dim(), rope.rotary_dim()), (128, 128));
    assert_eq!(rope.layout(), Layout::Interleaved); // NORM: the converter permuted Q/K
    assert_eq!(rope.attention_factor(), 1.0);
    let hf = presets::LLAMA_3_1_8B.rope().unwrap();
    // Same smoothing, different rounding path (divisors rounded to f32): a few ulp.
    rel_close(
        rope.inv_freq(),
        hf.inv_freq(),
        4e-7,
        "llama 3.1 via rope_freqs",
    );
    // Without the tensor: plain Llama 3.
    let plain = build(&m, None).unwrap();
    assert_eq!(
        plain.inv_freq(),
        presets::LLAMA_3_8B.rope().unwrap().inv_freq()
    );
    // Wrong tensor length.
    let e = build(&m, Some(&freqs[1..])).unwrap_err();
    assert_eq!((e.key, e.kind), ("rope_freqs", GgufErrorKind::OutOfRange));
}

#[test]
fn qwen2_yarn_follows_ggml() {
    let m = meta(
        "qwen2",
        &[
            ("context_length", GgufValue::U32(131072)),
            ("attention.key_length", GgufValue::U32(128)),
            ("rope.freq_base", GgufValue::F32(1e6)),
            ("rope.scaling.type", GgufValue::Str("yarn")),
            ("rope.scaling.factor", GgufValue::F32(4.0)),
            (
                "rope.scaling.original_context_length",
                GgufValue::U32(32768),
            ),
        ],
    );
    let rope = build(&m, None).unwrap();
    assert_eq!(rope.layout(), Layout::RotateHalf);
    let want = ggml_yarn(128, 1e6, 4.0, 32768.0, 32.0, 1.0);
    rel_close(rope.inv_freq(), &want, 1e-6, "qwen2 yarn vs ggml formula");
    // HF's YaRN gives the same ramp here (integer correction dims in both).
    rel_close(
        rope.inv_freq(),
        presets::QWEN2_5_7B_YARN.rope().unwrap().inv_freq(),
        1e-6,
        "qwen2 yarn vs HF",
    );
    assert!((rope.attention_factor() as f64 - (0.1 * 4f64.ln() + 1.0)).abs() < 1e-6);
    // rope.scaling.attn_factor multiplies the magnitude.
    let mut m2 = m.clone();
    m2.push(("qwen2.rope.scaling.attn_factor".into(), GgufValue::F32(0.5)));
    let r2 = build(&m2, None).unwrap();
    assert!((r2.attention_factor() as f64 - 0.5 * (0.1 * 4f64.ln() + 1.0)).abs() < 1e-6);
    // ext_factor 0 switches the ramp off: pure interpolation, magnitude yarn_attn_factor.
    let mut m3 = m.clone();
    m3.push((
        "qwen2.rope.scaling.yarn_ext_factor".into(),
        GgufValue::F32(0.0),
    ));
    let r3 = build(&m3, None).unwrap();
    let plain = presets::QWEN2_5_7B.rope().unwrap();
    for (a, b) in r3.inv_freq().iter().zip(plain.inv_freq()) {
        assert_eq!(*a, 0.25 * b);
    }
    assert_eq!(r3.attention_factor(), 1.0);
}

#[test]
fn deepseek2_rotates_the_rope_part_interleaved_with_unit_magnitude() {
    let m = meta(
        "deepseek2",
        &[
            ("context_length", GgufValue::U32(163840)),
            ("attention.key_length", GgufValue::U32(192)),
            ("rope.dimension_count", GgufValue::U32(64)),
            ("rope.freq_base", GgufValue::F32(10000.0)),
            ("rope.scaling.type", GgufValue::Str("yarn")),
            ("rope.scaling.factor", GgufValue::F32(40.0)),
            ("rope.scaling.original_context_length", GgufValue::U32(4096)),
            ("rope.scaling.yarn_log_multiplier", GgufValue::F32(0.1)),
        ],
    );
    let rope = build(&m, None).unwrap();
    let hf = presets::DEEPSEEK_V3.rope().unwrap();
    assert_eq!(
        (rope.head_dim(), rope.rotary_dim(), rope.layout()),
        (64, 64, Layout::Interleaved)
    );
    assert!(
        (rope.attention_factor() - 1.0).abs() < 1e-6,
        "{}",
        rope.attention_factor()
    );
    rel_close(
        rope.inv_freq(),
        &ggml_yarn(64, 1e4, 40.0, 4096.0, 32.0, 1.0),
        1e-6,
        "deepseek2",
    );
    rel_close(rope.inv_freq(), hf.inv_freq(), 1e-6, "deepseek2 vs HF");
}

#[test]
fn gpt_oss_gguf_truncates_where_hf_does_not() {
    let m = meta(
        "gpt-oss",
        &[
            ("context_length", GgufValue::U32(131072)),
            ("attention.key_length", GgufValue::U32(64)),
            ("rope.freq_base", GgufValue::F32(150000.0)),
            ("rope.scaling.type", GgufValue::Str("yarn")),
            ("rope.scaling.factor", GgufValue::F32(32.0)),
            ("rope.scaling.original_context_length", GgufValue::U32(4096)),
        ],
    );
    let rope = build(&m, None).unwrap();
    rel_close(
        rope.inv_freq(),
        &ggml_yarn(64, 1.5e5, 32.0, 4096.0, 32.0, 1.0),
        1e-6,
        "gpt-oss",
    );
    let hf = presets::GPT_OSS_20B.rope().unwrap();
    assert!((rope.attention_factor() - hf.attention_factor()).abs() < 1e-6);
    // The ends agree; inside the ramp llama.cpp's floor/ceil moves the frequencies.
    assert_eq!(rope.inv_freq()[0], hf.inv_freq()[0]);
    let max_rel = rope
        .inv_freq()
        .iter()
        .zip(hf.inv_freq())
        .map(|(a, b)| ((a - b) / b).abs())
        .fold(0.0f32, f32::max);
    assert!(max_rel > 1e-3, "{max_rel}");
}

#[test]
fn mrope_sections_give_axes() {
    let sections = GgufValue::Array(GgufArray::from_i32(&[16, 24, 24, 0]));
    let m = meta(
        "qwen2vl",
        &[
            ("embedding_length", GgufValue::U32(3584)),
            ("attention.head_count", GgufValue::U32(28)),
            ("rope.dimension_count", GgufValue::U32(128)),
            ("rope.freq_base", GgufValue::F32(1e6)),
            ("rope.dimension_sections", sections),
        ],
    );
    assert_eq!(
        build(&m, None).unwrap(),
        presets::QWEN2_VL_7B.rope().unwrap()
    );
    let m = meta(
        "qwen3vl",
        &[
            ("attention.key_length", GgufValue::U32(128)),
            ("rope.freq_base", GgufValue::F32(5e6)),
            (
                "rope.dimension_sections",
                GgufValue::Array(GgufArray::from_u32(&[24, 20, 20, 0])),
            ),
        ],
    );
    let rope = build(&m, None).unwrap();
    assert_eq!(
        rope.axes(),
        Axes::MRopeInterleaved {
            sections: [24, 20, 20]
        }
    );
    // ggml's IMROPE gives pairs 61 (61 % 3 == 1, not < 3·20) and 62 (62 % 3 == 2, not < 3·20)
    // to its fourth axis, which llama.cpp sets to 0 for every decoder token: llama.cpp never
    // rotates them, HF rotates them with t. Every other pair has HF's frequency.
    let hf = presets::QWEN3_VL_8B.rope().unwrap();
    assert_eq!(rope.inv_freq().len(), hf.inv_freq().len());
    for (j, (&w, &h)) in rope.inv_freq().iter().zip(hf.inv_freq()).enumerate() {
        if j == 61 || j == 62 {
            assert!(w < 1e-44, "pair {j}: {w}");
        } else {
            assert_eq!(w.to_bits(), h.to_bits(), "pair {j}");
        }
    }
    // At the far end of a long context those pairs still come out unchanged; their
    // neighbours rotate.
    let x: Vec<f32> = (0..128).map(|i| 0.5 + i as f32 / 256.0).collect();
    let mut y = x.clone();
    rope.apply_axes(&mut y, 1, &[[8191, 8191, 8191]]).unwrap();
    for d in [61, 62, 125, 126] {
        assert_eq!(y[d].to_bits(), x[d].to_bits(), "dim {d}");
    }
    for d in [60, 63, 124, 127] {
        assert_ne!(y[d], x[d], "dim {d}");
    }
    // GLM-4 is NORM without sections.
    let m = meta(
        "glm4",
        &[
            ("attention.key_length", GgufValue::U32(128)),
            ("rope.dimension_count", GgufValue::U32(64)),
        ],
    );
    assert_eq!(build(&m, None).unwrap(), presets::GLM_4_9B.rope().unwrap());
}

#[test]
fn phi3_longrope_takes_the_chosen_factors_and_attn_factor() {
    let long: Vec<f32> = (0..48).map(|j| 1.0 + j as f32).collect();
    let short = vec![1.0f32; 48];
    let attn = (1.0 + (32f64).ln() / (4096f64).ln()).sqrt() as f32;
    let m = meta(
        "phi3",
        &[
            ("embedding_length", GgufValue::U32(3072)),
            ("attention.head_count", GgufValue::U32(32)),
            ("rope.dimension_count", GgufValue::U32(96)),
            ("rope.scaling.attn_factor", GgufValue::F32(attn)),
        ],
    );
    let rope = build(&m, Some(&long)).unwrap();
    let hf = presets::phi_3_mini_128k(&short, &long, true)
        .rope()
        .unwrap();
    assert_eq!(rope.layout(), Layout::RotateHalf);
    assert_eq!(rope.attention_factor(), attn);
    // HF: 1/(f·q); ggml: (1/q)/f. One or two roundings apart.
    rel_close(rope.inv_freq(), hf.inv_freq(), 3e-7, "phi3 long");
}

#[test]
fn bad_metadata_is_a_typed_error() {
    use GgufErrorKind::*;
    let e = |m: &Meta| {
        let e = build(m, None).unwrap_err();
        assert!(!e.to_string().is_empty());
        (e.key, e.kind)
    };
    let ok = [
        ("attention.key_length", GgufValue::U32(128)),
        ("rope.freq_base", GgufValue::F32(1e4)),
    ];
    assert_eq!(e(&Vec::new()), ("general.architecture", Missing));
    assert_eq!(
        e(&vec![("general.architecture".into(), GgufValue::U32(1))]),
        ("general.architecture", WrongType)
    );
    assert_eq!(e(&meta("nonesuch", &ok)), ("general.architecture", Unknown));
    assert_eq!(e(&meta("gptj", &ok)), ("general.architecture", NoRope));
    // Listed with a rope by `llama_model_rope_type`, built without one: StarCoder and BERT
    // add learned positions.
    assert_eq!(e(&meta("starcoder", &ok)), ("general.architecture", NoRope));
    assert_eq!(e(&meta("bert", &ok)), ("general.architecture", NoRope));
    assert!(build(&meta("nomic-bert", &ok), None).is_ok());
    // Baichuan's graph ropes only its 7B (32 blocks); the 13B (40) attends with ALiBi.
    let with = |arch: &'static str, key: &'static str, v: GgufValue<'static>| {
        let mut keys = ok.to_vec();
        keys.push((key, v));
        meta(arch, &keys)
    };
    assert_eq!(
        e(&with("baichuan", "block_count", GgufValue::U32(40))),
        ("block_count", NoRope)
    );
    assert_eq!(e(&meta("baichuan", &ok)), ("block_count", Missing));
    assert!(build(&with("baichuan", "block_count", GgufValue::U32(32)), None).is_ok());
    // Granite's `rope.scaling.finetuned` switches its rope, on by default.
    for arch in ["granite", "granitemoe", "granitehybrid"] {
        let switch = |v| with(arch, "rope.scaling.finetuned", v);
        assert_eq!(
            e(&switch(GgufValue::Bool(false))),
            ("rope.scaling.finetuned", NoRope)
        );
        assert_eq!(
            e(&switch(GgufValue::U32(0))),
            ("rope.scaling.finetuned", WrongType)
        );
        assert!(build(&switch(GgufValue::Bool(true)), None).is_ok());
        assert!(build(&meta(arch, &ok), None).is_ok());
    }
    assert_eq!(e(&meta("llama", &[])), ("embedding_length", Missing));
    assert_eq!(
        e(&meta(
            "llama",
            &[("attention.key_length", GgufValue::Str("128"))]
        )),
        ("attention.key_length", WrongType)
    );
    assert_eq!(
        e(&meta(
            "llama",
            &[("attention.key_length", GgufValue::I32(-128))]
        )),
        ("attention.key_length", WrongType)
    );
    assert_eq!(
        e(&meta(
            "llama",
            &[("attention.key_length", GgufValue::U64(1 << 40))]
        )),
        ("attention.key_length", OutOfRange)
    );
    assert_eq!(
        e(&meta(
            "llama",
            &[ok[0], ("rope.dimension_count", GgufValue::U32(63))]
        )),
        ("rope.dimension_count", OutOfRange)
    );
    assert_eq!(
        e(&meta(
            "llama",
            &[ok[0], ("rope.freq_base", GgufValue::F32(f32::NAN))]
        )),
        ("rope.freq_base", OutOfRange)
    );
    assert_eq!(
        e(&meta(
            "llama",
            &[ok[0], ("rope.scaling.type", GgufValue::Str("ntk"))]
        )),
        ("rope.scaling.type", Unknown)
    );
    let yarn_vl = meta(
        "qwen2vl",
        &[
            ok[0],
            (
                "rope.dimension_sections",
                GgufValue::Array(GgufArray::from_i32(&[16, 24, 24, 0])),
            ),
            ("rope.scaling.type", GgufValue::Str("yarn")),
            ("rope.scaling.factor", GgufValue::F32(4.0)),
            ("context_length", GgufValue::U32(4096)),
        ],
    );
    assert_eq!(e(&yarn_vl), ("rope.scaling.type", Unsupported));
    let long_arch: &'static str = Box::leak("x".repeat(100).into_boxed_str());
    // An unknown 100-byte architecture is unknown before any key is formatted.
    assert_eq!(e(&meta(long_arch, &ok)).1, Unknown);
}

#[cfg(feature = "gguf")]
mod header {
    use super::*;
    use posenc::load::{GgufHeader, GgufType};

    /// A GGUF header writer for the tests (independent of the parser under test).
    struct W(Vec<u8>);
    impl W {
        fn new(version: u32, tensors: u64, kvs: u64) -> W {
            let mut b = b"GGUF".to_vec();
            b.extend(version.to_le_bytes());
            b.extend(tensors.to_le_bytes());
            b.extend(kvs.to_le_bytes());
            W(b)
        }
        fn str(&mut self, s: &str) {
            self.0.extend((s.len() as u64).to_le_bytes());
            self.0.extend(s.as_bytes());
        }
        fn key(&mut self, k: &str, ty: u32) {
            self.str(k);
            self.0.extend(ty.to_le_bytes());
        }
        fn raw(&mut self, b: &[u8]) {
            self.0.extend_from_slice(b);
        }
    }

    fn every_type() -> Vec<u8> {
        let mut w = W::new(3, 2, 20);
        w.key("general.architecture", 8);
        w.str("llama");
        w.key("t.u8", 0);
        w.raw(&[200]);
        w.key("t.i8", 1);
        w.raw(&(-5i8).to_le_bytes());
        w.key("t.u16", 2);
        w.raw(&60000u16.to_le_bytes());
        w.key("t.i16", 3);
        w.raw(&(-300i16).to_le_bytes());
        w.key("t.u32", 4);
        w.raw(&4_000_000_000u32.to_le_bytes());
        w.key("t.i32", 5);
        w.raw(&(-70000i32).to_le_bytes());
        w.key("t.f32", 6);
        w.raw(&1.5f32.to_le_bytes());
        w.key("t.bool", 7);
        w.raw(&[1]);
        w.key("t.u64", 10);
        w.raw(&(1u64 << 40).to_le_bytes());
        w.key("t.i64", 11);
        w.raw(&(-(1i64 << 40)).to_le_bytes());
        w.key("t.f64", 12);
        w.raw(&0.1f64.to_le_bytes());
        w.key("t.strs", 9); // array of strings
        w.raw(&8u32.to_le_bytes());
        w.raw(&2u64.to_le_bytes());
        w.str("a");
        w.str("bc");
        w.key("t.nested", 9); // array of arrays of u8
        w.raw(&9u32.to_le_bytes());
        w.raw(&2u64.to_le_bytes());
        w.raw(&0u32.to_le_bytes());
        w.raw(&1u64.to_le_bytes());
        w.raw(&[7]);
        w.raw(&0u32.to_le_bytes());
        w.raw(&0u64.to_le_bytes());
        // The rope keys of a Llama 3 8B.
        w.key("llama.embedding_length", 4);
        w.raw(&4096u32.to_le_bytes());
        w.key("llama.attention.head_count", 4);
        w.raw(&32u32.to_le_bytes());
        w.key("llama.rope.dimension_count", 4);
        w.raw(&128u32.to_le_bytes());
        w.key("llama.rope.freq_base", 6);
        w.raw(&500000f32.to_le_bytes());
        w.key("llama.rope.dimension_sections", 9); // array of i32 (unused by llama)
        w.raw(&5u32.to_le_bytes());
        w.raw(&4u64.to_le_bytes());
        for s in [0i32, 0, 0, 0] {
            w.raw(&s.to_le_bytes());
        }
        w.key("general.name", 8);
        w.str("Meta Llama 3 8B");
        w.0
    }

    #[test]
    fn every_value_type_parses() {
        let bytes = every_type();
        let h = GgufHeader::parse(&bytes).unwrap();
        assert_eq!(
            (h.version(), h.tensor_count(), h.iter().count()),
            (3, 2, 20)
        );
        assert_eq!(h.get("t.u8"), Some(GgufValue::U8(200)));
        assert_eq!(h.get("t.i8"), Some(GgufValue::I8(-5)));
        assert_eq!(h.get("t.u16"), Some(GgufValue::U16(60000)));
        assert_eq!(h.get("t.i16"), Some(GgufValue::I16(-300)));
        assert_eq!(h.get("t.u32"), Some(GgufValue::U32(4_000_000_000)));
        assert_eq!(h.get("t.i32"), Some(GgufValue::I32(-70000)));
        assert_eq!(h.get("t.f32"), Some(GgufValue::F32(1.5)));
        assert_eq!(h.get("t.bool"), Some(GgufValue::Bool(true)));
        assert_eq!(h.get("t.u64"), Some(GgufValue::U64(1 << 40)));
        assert_eq!(h.get("t.i64"), Some(GgufValue::I64(-(1 << 40))));
        assert_eq!(h.get("t.f64"), Some(GgufValue::F64(0.1)));
        assert_eq!(
            h.get("general.name"),
            Some(GgufValue::Str("Meta Llama 3 8B"))
        );
        let Some(GgufValue::Array(a)) = h.get("t.strs") else {
            panic!()
        };
        assert_eq!((a.elem_type(), a.len(), a.get(0)), (GgufType::Str, 2, None));
        let Some(GgufValue::Array(a)) = h.get("t.nested") else {
            panic!()
        };
        assert_eq!((a.elem_type(), a.len()), (GgufType::Array, 2));
        let Some(GgufValue::Array(a)) = h.get("llama.rope.dimension_sections") else {
            panic!()
        };
        assert_eq!(
            (a.len(), a.get(3), a.get(4)),
            (4, Some(GgufValue::I32(0)), None)
        );
        assert_eq!(h.get("t.missing"), None);
        let rope = rope_from_gguf(|k| h.get(k), None).unwrap();
        let want = presets::LLAMA_3_8B.rope().unwrap();
        assert_eq!(rope.inv_freq(), want.inv_freq());
        assert_eq!(rope.layout(), Layout::Interleaved);
    }

    #[test]
    fn malformed_headers_are_errors() {
        let bytes = every_type();
        for end in 0..bytes.len() {
            assert!(GgufHeader::parse(&bytes[..end]).is_err(), "prefix {end}");
        }
        // Versions: 2 reads, 1 and 4 do not.
        for (v, ok) in [(1u32, false), (2, true), (3, true), (4, false)] {
            let mut b = bytes.clone();
            b[4..8].copy_from_slice(&v.to_le_bytes());
            assert_eq!(GgufHeader::parse(&b).is_ok(), ok, "version {v}");
        }
        let mut b = bytes.clone();
        b[0] = b'X';
        assert_eq!(GgufHeader::parse(&b).unwrap_err().key, "gguf.magic");
        // An unknown value type, an absurd string length, invalid UTF-8.
        let mut w = W::new(3, 0, 1);
        w.key("k", 13);
        assert!(GgufHeader::parse(&w.0).is_err());
        let mut w = W::new(3, 0, 1);
        w.key("k", 8);
        w.raw(&u64::MAX.to_le_bytes());
        assert!(GgufHeader::parse(&w.0).is_err());
        let mut w = W::new(3, 0, 1);
        w.key("k", 8);
        w.raw(&2u64.to_le_bytes());
        w.raw(&[0xff, 0xfe]);
        assert!(GgufHeader::parse(&w.0).is_err());
        // An absurd kv count and array length run out of input, they do not allocate.
        let w = W::new(3, 0, u64::MAX);
        assert!(GgufHeader::parse(&w.0).is_err());
        let mut w = W::new(3, 0, 1);
        w.key("k", 9);
        w.raw(&4u32.to_le_bytes());
        w.raw(&(u64::MAX / 2).to_le_bytes());
        assert!(GgufHeader::parse(&w.0).is_err());
        // Deeply nested arrays stop at the depth limit.
        let mut w = W::new(3, 0, 1);
        w.key("k", 9);
        for _ in 0..64 {
            w.raw(&9u32.to_le_bytes());
            w.raw(&1u64.to_le_bytes());
        }
        assert!(GgufHeader::parse(&w.0).is_err());
        // Single-byte corruptions anywhere: never a panic.
        for i in 0..bytes.len() {
            for x in [0u8, 0xff, 9, 13] {
                let mut b = bytes.clone();
                b[i] = x;
                if let Ok(h) = GgufHeader::parse(&b) {
                    let _ = rope_from_gguf(|k| h.get(k), None);
                }
            }
        }
    }
}

/// The layers llama.cpp's graphs run without rope, per architecture. Expected lists are
/// written from llama.cpp's code (quoted per case), not from posenc's reading of it.
#[test]
fn nope_layers_follow_llama_cpp() {
    use posenc::load::gguf_layer_rotates;
    let nope = |m: &Meta, n: u32| -> Vec<u32> {
        (0..n)
            .filter(|&l| {
                !gguf_layer_rotates(|k| m.iter().find(|(key, _)| key == k).map(|(_, v)| *v), l)
                    .unwrap()
            })
            .collect()
    };
    let every_fourth = |n: u32| -> Vec<u32> { (0..n).filter(|i| (i + 1) % 4 == 0).collect() };
    let blocks = |n: u32| ("block_count", GgufValue::U32(n));
    // llama-iswa / smollm3 / afmoe: `use_rope = (il + 1) % n_no_rope_layer_step != 0`, the
    // step 4 (`llama-hparams.h`).
    for arch in ["llama4", "smollm3", "afmoe"] {
        assert_eq!(
            nope(&meta(arch, &[blocks(48)]), 48),
            every_fourth(48),
            "{arch}"
        );
    }
    // Llama 4 without chunked attention (`attention.sliding_window` 0): "always use rope".
    let m = meta(
        "llama4",
        &[blocks(30), ("attention.sliding_window", GgufValue::U32(0))],
    );
    assert_eq!(nope(&m, 30), Vec::<u32>::new());
    let m = meta(
        "llama4",
        &[
            blocks(8),
            ("attention.sliding_window", GgufValue::U32(8192)),
        ],
    );
    assert_eq!(nope(&m, 8), [3, 7]);
    // cohere2-iswa: the rope only `if (is_swa)`; `set_swa_pattern(p)` makes the last layer of
    // every p dense (`il % p < p - 1` slides).
    assert_eq!(nope(&meta("cohere2", &[blocks(40)]), 40), every_fourth(40));
    let m = meta(
        "cohere2",
        &[
            blocks(9),
            ("attention.sliding_window_pattern", GgufValue::U32(3)),
        ],
    );
    assert_eq!(nope(&m, 9), [2, 5, 8]);
    // exaone4: `use_rope = is_swa(il) || swa_type == NONE`; only the 64-layer model slides.
    assert_eq!(nope(&meta("exaone4", &[blocks(64)]), 64), every_fourth(64));
    assert_eq!(nope(&meta("exaone4", &[blocks(30)]), 30), Vec::<u32>::new());
    // smallthinker: `use_rope = step == n_layer || il % step != 0`, step 4 with a sliding
    // window, else the block count.
    let m = meta(
        "smallthinker",
        &[
            blocks(32),
            ("attention.sliding_window", GgufValue::U32(4096)),
        ],
    );
    assert_eq!(
        nope(&m, 32),
        (0..32).filter(|i| i % 4 == 0).collect::<Vec<_>>()
    );
    assert_eq!(
        nope(&meta("smallthinker", &[blocks(32)]), 32),
        Vec::<u32>::new()
    );
    // Every other architecture rotates every layer.
    for arch in ["llama", "qwen2", "gemma3", "gpt-oss", "olmo2", "command-r"] {
        assert_eq!(
            nope(&meta(arch, &[blocks(32)]), 32),
            Vec::<u32>::new(),
            "{arch}"
        );
    }
}

#[test]
fn nope_layer_queries_are_checked() {
    use posenc::load::gguf_layer_rotates;
    let ask = |m: &Meta, l: u32| {
        gguf_layer_rotates(|k| m.iter().find(|(key, _)| key == k).map(|(_, v)| *v), l)
            .map_err(|e| (e.key, e.kind))
    };
    let bc = ("block_count", GgufValue::U32(8));
    assert_eq!(
        ask(&meta("smollm3", &[bc]), 8),
        Err(("block_count", GgufErrorKind::OutOfRange))
    );
    assert_eq!(ask(&meta("smollm3", &[]), 1000), Ok(true)); // no block count: the rule alone
    assert_eq!(
        ask(&meta("exaone4", &[]), 0),
        Err(("block_count", GgufErrorKind::Missing))
    );
    assert_eq!(
        ask(&meta("bloom", &[bc]), 0),
        Err(("general.architecture", GgufErrorKind::NoRope))
    );
    assert_eq!(
        ask(&meta("nope-arch", &[bc]), 0),
        Err(("general.architecture", GgufErrorKind::Unknown))
    );
    let m = meta(
        "cohere2",
        &[
            bc,
            ("attention.sliding_window_pattern", GgufValue::Str("4")),
        ],
    );
    assert_eq!(
        ask(&m, 0),
        Err(("attention.sliding_window_pattern", GgufErrorKind::WrongType))
    );
    let m = meta(
        "llama4",
        &[bc, ("attention.sliding_window", GgufValue::F32(0.0))],
    );
    assert_eq!(
        ask(&m, 0),
        Err(("attention.sliding_window", GgufErrorKind::WrongType))
    );
    // A per-layer array for the pattern is ignored, as llama.cpp's scalar read ignores it.
    let flags: &'static [i32] = &[1, 1, 0, 1, 1, 0, 1, 1];
    let m = meta(
        "cohere2",
        &[
            bc,
            (
                "attention.sliding_window_pattern",
                GgufValue::Array(GgufArray::from_i32(flags)),
            ),
        ],
    );
    assert_eq!(ask(&m, 3), Ok(false));
    assert_eq!(ask(&m, 2), Ok(true));
}

/// Per-layer ropes: llama.cpp's Gemma 3 rotates its sliding-window layers with
/// `rope_freq_base_train_swa` (10000 unless `rope.freq_base_swa`) unscaled, and its OLMo 3
/// graph (`olmo2` with a sliding window) rotates them "with no yarn rope scaling". Expected
/// ropes are the presets (checked against HF elsewhere) or posenc's unscaled rope of the
/// base; never this function's own output.
#[test]
fn layer_ropes_follow_llama_cpp() {
    use posenc::RopeConfig;
    use posenc::load::rope_from_gguf_layer;
    let layer = |m: &Meta, l: u32| {
        rope_from_gguf_layer(
            |k| m.iter().find(|(key, _)| key == k).map(|(_, v)| *v),
            None,
            l,
        )
    };
    let gemma = |extra: &[(&str, GgufValue<'static>)]| {
        let mut kv = vec![
            ("block_count", GgufValue::U32(34)),
            ("attention.key_length", GgufValue::U32(256)),
            ("rope.freq_base", GgufValue::F32(1e6)),
            ("rope.scaling.type", GgufValue::Str("linear")),
            ("rope.scaling.factor", GgufValue::F32(8.0)),
        ];
        kv.extend_from_slice(extra);
        meta("gemma3", &kv)
    };
    let (local, global) = (
        presets::GEMMA_3_4B_LOCAL.rope().unwrap(),
        presets::GEMMA_3_4B_GLOBAL.rope().unwrap(),
    );
    // `set_swa_pattern(6)`: layers 5, 11, … are global.
    let m = gemma(&[]);
    for l in 0..34 {
        let want = if l % 6 == 5 { global } else { local };
        assert_eq!(layer(&m, l).unwrap(), Some(want), "gemma3 layer {l}");
    }
    assert_eq!(
        build(&m, None).unwrap(),
        global,
        "rope_from_gguf is the global layers'"
    );
    // A scalar period, a per-layer array, a base of its own, no sliding window.
    let m = gemma(&[("attention.sliding_window_pattern", GgufValue::U32(2))]);
    assert_eq!(layer(&m, 2).unwrap(), Some(local));
    assert_eq!(layer(&m, 3).unwrap(), Some(global));
    let flags: &'static [i32] = &[0, 1, 1];
    let m = gemma(&[(
        "attention.sliding_window_pattern",
        GgufValue::Array(GgufArray::from_i32(flags)),
    )]);
    let got: Vec<_> = (0..4).map(|l| layer(&m, l).unwrap()).collect();
    assert_eq!(got, [Some(global), Some(local), Some(local), Some(global)]);
    let m = gemma(&[("rope.freq_base_swa", GgufValue::F32(5e4))]);
    let want = Rope::new(&RopeConfig::new(256, 5e4, Layout::RotateHalf)).unwrap();
    assert_eq!(layer(&m, 0).unwrap(), Some(want));
    let m = gemma(&[("attention.sliding_window", GgufValue::U32(0))]);
    assert_eq!(layer(&m, 0).unwrap(), Some(global));
    let m = gemma(&[("rope.freq_base_swa", GgufValue::F32(-1.0))]);
    assert_eq!(
        layer(&m, 0).map_err(|e| (e.key, e.kind)),
        Err(("rope.freq_base_swa", GgufErrorKind::OutOfRange))
    );

    // OLMo 3: YaRN on the full layers, the plain rope of the base on the sliding ones.
    let olmo = |window: u32| {
        meta(
            "olmo2",
            &[
                ("block_count", GgufValue::U32(32)),
                ("attention.key_length", GgufValue::U32(128)),
                ("rope.freq_base", GgufValue::F32(5e5)),
                ("context_length", GgufValue::U32(65536)),
                ("rope.scaling.type", GgufValue::Str("yarn")),
                ("rope.scaling.factor", GgufValue::F32(8.0)),
                ("rope.scaling.original_context_length", GgufValue::U32(8192)),
                ("attention.sliding_window", GgufValue::U32(window)),
            ],
        )
    };
    let plain = Rope::new(&RopeConfig::new(128, 5e5, Layout::RotateHalf)).unwrap();
    let m = olmo(4096);
    let yarn = build(&m, None).unwrap();
    assert_ne!(yarn, plain);
    for l in 0..32 {
        let want = if (l + 1) % 4 == 0 { yarn } else { plain };
        assert_eq!(layer(&m, l).unwrap(), Some(want), "olmo2 layer {l}");
    }
    // Without a sliding window, every layer is the file's rope.
    let m = olmo(0);
    assert!((0..32).all(|l| layer(&m, l).unwrap() == Some(yarn)));

    // A NoPE layer has none; other architectures have the file's rope on every layer.
    let m = meta(
        "smollm3",
        &[
            ("block_count", GgufValue::U32(8)),
            ("attention.key_length", GgufValue::U32(128)),
        ],
    );
    assert_eq!(layer(&m, 3).unwrap(), None);
    assert_eq!(layer(&m, 2).unwrap(), Some(build(&m, None).unwrap()));
    assert_eq!(
        layer(&m, 8).map_err(|e| (e.key, e.kind)),
        Err(("block_count", GgufErrorKind::OutOfRange))
    );
}

/// The sliding layers of the architectures whose llama.cpp loaders give them a rope of their
/// own (`load_arch_hparams` of each, `get_rope_freq_base` / `get_rope_freq_scale` /
/// `n_rot(il)` of an SWA layer, and which layers the graphs pass `rope_freqs` to).
#[test]
fn sliding_layers_of_more_architectures_follow_llama_cpp() {
    use posenc::RopeConfig;
    use posenc::load::{GgufType, rope_from_gguf_layer};
    let layer = |m: &Meta, freqs: Option<&[f32]>, l: u32| {
        rope_from_gguf_layer(
            |k| m.iter().find(|(key, _)| key == k).map(|(_, v)| *v),
            freqs,
            l,
        )
    };
    let plain = |h: usize, r: usize, base: f32| {
        Rope::new(&RopeConfig::new(h, base, Layout::RotateHalf).rotary_dim(r)).unwrap()
    };
    // The converters write the pattern as one bool per layer.
    let bools = |flags: &'static [u8]| {
        GgufValue::Array(GgufArray::from_le_bytes(GgufType::Bool, flags.len(), flags).unwrap())
    };
    const PATTERN: &str = "attention.sliding_window_pattern";

    // Gemma 3n: `set_swa_pattern(5)` (or the converter's per-layer list), the sliding base
    // `rope.freq_base_swa` (default 10000), unscaled.
    let g3n = |extra: &[(&str, GgufValue<'static>)]| {
        let mut kv = vec![
            ("block_count", GgufValue::U32(10)),
            ("attention.key_length", GgufValue::U32(256)),
            ("rope.freq_base", GgufValue::F32(1e6)),
        ];
        kv.extend_from_slice(extra);
        meta("gemma3n", &kv)
    };
    let (local, global) = (plain(256, 256, 1e4), plain(256, 256, 1e6));
    for m in [
        g3n(&[]),
        g3n(&[(PATTERN, bools(&[1, 1, 1, 1, 0, 1, 1, 1, 1, 0]))]),
        g3n(&[("rope.freq_base_swa", GgufValue::F32(1e4))]),
    ] {
        for l in 0..10 {
            let want = if l % 5 == 4 { global } else { local };
            assert_eq!(layer(&m, None, l).unwrap(), Some(want), "gemma3n layer {l}");
        }
    }

    // EmbeddingGemma: Gemma 3's pattern (6) and sliding base.
    let m = meta(
        "gemma-embedding",
        &[
            ("attention.key_length", GgufValue::U32(256)),
            ("rope.freq_base", GgufValue::F32(1e6)),
        ],
    );
    for l in 0..12 {
        let want = if l % 6 == 5 { global } else { local };
        assert_eq!(
            layer(&m, None, l).unwrap(),
            Some(want),
            "gemma-embedding layer {l}"
        );
    }

    // Gemma 4: sliding layers by the required list, heads `attention.key_length_swa` wide
    // rotating `rope.dimension_count_swa`, base `rope.freq_base_swa`, unscaled and without
    // the factors, which only the full layers take (the proportional mask: 64 pairs of 1,
    // then 1e30).
    let mask: Vec<f32> = (0..256).map(|j| if j < 64 { 1.0 } else { 1e30 }).collect();
    let g4 = |extra: &[(&str, GgufValue<'static>)]| {
        let mut kv = vec![
            ("block_count", GgufValue::U32(6)),
            ("attention.key_length", GgufValue::U32(512)),
            ("attention.key_length_swa", GgufValue::U32(256)),
            ("rope.dimension_count", GgufValue::U32(512)),
            ("rope.dimension_count_swa", GgufValue::U32(256)),
            ("rope.freq_base", GgufValue::F32(1e6)),
            ("rope.freq_base_swa", GgufValue::F32(1e4)),
            (PATTERN, bools(&[1, 1, 1, 1, 1, 0])),
        ];
        kv.extend_from_slice(extra);
        meta("gemma4", &kv)
    };
    let m = g4(&[]);
    let full = build(&m, Some(&mask)).unwrap();
    assert_eq!((full.head_dim(), full.rotary_dim()), (512, 512));
    // ω_j = θ^(−2j/512) for the 64 rotating pairs; the others divided by 1e30.
    for (j, &w) in full.inv_freq().iter().enumerate() {
        let want = 1.0 / 1e6f64.powf(((2 * j) as f32 / 512.0) as f64) / f64::from(mask[j]);
        let rel = ((w as f64 - want) / want).abs();
        assert!(rel <= 4.0 * f32::EPSILON as f64, "pair {j}: {w} vs {want}");
    }
    for l in 0..5 {
        assert_eq!(
            layer(&m, Some(&mask), l).unwrap(),
            Some(local),
            "gemma4 layer {l}"
        );
    }
    assert_eq!(layer(&m, Some(&mask), 5).unwrap(), Some(full));
    // llama.cpp requires the sliding head width and the list.
    let m = meta(
        "gemma4",
        &[
            ("attention.key_length", GgufValue::U32(512)),
            (PATTERN, bools(&[1, 0])),
        ],
    );
    assert_eq!(
        layer(&m, None, 0).map_err(|e| (e.key, e.kind)),
        Err(("attention.key_length_swa", GgufErrorKind::Missing))
    );
    let m = meta("gemma4", &[("attention.key_length", GgufValue::U32(512))]);
    assert_eq!(
        layer(&m, None, 0).map_err(|e| (e.key, e.kind)),
        Err((PATTERN, GgufErrorKind::Missing))
    );

    // Step 3.5: the full layers rotate half of `rope.dimension_count` ("full_attention layer
    // only use half of the RoPE dimensions") with the first n_rot/2 factors; the sliding
    // layers the whole head, base `rope.freq_base_swa`, no factors.
    let m = meta(
        "step35",
        &[
            ("block_count", GgufValue::U32(4)),
            ("attention.key_length", GgufValue::U32(128)),
            ("rope.freq_base", GgufValue::F32(5e6)),
            ("rope.freq_base_swa", GgufValue::F32(1e4)),
            (PATTERN, bools(&[0, 1, 1, 1])),
        ],
    );
    let factors: Vec<f32> = (0..64).map(|j| 1.0 + j as f32 / 8.0).collect();
    let full = build(&m, Some(&factors)).unwrap();
    assert_eq!((full.head_dim(), full.rotary_dim()), (128, 64));
    for (j, &w) in full.inv_freq().iter().enumerate() {
        let want = 1.0 / 5e6f64.powf(((2 * j) as f32 / 64.0) as f64) / f64::from(factors[j]);
        let rel = ((w as f64 - want) / want).abs();
        assert!(rel <= 4.0 * f32::EPSILON as f64, "pair {j}: {w} vs {want}");
    }
    assert_eq!(layer(&m, Some(&factors), 0).unwrap(), Some(full));
    for l in 1..4 {
        let got = layer(&m, Some(&factors), l).unwrap();
        assert_eq!(got, Some(plain(128, 128, 1e4)), "step35 layer {l}");
    }

    // MiMo-V2-Flash: the list (one number flags every layer), base of its own (10000).
    let mimo = |pattern: GgufValue<'static>| {
        meta(
            "mimo2",
            &[
                ("attention.key_length", GgufValue::U32(192)),
                ("rope.dimension_count", GgufValue::U32(64)),
                ("rope.freq_base", GgufValue::F32(5e6)),
                (PATTERN, pattern),
            ],
        )
    };
    let m = mimo(bools(&[0, 1, 1]));
    assert_eq!(layer(&m, None, 0).unwrap(), Some(plain(192, 64, 5e6)));
    assert_eq!(layer(&m, None, 1).unwrap(), Some(plain(192, 64, 1e4)));
    assert_eq!(
        layer(&m, None, 3).map_err(|e| (e.key, e.kind)),
        Err((PATTERN, GgufErrorKind::OutOfRange))
    );
    assert_eq!(
        layer(&mimo(GgufValue::U32(1)), None, 7).unwrap(),
        Some(plain(192, 64, 1e4))
    );

    // ModernBERT: with a sliding window, `set_swa_pattern(3, true)` (layer 0 dense) and the
    // sliding layers' base `rope.freq_base_swa` (10000 when absent).
    let mb = |extra: &[(&str, GgufValue<'static>)]| {
        let mut kv = vec![
            ("block_count", GgufValue::U32(22)),
            ("attention.key_length", GgufValue::U32(64)),
            ("rope.freq_base", GgufValue::F32(160_000.0)),
        ];
        kv.extend_from_slice(extra);
        meta("modern-bert", &kv)
    };
    let (global, local) = (plain(64, 64, 160_000.0), plain(64, 64, 1e4));
    for m in [
        mb(&[("attention.sliding_window", GgufValue::U32(128))]),
        mb(&[
            ("attention.sliding_window", GgufValue::U32(128)),
            ("rope.freq_base_swa", GgufValue::F32(1e4)),
        ]),
    ] {
        for l in 0..22 {
            let want = if l % 3 == 0 { global } else { local };
            assert_eq!(
                layer(&m, None, l).unwrap(),
                Some(want),
                "modern-bert layer {l}"
            );
        }
    }
    let m = mb(&[]);
    assert!((0..22).all(|l| layer(&m, None, l).unwrap() == Some(global)));

    // DeepSeek-V4 (`deepseek4`): layers whose `attention.compress_ratios` entry is 0 rotate
    // plainly with `rope.freq_base` (freq_scale 1, ext_factor 0, attn_factor 1); the others
    // with `attention.compress_rope_freq_base` and the file's YaRN (betas 32 / 1: the loader
    // reads no beta key), magnitude `dsv4_rope_attn_factor` times ggml's own (≈ 1). Both over
    // the head's last `rope.dimension_count` channels, adjacent pairs (NORM).
    let ratios: &'static [u32] = &[0, 0, 4, 128];
    let yarn_keys = [
        ("attention.key_length", GgufValue::U32(512)),
        ("rope.dimension_count", GgufValue::U32(64)),
        ("context_length", GgufValue::U32(1 << 20)),
        ("rope.scaling.type", GgufValue::Str("yarn")),
        ("rope.scaling.factor", GgufValue::F32(16.0)),
        (
            "rope.scaling.original_context_length",
            GgufValue::U32(65536),
        ),
    ];
    let mut kv = yarn_keys.to_vec();
    kv.extend([
        ("rope.freq_base", GgufValue::F32(1e4)),
        (
            "attention.compress_rope_freq_base",
            GgufValue::F32(160_000.0),
        ),
        ("rope.scaling.yarn_beta_fast", GgufValue::F32(8.0)),
        (
            "attention.compress_ratios",
            GgufValue::Array(GgufArray::from_u32(ratios)),
        ),
    ]);
    let m = meta("deepseek4", &kv);
    let sliding = Rope::new(
        &RopeConfig::new(512, 1e4, Layout::Interleaved)
            .rotary_dim(64)
            .rotary_offset(448),
    )
    .unwrap();
    // The compressed layers' frequencies: llama.cpp's YaRN over base 160000 as any NORM
    // architecture's file with those keys gets it (default betas).
    let mut kv = yarn_keys.to_vec();
    kv.push(("rope.freq_base", GgufValue::F32(160_000.0)));
    let llama = build(&meta("llama", &kv), None).unwrap();
    for l in 0..4 {
        let got = layer(&m, None, l).unwrap().unwrap();
        if ratios[l as usize] == 0 {
            assert_eq!(got, sliding, "deepseek4 layer {l}");
            continue;
        }
        assert_eq!(got.inv_freq(), llama.inv_freq(), "deepseek4 layer {l}");
        assert_eq!(
            (
                got.head_dim(),
                got.rotary_dim(),
                got.rotary_offset(),
                got.layout()
            ),
            (512, 64, 448, Layout::Interleaved)
        );
        assert!((got.attention_factor() - 1.0).abs() <= f32::EPSILON);
        assert_eq!(
            build(&m, None).unwrap(),
            got,
            "rope_from_gguf: the compressed layers'"
        );
    }
    assert_eq!(
        layer(&m, None, 4).map_err(|e| (e.key, e.kind)),
        Err(("attention.compress_ratios", GgufErrorKind::OutOfRange))
    );
    let m = meta("deepseek4", &yarn_keys);
    assert_eq!(
        build(&m, None).map_err(|e| (e.key, e.kind)),
        Err(("attention.compress_rope_freq_base", GgufErrorKind::Missing))
    );
    assert_eq!(
        layer(&m, None, 0).map_err(|e| (e.key, e.kind)),
        Err(("attention.compress_ratios", GgufErrorKind::Missing))
    );

    // gpt-oss (and Gemma 2, Llama 4, AFMoE, SmallThinker): llama.cpp copies the model's base
    // and scale to the sliding layers, then reads `rope.freq_base_swa` over the base. So a
    // sliding layer (even, `set_swa_pattern(2)`) is the file's YaRN rope with that base.
    let oss = |base: f32, swa: Option<f32>| {
        let mut kv = vec![
            ("block_count", GgufValue::U32(24)),
            ("attention.key_length", GgufValue::U32(64)),
            ("context_length", GgufValue::U32(131072)),
            ("rope.freq_base", GgufValue::F32(base)),
            ("rope.scaling.type", GgufValue::Str("yarn")),
            ("rope.scaling.factor", GgufValue::F32(32.0)),
            ("rope.scaling.original_context_length", GgufValue::U32(4096)),
        ];
        if let Some(b) = swa {
            kv.push(("rope.freq_base_swa", GgufValue::F32(b)));
        }
        meta("gpt-oss", &kv)
    };
    let m = oss(150_000.0, Some(5e4));
    let rebased = build(&oss(5e4, None), None).unwrap();
    let yarn = build(&m, None).unwrap();
    assert_ne!(rebased, yarn);
    assert_eq!(layer(&m, None, 0).unwrap(), Some(rebased));
    assert_eq!(layer(&m, None, 1).unwrap(), Some(yarn));
    // Without the key, every layer has the file's rope.
    let m = oss(150_000.0, None);
    assert!((0..24).all(|l| layer(&m, None, l).unwrap() == Some(yarn)));
    // Llama 4: the chunked layers (those that rotate) take the key's base.
    let m = meta(
        "llama4",
        &[
            ("block_count", GgufValue::U32(8)),
            ("attention.key_length", GgufValue::U32(128)),
            ("rope.freq_base", GgufValue::F32(5e5)),
            ("rope.freq_base_swa", GgufValue::F32(1e4)),
        ],
    );
    let want = Rope::new(&RopeConfig::new(128, 1e4, Layout::Interleaved)).unwrap();
    assert_eq!(layer(&m, None, 0).unwrap(), Some(want));
    assert_eq!(layer(&m, None, 3).unwrap(), None);
}
