//! Stack use: every kind of call, on every backend that runs here, on a thread whose stack is
//! the bound the crate docs state (section "Stack use" in `src/lib.rs`). A call that needs more
//! overflows that thread, and the stack overflow aborts this test binary.
//!
//! Optimised builds (this crate's test profile, like release) are held to
//! [`OPTIMISED`]; unoptimised ones (`--config profile.test.opt-level=0`), where every inlined
//! copy keeps stack slots of its own, to [`UNOPTIMISED`]. `POSENC_OPT_LEVEL` is the opt-level
//! posenc's build script saw (it sets it for every target of the package).

mod common;

use common::backends;
use posenc::{
    Backend, BlockQ8_0, Element, Layout, RmsNorm, Rope, RopeConfig, Rounding, Sinusoidal,
    SinusoidalLayout, View, bf16, f16, quantize_q8_0,
};

/// The bound for optimised builds: a staged call's 32 KiB buffer (see `engine::pairs`), the
/// kernels' frames, and this thread's own share (the C library keeps a thread's TLS in its
/// stack), about twice over.
const OPTIMISED: usize = 128 << 10;
/// The bound for unoptimised builds: half of a spawned thread's default stack.
const UNOPTIMISED: usize = 1 << 20;

fn stack() -> usize {
    if env!("POSENC_OPT_LEVEL") == "0" {
        UNOPTIMISED
    } else {
        OPTIMISED
    }
}

/// Runs `f` on a thread with [`stack`] bytes of stack.
fn on_small_stack(f: impl FnOnce() + Send + 'static) {
    std::thread::Builder::new()
        .stack_size(stack())
        .spawn(f)
        .unwrap()
        .join()
        .unwrap();
}

fn values<T: Element>(n: usize) -> Vec<T> {
    (0..n)
        .map(|i| T::from_f32(((i * 37) % 101) as f32 / 25.0 - 2.0))
        .collect()
}

/// Every entry-point family for one dtype `T` on `b`: positions and tables, both layouts,
/// whole and partial rotary, views, rotate-into (a kernel of its own or staged), QK-norm,
/// backward.
fn rope_calls<T: Element>(b: Backend) {
    let (tokens, heads) = (5, 3);
    let positions: Vec<i32> = (0..tokens as i32).map(|t| 1000 + 7 * t).collect();
    for head_dim in [64, 128, 256, 80] {
        for layout in [Layout::Interleaved, Layout::RotateHalf] {
            for rotary in [head_dim, head_dim / 2] {
                let cfg = RopeConfig::new(head_dim, 1e4, layout).rotary_dim(rotary);
                for round in [Rounding::Once, Rounding::HfEager] {
                    let rope = Rope::new(&cfg)
                        .unwrap()
                        .with_backend(b)
                        .unwrap()
                        .with_rounding(round);
                    let n = tokens * heads * head_dim;
                    let mut x = values::<T>(n);
                    rope.apply(&mut x, heads, &positions[..]).unwrap();
                    rope.apply_inverse(&mut x, heads, &positions[..]).unwrap();
                    rope.apply_backward(&mut x, heads, &positions[..]).unwrap();

                    let mut buf = vec![0.0f32; rope.table_len(tokens)];
                    let table = rope.table(&positions[..], &mut buf).unwrap();
                    let mut k = values::<T>(tokens * head_dim);
                    rope.apply_qk(&mut x, heads, &mut k, 1, table).unwrap();

                    let view = View::head_major(heads, tokens, head_dim);
                    rope.apply_views(&mut x, &[view], &positions[..]).unwrap();

                    let w = vec![1.0f32; head_dim];
                    let norm = RmsNorm::per_head(&w, 1e-6);
                    rope.apply_normed(&mut x, heads, &norm, &positions[..])
                        .unwrap();

                    let dst = View::token_major(heads, head_dim);
                    let mut into_f32 = vec![0.0f32; n];
                    rope.apply_into(&x, heads, &mut into_f32, dst, &positions[..])
                        .unwrap();
                    let mut into_f16 = vec![f16::ZERO; n];
                    rope.apply_into(&x, heads, &mut into_f16, dst, &positions[..])
                        .unwrap();
                    let mut into_bf16 = vec![bf16::ZERO; n];
                    rope.apply_into(&x, heads, &mut into_bf16, dst, table)
                        .unwrap();
                }
            }
        }
    }
}

#[test]
fn every_call_fits_the_stated_stack() {
    for b in backends() {
        on_small_stack(move || {
            rope_calls::<f32>(b);
            rope_calls::<f16>(b);
            rope_calls::<bf16>(b);

            let rope = Rope::new(&RopeConfig::new(128, 5e5, Layout::RotateHalf))
                .unwrap()
                .with_backend(b)
                .unwrap();
            let f = values::<f32>(3 * 2 * 128);
            let mut k = vec![BlockQ8_0 { d: 0, qs: [0; 32] }; f.len() / 32];
            quantize_q8_0(&f, &mut k).unwrap();
            rope.shift_q8_0(&mut k, 2, &[-5, -5, -5]).unwrap();

            for layout in [SinusoidalLayout::Interleaved, SinusoidalLayout::Split] {
                let s = Sinusoidal::new(512, 1e4, layout)
                    .unwrap()
                    .with_backend(b)
                    .unwrap();
                s.fill(&mut vec![0.0f32; 9 * 512], 3).unwrap();
                s.fill(&mut vec![f16::ZERO; 9 * 512], 3).unwrap();
                s.fill(&mut vec![bf16::ZERO; 9 * 512], 3).unwrap();
            }
        });
    }
}

/// The loaders too: a `config.json` nested as deep as the JSON parser allows (serde_json stops
/// at 128 levels, a typed error past them) and a GGUF header with arrays nested as deep as its
/// parser allows, each read on the same small stack.
#[cfg(all(feature = "serde", feature = "gguf"))]
#[test]
fn the_loaders_fit_the_stated_stack() {
    use posenc::load::{GgufHeader, ropes_from_hf_config};
    on_small_stack(|| {
        for depth in [100, 126, 127, 500] {
            let json = format!(
                r#"{{"head_dim": 64, "deep": {}{}}}"#,
                "[".repeat(depth),
                "]".repeat(depth)
            );
            let got = ropes_from_hf_config(&json);
            // Within the parser's limit the unknown key is ignored; past it, a JSON error.
            assert_eq!(got.is_ok(), depth <= 126, "depth {depth}: {got:?}");
        }
        // GGUF: a key holding an array of arrays, `depth + 1` arrays deep around one u32.
        for depth in [0, 1, 7, 8, 64] {
            let mut b = b"GGUF".to_vec();
            b.extend(3u32.to_le_bytes());
            b.extend(0u64.to_le_bytes());
            b.extend(1u64.to_le_bytes());
            b.extend(4u64.to_le_bytes());
            b.extend(b"deep");
            b.extend(9u32.to_le_bytes()); // the key's type: array
            for _ in 0..depth {
                b.extend(9u32.to_le_bytes()); // of one array
                b.extend(1u64.to_le_bytes());
            }
            b.extend(4u32.to_le_bytes()); // the innermost: of one u32
            b.extend(1u64.to_le_bytes());
            b.extend(7u32.to_le_bytes());
            let got = GgufHeader::parse(&b);
            // Within the parser's nesting limit the key reads; far past it, a typed error.
            match depth {
                0 | 1 => assert!(got.is_ok(), "depth {depth}: {got:?}"),
                64 => assert!(got.is_err(), "depth {depth}"),
                _ => {}
            }
        }
    });
}
