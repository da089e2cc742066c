#!/usr/bin/env python3
"""Where one decode step's device time goes, kernel by kernel.

Reads the CSV that Nsight Compute writes for the graph nodes of a run of
ember_bench_engine, each kernel timed alone:

  ncu --graph-profiling node --clock-control none --cache-control none \\
      --metrics gpu__time_duration.sum --csv --launch-count 2500 \\
      ember_bench_engine --model M --backend cuda --batch 1 --prompt 16 --decode 16 --rounds 1 > step.csv
  bench/cuda/step_kernels.py step.csv [TOKENS]

A decode step runs from the embedding gather to the greedy pick (argmax);
prefill steps (weights decoded to bfloat16 for cuBLAS, flash attention) are
skipped. With TOKENS, only steps of that many tokens count (the embedding
gather's grid), so that a --batch 16 run shows a step of 16 decoding tokens
rather than the single-sequence steps the bench runs after it. Prints, for the
last whole decode step, each kernel's total, share and time per launch, then
one layer's kernels in order. Kernels timed alone pay their whole ramp and
tail, so the sum is above a replayed step, where launches overlap.
"""
import collections
import csv
import re
import sys


def short(name):
    name = re.sub(r"\(.*", "", name)
    for prefix in ("ember::cuda::", "ember::<unnamed>::", "<unnamed>::", "void "):
        name = name.replace(prefix, "")
    return name


def decode_steps(seq, tokens=None, name=lambda k: k[0], grid=lambda k: k[2]):
    """The decode steps of a kernel sequence: each embedding gather to the next
    greedy pick, without prefill kernels (weights decoded to bfloat16 for cuBLAS,
    flash attention); with tokens, only steps of that many tokens (the gather's
    grid: a block per token). Decode steps of several tokens take the
    tensor-core integer products (mma)."""
    steps = []
    for start, k in enumerate(seq):
        if not name(k).startswith("gather_kernel"):
            continue
        end = next((j for j in range(start, len(seq)) if name(seq[j]).startswith("argmax")), None)
        if end is None:
            continue
        if tokens is not None and grid(k) != f"({tokens}, 1, 1)":
            continue
        step = seq[start:end + 1]
        if not any(re.search(r"decode_to_bf16|round_to_bf16|flash_kernel", name(s)) for s in step):
            steps.append(step)
    return steps


def main(path, tokens=None):
    with open(path) as f:
        rows = list(csv.DictReader(line for line in f if line.startswith('"')))
    seq = [(short(r["Kernel Name"]), float(r["Metric Value"].replace(",", "")) / 1000.0, r["Grid Size"]) for r in rows
           if r["Metric Name"] == "gpu__time_duration.sum"]
    steps = decode_steps(seq, tokens)
    if not steps:
        sys.exit("no whole decode step (gather ... argmax without prefill kernels) in " + path)
    step = steps[-1]
    total = sum(s[1] for s in step)
    print(f"{len(steps)} decode steps found; the last: {len(step)} kernels, {total:.1f} us timed alone\n")
    print("| kernel | grid | launches | us | share | us each |\n|---|---|---|---|---|---|")
    agg = collections.defaultdict(lambda: [0, 0.0])
    for name, us, grid in step:
        key = (name, grid if "gemv" in name else "")
        agg[key][0] += 1
        agg[key][1] += us
    for (name, grid), (n, us) in sorted(agg.items(), key=lambda x: -x[1][1]):
        print(f"| {name} | {grid} | {n} | {us:.1f} | {100 * us / total:.1f}% | {us / n:.2f} |")
    # One layer: the kernels between the second and third attention-norm launches.
    norms = [i for i, s in enumerate(step) if s[0].startswith("rmsnorm_round")]
    if len(norms) >= 5:
        print("\none layer, in order:\n\n| kernel | grid | us |\n|---|---|---|")
        for name, us, grid in step[norms[2]:norms[4]]:
            print(f"| {name} | {grid} | {us:.2f} |")


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        sys.exit("usage: step_kernels.py NCU_CSV [TOKENS]")
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) == 3 else None)
