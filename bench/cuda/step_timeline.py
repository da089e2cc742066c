#!/usr/bin/env python3
"""What each kernel of a decode step costs in place, from a timeline of a real run.

Reads the CSV that bench/cuda/kernel_trace.cpp writes (every kernel's start and
end on the device, CUDA Graph nodes included):

  EMBER_KERNEL_TRACE=trace.csv LD_PRELOAD=build/bench/cuda/libember_kernel_trace.so \\
      ember_bench_engine --model M --backend cuda --batch 1 --prompt 128 --decode 64 --rounds 1
  bench/cuda/step_timeline.py trace.csv [TOKENS]

A decode step runs from the embedding gather to the greedy pick (argmax);
steps with prefill kernels are skipped, and with TOKENS only steps of that
many tokens count (the gather's grid). Over the decode steps of the most common
length (the first two left out), per kernel of the step, medians in us:

  in place  its end minus the end of the kernel before it: what it adds to the step
  early     how long before that end it started (programmatic dependent launch)
  span      its end minus its start

Prints the step's length, the in-place time by kernel, then one middle layer in
order. step_kernels.py (Nsight Compute) times each kernel alone instead, where
it pays its whole ramp and tail.
"""
import collections
import csv
import re
import statistics
import sys

from step_kernels import decode_steps


def short(name):
    """A demangled kernel name without namespaces, casts in template arguments or parameters."""
    name = name.replace("(anonymous namespace)::", "")
    name = re.sub(r"\((?:\w+::)*\w+\)(-?\d+)", r"\1", name)  # (ember::GgmlType)12 -> 12
    depth = 0
    for i, c in enumerate(name):
        if c == "<":
            depth += 1
        elif c == ">":
            depth -= 1
        elif c == "(" and depth == 0:
            name = name[:i]
            break
    for prefix in ("void ", "ember::cuda::", "ember::"):
        name = name.replace(prefix, "")
    return name


def read(path):
    with open(path) as f:
        rows = [(int(r["start_ns"]), int(r["end_ns"]), short(r["name"]),
                 f"({r['grid_x']}, {r['grid_y']}, {r['grid_z']})") for r in csv.DictReader(f)]
    rows.sort()
    return rows


def main(path, tokens=None):
    steps = decode_steps(read(path), tokens, name=lambda k: k[2], grid=lambda k: k[3])
    if len(steps) < 3:
        sys.exit(f"fewer than three whole decode steps (gather ... argmax without prefill kernels) in {path}")
    length = collections.Counter(len(s) for s in steps[2:]).most_common(1)[0][0]
    steps = [s for s in steps[2:] if len(s) == length and [k[2] for k in s] == [k[2] for k in steps[-1]]]
    us = 1e-3
    med = lambda xs: statistics.median(xs) * us
    total = med([s[-1][1] - s[0][0] for s in steps])
    in_place = [med([s[0][1] - s[0][0] for s in steps])]
    early = [0.0]
    for i in range(1, length):
        in_place.append(med([s[i][1] - s[i - 1][1] for s in steps]))
        early.append(med([s[i - 1][1] - s[i][0] for s in steps]))
    span = [med([s[i][1] - s[i][0] for s in steps]) for i in range(length)]
    step = steps[-1]
    print(f"{len(steps)} decode steps of {length} kernels; a step takes {total:.1f} us "
          f"(first kernel's start to last kernel's end, median)\n")
    print("| kernel | grid | launches | in place, us | share | us each |\n|---|---|---|---|---|---|")
    agg = collections.defaultdict(lambda: [0, 0.0])
    for i, k in enumerate(step):
        key = (k[2], k[3] if "gemv" in k[2] or "experts" in k[2] else "")
        agg[key][0] += 1
        agg[key][1] += in_place[i]
    whole = sum(in_place)
    for (name, grid), (n, t) in sorted(agg.items(), key=lambda x: -x[1][1]):
        print(f"| {name} | {grid} | {n} | {t:.1f} | {100 * t / whole:.1f}% | {t / n:.2f} |")
    # A middle layer: from its attention norm to the next layer's (two norms a layer).
    norms = [i for i, k in enumerate(step) if k[2].startswith("rmsnorm_round")]
    layers = (len(norms) - 1) // 2
    if layers >= 2:
        a, b = norms[2 * (layers // 2)], norms[2 * (layers // 2) + 2]
        print(f"\nlayer {layers // 2}, in order ({sum(in_place[a:b]):.1f} us in place):\n")
        print("| kernel | grid | in place | early | span |\n|---|---|---|---|---|")
        for i in range(a, b):
            print(f"| {step[i][2]} | {step[i][3]} | {in_place[i]:.2f} | {early[i]:.2f} | {span[i]:.2f} |")


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        sys.exit("usage: step_timeline.py KERNEL_TRACE_CSV [TOKENS]")
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) == 3 else None)
