#!/usr/bin/env python3
"""Predicted throughput of the RoPE hot loop, NEON tier against the portable tier, by llvm-mca.

Static analysis, a guide and never a measurement. Reads the aarch64 build of `examples/asm_probe.rs`
(`.ci/check-asm.sh` makes it), takes the in-place rotate_half whole-vector kernel
(`Rotate<T, T, false, true, true>`) of each dtype from

  * the NEON tier: `posenc::engine::aarch64::neon::run::<Rotate<..>>`, and for bf16 also
    `neon::run_bf16::<Rotate<..>>` (tier `neon-bf16`: CPUs with FEAT_BF16 round with `bfcvtn`);
  * the portable tier: `posenc::engine::dispatch::dispatch::<Rotate<..>>`, which holds the
    scalar and portable tiers inlined (the scalar tier's loops have no `.4s` vector operand);

and in each picks the innermost loop (a backward branch with no loop inside) that stores the
most elements of T per iteration to memory other than the stack. It prints llvm-mca's cycles
per iteration for each CPU model and the cycles per element. A loop that calls functions
(`half`'s one-element conversions in the portable tier) is timed with the calls removed: the
figure is then a lower bound for that tier, and the ratio a lower bound for NEON's advantage.

    bash .ci/check-asm.sh        # builds target/asm-probe/aarch64-unknown-linux-gnu/...
    python3 benches/mca/neon.py [probe binary] [--listing DIR]

Needs `aarch64-linux-gnu-objdump` and `llvm-mca-19` (Debian: binutils-aarch64-linux-gnu,
llvm-19).
"""
import os, re, subprocess, sys

CPUS = ("neoverse-v1", "neoverse-v2", "apple-m4")
DTYPES = (("f32", "f32", 4), ("f16", "half::binary16::f16", 2), ("bf16", "half::bfloat::bf16", 2))


def functions(asm, wanted):
    """{name: [(addr, op, args)]} for the functions whose demangled name is in `wanted`."""
    out, cur = {}, None
    for line in asm.splitlines():
        m = re.match(r"^[0-9a-f]+ <(.*)>:$", line)
        if m:
            cur = m.group(1) if m.group(1) in wanted else None
            if cur:
                out[cur] = []
            continue
        m = cur and re.match(r"^\s+([0-9a-f]+):\s+(\S+)\s*(.*)$", line)
        if m:
            out[cur].append((int(m.group(1), 16), m.group(2), re.sub(r"\s*//.*$", "", m.group(3))))
    return out


def is_branch(op):
    return op in ("b", "cbz", "cbnz", "tbz", "tbnz") or op.startswith("b.")


def inner_loops(ins):
    """Bodies of the innermost loops: a backward branch to an address in the function."""
    index = {a: i for i, (a, _, _) in enumerate(ins)}
    loops = []
    for i, (a, op, args) in enumerate(ins):
        t = re.search(r"\b([0-9a-f]+) <", args)
        if is_branch(op) and t and int(t.group(1), 16) <= a and int(t.group(1), 16) in index:
            loops.append((index[int(t.group(1), 16)], i))
    inner = [l for l in loops if not any(o != l and l[0] <= o[0] and o[1] <= l[1] for o in loops)]
    return [ins[s : e + 1] for s, e in inner]


def stored_bytes(body):
    """Bytes stored per iteration to memory other than the stack."""
    n = 0
    for _, op, args in body:
        if not op.startswith("st") or "[sp" in args:
            continue
        regs = re.findall(r"\b([qdswhxb])\d+\b", args.split("[")[0])
        size = {"q": 16, "d": 8, "x": 8, "s": 4, "w": 4, "h": 2, "b": 1}
        if op in ("strh", "sturh"):
            n += 2
        elif op in ("strb", "sturb"):
            n += 1
        elif regs:
            n += sum(size[r] for r in regs)
        elif "{" in args:  # st1 {v0.4s, v1.4s}
            n += 16 * args.split("}")[0].count("v")
    return n


def mca(body, cpu):
    text = "\n".join(f"{op} {args}" for _, op, args in body if not is_branch(op) and op != "bl")
    # Every model here has FEAT_BF16; spelled out so that `bfcvtn` parses whatever the model.
    r = subprocess.run(
        ["llvm-mca-19", "-mtriple=aarch64", f"-mcpu={cpu}", "-mattr=+bf16", "-iterations=200", "-"],
        input=text + "\n", capture_output=True, text=True, check=True,
    ).stdout
    return int(re.search(r"Total Cycles:\s+(\d+)", r).group(1)) / 200, text


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    listing = sys.argv[sys.argv.index("--listing") + 1] if "--listing" in sys.argv else None
    if listing in args:
        args.remove(listing)
    binary = args[0] if args else "target/asm-probe/aarch64-unknown-linux-gnu/release/examples/asm_probe"
    asm = subprocess.run(
        ["aarch64-linux-gnu-objdump", "-d", "--no-show-raw-insn", "-C", binary],
        capture_output=True, text=True, check=True,
    ).stdout
    kernel = "posenc::engine::rope::Rotate<{t}, {t}, false, true, true>"
    names = {}
    for short, t, _ in DTYPES:
        k = kernel.format(t=t)
        names[(short, "neon")] = f"posenc::engine::aarch64::neon::run::<{k}>"
        names[(short, "portable")] = f"posenc::engine::dispatch::dispatch::<{k}>"
        if short == "bf16":
            names[(short, "neon-bf16")] = f"posenc::engine::aarch64::neon::run_bf16::<{k}>"
    fns = functions(asm, set(names.values()))
    print("| dtype | tier | elements / iteration | calls removed | " + " | ".join(f"{c} cycles / element" for c in CPUS) + " |")
    print("|---|---|---:|---:|" + "---:|" * len(CPUS))
    per = {}
    for short, _, size in DTYPES:
        for tier in ("neon", "neon-bf16", "portable"):
            if (short, tier) not in names:
                continue
            loops = [b for b in inner_loops(fns[names[(short, tier)]]) if any(".4s" in a for _, _, a in b)]
            body = max(loops, key=stored_bytes)
            elems = stored_bytes(body) // size
            if elems == 0:
                # No vector loop stores T: the stores sit in scalar loops of their own (LLVM
                # did not vectorize the conversion), which this picker cannot time.
                print(f"| {short} | {tier} | — | — | " + " | ".join("—" for _ in CPUS) + " |")
                continue
            calls = sum(op == "bl" for _, op, _ in body)
            cyc = []
            for cpu in CPUS:
                c, text = mca(body, cpu)
                cyc.append(c / elems)
            if listing:
                os.makedirs(listing, exist_ok=True)
                with open(os.path.join(listing, f"{short}-{tier}.s"), "w") as f:
                    f.write(text + "\n")
            per[(short, tier)] = cyc
            print(f"| {short} | {tier} | {elems} | {calls} | " + " | ".join(f"{c:.3f}" for c in cyc) + " |")
    print()
    print("| dtype | " + " | ".join(f"{c}: portable / neon" for c in CPUS) + " |")
    print("|---|" + "---:|" * len(CPUS))
    for short, _, _ in DTYPES:
        for tier in ("neon", "neon-bf16"):
            if (short, "portable") not in per or (short, tier) not in per:
                continue
            label = short if tier == "neon" else f"{short} ({tier})"
            print(f"| {label} | " + " | ".join(
                f"{p / n:.2f}" for p, n in zip(per[(short, 'portable')], per[(short, tier)])) + " |")


if __name__ == "__main__":
    main()
