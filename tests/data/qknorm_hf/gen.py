#!/usr/bin/env python3
"""Golden vectors for QK-norm + RoPE under posenc's Rounding::HfEager (tests/fused.rs).

Emulates, in numpy float32 with explicit rounding to the model dtype, what HuggingFace
transformers computes eagerly for a model dtype T (bf16, f16 or f32):

  norm (read from HF's modeling code):
    Qwen3RMSNorm:  h = x.to(f32); var = h.pow(2).mean(-1); h = h * rsqrt(var + eps)
                   return weight * h.to(T)                       # T-typed product
    Gemma3RMSNorm: out = _norm(x.float()) * (1.0 + weight.float());  return out.type_as(x)
    Olmo2RMSNorm:  ... h = h * rsqrt(var + eps);  return (weight * h).to(T)   # f32 product
  RoPE (apply_rotary_pos_emb, eager): cos/sin of the f32 angle f32(p)*inv_freq, cast to T;
    q*cos + rotate_half(q)*sin, each product and the sum rounded to T.

Two choices where torch's own kernels are not reproducible outside torch, both stated in the
test: `var` is the exact mean of the squares rounded once to f32 (torch accumulates the f32
sum in its own order, which can move the last bit), and cos/sin are the correctly rounded f32
values of the f32 angle (torch's vectorised cos is within an ulp). For that reason there is
no f32 case: neither torch's nor posenc's f32 cos/sin is correctly rounded (posenc's are
within ~1 ulp), so f32 outputs differ from this emulation in the last bit (27 of 384 values
of an f32 OLMo 2 case did); in bf16/f16, HF rounds cos/sin to the model dtype, which absorbs
that difference. `rsqrt` is `1 / sqrt` in
f32 (two roundings), as torch's CPU kernel computes it. Weights are chosen representable in T,
so an f32 weight equals the model's T-typed parameter.

Usage: python3 gen.py > vectors.txt   (numpy only; deterministic seed)
"""
import numpy as np

F32 = np.float32


def round_to(dtype, v):
    """v (float32 array) rounded to dtype (nearest even) and widened back to float32."""
    v = np.asarray(v, dtype=F32)
    if dtype == "f32":
        return v
    if dtype == "f16":
        return v.astype(np.float16).astype(F32)
    u = v.view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return (u.astype(np.uint32) << 16).view(F32)


def bits(dtype, v):
    v = np.asarray(v, dtype=F32)
    if dtype == "f32":
        return v.view(np.uint32)
    if dtype == "f16":
        return v.astype(np.float16).view(np.uint16).astype(np.uint32)
    return (v.view(np.uint32) >> 16).astype(np.uint32)


def norm(kind, dtype, x, w, eps, n_heads, hd):
    """x: tokens x (n_heads*hd) float32 (values of T); returns the norm's T values (as f32)."""
    out = np.empty_like(x)
    for t in range(x.shape[0]):
        row = x[t]
        groups = [row] if kind == "olmo2" else [row[h * hd:(h + 1) * hd] for h in range(n_heads)]
        res = []
        for g in groups:
            var = F32(np.sum(g.astype(np.float64) ** 2) / g.size)
            r = F32(1) / np.sqrt(F32(var + eps))
            h = (g * r).astype(F32)
            if kind == "qwen3":
                y = round_to(dtype, w * round_to(dtype, h))
            elif kind == "gemma3":
                y = round_to(dtype, h * (F32(1) + w).astype(F32))
            else:
                y = round_to(dtype, w * h)
            res.append(y)
        out[t] = np.concatenate(res)
    return out


def rope(dtype, layout, y, pos, inv_freq, n_heads, hd):
    out = np.empty_like(y)
    half = hd // 2
    for t in range(y.shape[0]):
        ang = (F32(pos[t]) * inv_freq).astype(F32)
        c = round_to(dtype, np.cos(ang.astype(np.float64)).astype(F32))
        s = round_to(dtype, np.sin(ang.astype(np.float64)).astype(F32))
        for h in range(n_heads):
            v = y[t, h * hd:(h + 1) * hd]
            if layout == "rotate_half":
                a, b = v[:half], v[half:]
            else:
                a, b = v[0::2], v[1::2]
            ra = round_to(dtype, round_to(dtype, a * c) - round_to(dtype, b * s))
            rb = round_to(dtype, round_to(dtype, b * c) + round_to(dtype, a * s))
            o = np.empty(hd, dtype=F32)
            if layout == "rotate_half":
                o[:half], o[half:] = ra, rb
            else:
                o[0::2], o[1::2] = ra, rb
            out[t, h * hd:(h + 1) * hd] = o
    return out


def inv_freq_of(base, hd):
    # HF's buffer: 1 / base ** (arange(0, hd, 2) / hd), f32 (posenc's Rope::inv_freq agrees;
    # the test builds its rope from these exact values with Rope::from_inv_freq).
    e = (np.arange(0, hd, 2, dtype=np.int64).astype(F32) / F32(hd)).astype(F32)
    return (F32(1) / np.power(np.float64(base), e.astype(np.float64)).astype(F32)).astype(F32)


def hexs(a):
    return " ".join("%x" % int(v) for v in np.asarray(a).ravel())


def main():
    rng = np.random.default_rng(20261201)
    cases = [
        ("qwen3_bf16_hd128", "qwen3", "bf16", 128, 4, "rotate_half", 1e6, 3),
        ("qwen3_f16_hd64_interleaved", "qwen3", "f16", 64, 3, "interleaved", 1e4, 3),
        ("qwen3_bf16_hd20_tails", "qwen3", "bf16", 20, 3, "rotate_half", 1e4, 4),
        ("gemma3_bf16_hd256", "gemma3", "bf16", 256, 2, "rotate_half", 1e6, 2),
        ("gemma3_f16_hd64", "gemma3", "f16", 64, 2, "rotate_half", 1e4, 3),
        ("olmo2_bf16_hd128", "olmo2", "bf16", 128, 4, "rotate_half", 5e5, 3),
        ("olmo2_f16_hd64", "olmo2", "f16", 64, 3, "rotate_half", 5e5, 2),
        ("olmo2_f16_hd36_interleaved", "olmo2", "f16", 36, 2, "interleaved", 1e4, 3),
    ]
    for name, kind, dtype, hd, nh, layout, base, tokens in cases:
        n_w = nh * hd if kind == "olmo2" else hd
        if kind == "gemma3":
            w = round_to(dtype, rng.uniform(-0.5, 1.5, n_w).astype(F32))
        else:
            w = round_to(dtype, rng.uniform(0.25, 2.0, n_w).astype(F32))
        x = round_to(dtype, (rng.standard_normal((tokens, nh * hd)) * 3).astype(F32))
        pos = rng.integers(0, 8000, tokens)
        eps = F32(1e-6)
        invf = inv_freq_of(base, hd)
        y = rope(dtype, layout, norm(kind, dtype, x, w, eps, nh, hd), pos, invf, nh, hd)
        print("name", name)
        print("kind", kind)
        print("dtype", dtype)
        print("head_dim", hd)
        print("n_heads", nh)
        print("layout", layout)
        print("eps", "%x" % int(np.array([eps], dtype=F32).view(np.uint32)[0]))
        print("inv_freq", hexs(invf.view(np.uint32)))
        print("pos", " ".join(str(int(p)) for p in pos))
        print("weight", hexs(w.view(np.uint32)))
        print("x", hexs(bits(dtype, x)))
        print("y", hexs(bits(dtype, y)))
        print()


if __name__ == "__main__":
    main()
