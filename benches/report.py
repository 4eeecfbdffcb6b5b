#!/usr/bin/env python3
"""Markdown tables from criterion's results, one per benchmark group.

    python3 benches/report.py [REGEX] [--dir target/criterion]

Reads every target/criterion/**/new/benchmark.json (group, function, throughput) and the
estimates.json beside it, keeps the groups whose id matches REGEX (default: all), and prints
for each function of a group:

  median     criterion's median time per call
  GB/s       Throughput::Bytes / median (buffer bytes, counted once; see the bench sources)
  × ceiling  median / median of `ceiling` in the same group: 1.00 = as fast as one in-place
             x = x·a + b pass over the same bytes; 3.00 = three times slower
  vs scalar  median of `scalar` / median: the speedup over the reference backend

Results of earlier runs stay in target/criterion until overwritten; each group's table is from
the latest run of each of its functions.
"""

import json
import os
import re
import sys


# Known names first, in the order the benches define them; anything else after, by name.
RANK = {
    name: i
    for i, name in enumerate(
        "rope fill_cos_sin apply_with_table sinusoidal_fill sinusoidal_add "
        "f32 f16 bf16 interleaved rotate_half split".split()
    )
}


def natural(s):
    """Sort key of one id segment: known names by rank, then numbers as numbers
    ("decode_1x32x128" before "prefill_512x32x128")."""
    nums = tuple(int(n) for n in re.findall(r"\d+", s))
    return (RANK.get(s, len(RANK)), nums, s)


def group_key(group_id):
    return [natural(part) for part in group_id.split("/")]


def function_key(item):
    """dispatched first, ceiling last, the backends in between in the order they ran
    (the benches iterate Backend::ALL, so this is scalar, portable, then the x86 tiers)."""
    name, r = item
    return ({"dispatched": 0, "ceiling": 2}.get(name, 1), r["mtime"], name)


def fmt_time(ns):
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if ns >= scale:
            return f"{ns / scale:.3g} {unit}" if ns / scale < 100 else f"{ns / scale:.0f} {unit}"
    return f"{ns:.3g} ns"


def load(root):
    groups = {}
    for dirpath, _dirs, files in os.walk(root):
        if os.path.basename(dirpath) != "new" or "benchmark.json" not in files:
            continue
        try:
            with open(os.path.join(dirpath, "benchmark.json")) as f:
                bench = json.load(f)
            with open(os.path.join(dirpath, "estimates.json")) as f:
                est = json.load(f)
        except (OSError, ValueError):
            continue
        throughput = bench.get("throughput") or {}
        name = bench.get("function_id") or bench.get("value_str") or "?"
        groups.setdefault(bench["group_id"], {})[name] = {
            "median_ns": est["median"]["point_estimate"],
            "bytes": throughput.get("Bytes"),
            "mtime": os.path.getmtime(os.path.join(dirpath, "estimates.json")),
        }
    return groups


def main(argv):
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "target", "criterion")
    root = os.environ.get("CRITERION_HOME", root)
    pattern = None
    args = iter(argv)
    for a in args:
        if a == "--dir":
            root = next(args)
        elif a in ("-h", "--help"):
            print(__doc__)
            return 0
        else:
            pattern = re.compile(a)
    groups = load(root)
    if not groups:
        print(f"no criterion results under {root}; run `cargo bench` first", file=sys.stderr)
        return 1
    shown = 0
    for gid in sorted(groups, key=group_key):
        if pattern and not pattern.search(gid):
            continue
        funcs = groups[gid]
        ceiling = funcs.get("ceiling", {}).get("median_ns")
        scalar = funcs.get("scalar", {}).get("median_ns")
        print(f"### {gid}\n")
        print("| function | median | GB/s | × ceiling | vs scalar |")
        print("|---|---:|---:|---:|---:|")
        for name, r in sorted(funcs.items(), key=function_key):
            t = r["median_ns"]
            gbs = f"{r['bytes'] / t:.2f}" if r["bytes"] else "–"
            vs_ceiling = f"{t / ceiling:.2f}" if ceiling else "–"
            vs_scalar = f"{scalar / t:.2f}×" if scalar and name != "ceiling" else "–"
            print(f"| {name} | {fmt_time(t)} | {gbs} | {vs_ceiling} | {vs_scalar} |")
        print()
        shown += 1
    if not shown:
        print("no group matches", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
