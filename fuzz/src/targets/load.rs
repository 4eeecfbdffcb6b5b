//! The `load` fuzz target: the readers of a model's files, which take bytes a runtime got from
//! disk or the network: `GgufHeader::parse` + `rope_from_gguf`, and
//! `ropes_from_hf_config_with`. Checked:
//!
//! * nothing panics (overflow checks and debug assertions are on in the fuzz build), and
//!   every error displays;
//! * GGUF: a parsed header's `get` agrees with its `iter` (the first pair of each key), so
//!   `rope_from_gguf` over either lookup builds the same rope or fails on the same key;
//! * every rope either route builds is a usable one: finite, non-negative frequencies (a
//!   frequency of 0 is how llama.cpp's fourth M-RoPE axis leaves pairs unrotated), a finite
//!   positive attention factor; position 0 rotates a head to exactly the attention factor
//!   times it, and a 4k context's last position is accepted exactly when the rope's
//!   `position_limit` allows it; channels outside the rotary window stay untouched;
//! * `config.json`: `get` finds every rope `iter` lists, `single` exactly when there is one,
//!   and `for_layer` is none on a layer that does not rotate, else the single rope or the
//!   rope of the layer's type in `layer_types`;
//! * GGUF: `gguf_layer_rotates` answers the same through either lookup, and never refuses
//!   the architecture of a file `rope_from_gguf` read; `rope_from_gguf_layer` has a usable
//!   rope exactly on the layers that rotate.
//!
//! Input: byte 0 chooses the route (bit 0: GGUF, else JSON) and, for JSON, the options
//! (bit 1: LongRoPE's long factors; bit 2: a dynamic-NTK length from bytes 1–2). For GGUF,
//! byte 1 is a count `k` of f32 frequency factors taken from the next `4k` bytes (none if
//! `k = 0`), and the rest is the file.

use posenc::Rope;
use posenc::load::{
    GgufHeader, GgufValue, HfOptions, gguf_layer_rotates, rope_from_gguf, rope_from_gguf_layer,
    ropes_from_hf_config_with,
};

/// The largest head this target rotates: a file may claim any head size, and a larger claim
/// has its numbers checked without a head being allocated.
const MAX_HEAD: usize = 4096;

pub fn fuzz(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    if mode & 1 == 1 {
        gguf(rest);
    } else {
        json(mode, rest);
    }
}

fn gguf(data: &[u8]) {
    let Some((&k, rest)) = data.split_first() else {
        return;
    };
    let n = (4 * k as usize).min(rest.len());
    let (factor_bytes, file) = rest.split_at(n);
    let factors: Vec<f32> = factor_bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    let factors = (!factors.is_empty()).then_some(factors.as_slice());
    let header = match GgufHeader::parse(file) {
        Ok(h) => h,
        Err(e) => {
            let _ = e.to_string();
            return;
        }
    };
    // `get` and `iter` must agree: the first pair of each key. Compared through `Debug`, which
    // shows a NaN as `NaN` (a file's floats may be NaN, and NaN != NaN).
    let pairs: Vec<(&str, GgufValue<'_>)> = header.iter().collect();
    let first = |key: &str| pairs.iter().find(|(k, _)| *k == key).map(|(_, v)| *v);
    for (k, _) in &pairs {
        let (g, f) = (header.get(k), first(k));
        assert_eq!(
            format!("{g:?}"),
            format!("{f:?}"),
            "get and iter disagree on {k:?}"
        );
    }
    let by_get = rope_from_gguf(|key| header.get(key), factors);
    let by_iter = rope_from_gguf(first, factors);
    assert_eq!(format!("{by_get:?}"), format!("{by_iter:?}"));
    let arch_read = !matches!(&by_iter, Err(e) if e.key == "general.architecture");
    match by_get {
        Ok(rope) => usable(&rope),
        Err(e) => {
            let _ = e.to_string();
        }
    }
    // Which layers rotate: the same answer through either lookup, and an architecture that
    // builds a rope has one on some layers or is refused on none of its own keys.
    for layer in [0, 1, 2, 3, 4, 63, 64, u32::MAX] {
        let by_get = gguf_layer_rotates(|key| header.get(key), layer);
        assert_eq!(
            format!("{by_get:?}"),
            format!("{:?}", gguf_layer_rotates(first, layer))
        );
        // The layer's rope: none exactly where the layer does not rotate, else a usable one.
        match (
            &by_get,
            rope_from_gguf_layer(|key| header.get(key), factors, layer),
        ) {
            (Ok(rotates), Ok(rope)) => {
                assert_eq!(*rotates, rope.is_some(), "layer {layer}");
                if let Some(r) = rope {
                    usable(&r);
                }
            }
            (_, Err(e)) => {
                let _ = e.to_string();
            }
            (Err(_), Ok(r)) => panic!("layer {layer}: a rope {r:?} where the rule failed"),
        }
        if let Err(e) = by_get {
            let _ = e.to_string();
            assert!(
                !(arch_read && e.key == "general.architecture"),
                "{e:?} after {by_iter:?}"
            );
        }
    }
}

fn json(mode: u8, data: &[u8]) {
    let (len_bytes, text) = data.split_at(data.len().min(2));
    let seq_len = match len_bytes {
        [a, b] if mode & 4 != 0 => Some(u32::from(u16::from_le_bytes([*a, *b]))),
        _ => None,
    };
    let options = HfOptions {
        use_long_factors: mode & 2 != 0,
        seq_len,
    };
    let Ok(text) = core::str::from_utf8(text) else {
        return;
    };
    let ropes = match ropes_from_hf_config_with(text, &options) {
        Ok(r) => r,
        Err(e) => {
            let _ = e.to_string();
            return;
        }
    };
    assert!(!ropes.is_empty());
    assert_eq!(ropes.single().is_some(), ropes.len() == 1);
    assert_eq!(ropes.iter().count(), ropes.len());
    for (ty, rope) in ropes.iter() {
        assert_eq!(ropes.get(ty), Some(rope), "layer type {ty:?}");
        usable(rope);
    }
    // A layer's rope: none where it runs without rope (NoPE), else the single one or its
    // type's (none for a type without settings).
    let rope_of = |layer: usize, ty: Option<&String>| {
        if !ropes.rotates(layer) {
            return None;
        }
        ropes.single().or_else(|| ropes.get(ty?))
    };
    for (layer, ty) in ropes.layer_types().iter().enumerate() {
        assert_eq!(
            ropes.for_layer(layer),
            rope_of(layer, Some(ty)),
            "layer {layer} of type {ty:?}"
        );
    }
    let past = ropes.layer_types().len();
    assert_eq!(ropes.for_layer(past), rope_of(past, None));
}

/// A rope built from a file can be used: its numbers are finite and it rotates.
fn usable(rope: &Rope) {
    let f = rope.inv_freq();
    assert_eq!(f.len(), rope.rotary_dim() / 2);
    assert!(f.iter().all(|w| w.is_finite() && *w >= 0.0), "{f:?}");
    let a = rope.attention_factor();
    assert!(a.is_finite() && a > 0.0, "attention factor {a}");
    let d = rope.head_dim();
    assert!(rope.rotary_dim() <= d && rope.rotary_dim().is_multiple_of(2) && rope.rotary_dim() > 0);
    if d > MAX_HEAD {
        return;
    }
    let x: Vec<f32> = (0..d).map(|i| (i % 7) as f32 * 0.25 - 0.75).collect();
    // Position 0: every angle is 0, so each rotated value is the input times the factor.
    let mut y = x.clone();
    rope.apply(&mut y, 1, &[0]).unwrap();
    let (lo, hi) = rotated_range(rope);
    for i in 0..d {
        let want = if (lo..hi).contains(&i) {
            x[i] * a
        } else {
            x[i]
        };
        assert_eq!(y[i].to_bits(), want.to_bits(), "channel {i} at position 0");
    }
    // A 4k context's last position: accepted exactly when the rope's stated position limit
    // allows it (a scaling can make frequencies large), channels outside the window untouched.
    let mut y = x.clone();
    let got = rope.apply(&mut y, 1, &[4095]);
    assert_eq!(got.is_ok(), 4095 <= rope.position_limit(), "{got:?}");
    for i in (0..d).filter(|i| !(lo..hi).contains(i)) {
        assert_eq!(
            y[i].to_bits(),
            x[i].to_bits(),
            "channel {i} outside the rotary window"
        );
    }
}

/// The channels the rope rotates: `rotary_offset .. rotary_offset + rotary_dim`.
fn rotated_range(rope: &Rope) -> (usize, usize) {
    let lo = rope.rotary_offset();
    (lo, lo + rope.rotary_dim())
}
