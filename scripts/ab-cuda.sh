#!/usr/bin/env bash
# scripts/ab-cuda.sh OUTDIR — decode speed of two or more builds in one run,
# alternated: the way every "before / after" figure in bench/RESULTS.md is
# measured (figures from different leases differ by ~5%; alternated in one run
# they are comparable to ~1%).
#
# The builds are ember_bench_engine binaries in one folder: ember_bench_engine
# itself ("new") and ember_bench_engine_NAME for each other build ("NAME").
# For each model (generated once, deleted after), each prompt length and each
# round, every build decodes in turn (`ember_bench_engine --decode 64 --rounds 2`);
# OUTDIR/ab.md gets one row per (model, prompt, sequences, build) with every
# round's aggregate tok/s and its share of the roofline, OUTDIR/ab-raw.txt the
# benches' tables.
#
#   EMBER_CUDA_BIN=DIR     the folder of binaries (as scripts/test-cuda.sh: a
#                          cuda-bin.tar.xz there is unpacked first, *-tok.tar.xz
#                          hold the tokenizers); default build-cuda/stage
#   EMBER_AB_BUILDS="old new"                 builds to compare, in this order (default: all in the folder)
#   EMBER_AB_MODELS="dense-1b:Q4_K dense-8b:Q4_K"
#   EMBER_AB_PROMPTS="128 512"                prompt lengths (decode starts after the prompt)
#   EMBER_AB_BATCH=1,16                       sequences decoding at once
#   EMBER_AB_ROUNDS=2
#   EMBER_AB_BACKEND=cuda                     (cpu runs the same comparison on any machine)
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: scripts/ab-cuda.sh OUTDIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)
bin=${EMBER_CUDA_BIN:-build-cuda/stage}
. scripts/use-cuda-bin.sh
use_cuda_bin "$bin"
bin=$(cd "$bin" && pwd)
tokdir=$(mktemp -d)
for t in "$bin"/*-tok.tar.xz; do [ -f "$t" ] && tar -C "$tokdir" -xJf "$t"; done
backend=${EMBER_AB_BACKEND:-cuda}
rounds=${EMBER_AB_ROUNDS:-2}
builds=${EMBER_AB_BUILDS:-$(cd "$bin" && for f in ember_bench_engine_*; do [ -x "$f" ] && echo "${f#ember_bench_engine_}"; done; echo new)}
work=$(mktemp -d)
raw=$out/ab-raw.txt table=$out/ab.md
: >"$raw"
printf '| model | prompt | sequences | build | tok/s per round | %% of roofline per round |\n|---|---|---|---|---|---|\n' >"$table"

binary_of() { [ "$1" = new ] && echo "$bin/ember_bench_engine" || echo "$bin/ember_bench_engine_$1"; }
for b in $builds; do
  [ -x "$(binary_of "$b")" ] || { echo "no build '$b' ($(binary_of "$b"))" >&2; exit 1; }
done

for spec in ${EMBER_AB_MODELS:-dense-1b:Q4_K dense-8b:Q4_K}; do
  preset=${spec%%:*}; quant=${spec##*:}
  model=$work/$preset-$quant.gguf
  tok=$tokdir/$( [ "${preset#dense}" != "$preset" ] && echo llama3 || echo qwen3 )
  tok_args=()
  [ -f "$tok/tokenizer.json" ] && tok_args=(--tokenizer "$tok")
  "$bin/ember" gen-model --preset "$preset" --quant "$quant" -o "$model" "${tok_args[@]}" >"$out/gen-$preset-$quant.log" 2>&1 ||
    { echo "gen-model $spec failed (gen-$preset-$quant.log)" >&2; exit 1; }
  for prompt in ${EMBER_AB_PROMPTS:-128}; do
    declare -A rates=() shares=()
    for r in $(seq "$rounds"); do
      for b in $builds; do
        echo "== $spec prompt $prompt build $b round $r" >>"$raw"
        # The aggregate-decode table's rows: | sequences | tok/s | per sequence | vs 1 | % of roofline | ...
        "$(binary_of "$b")" --model "$model" --backend "$backend" --prompt "$prompt" --decode 64 --rounds 2 \
          --batch "${EMBER_AB_BATCH:-1,16}" 2>/dev/null | tee -a "$raw" |
          awk '/^\| sequences/ {on = /aggregate decode/; next} on && /^\| [0-9]/ {print $2, $4, $10} !/^\|/ {on = 0}' >"$work/rows"
        while read -r seqs rate share; do
          rates[$seqs,$b]+="${rates[$seqs,$b]:+ / }$rate"
          shares[$seqs,$b]+="${shares[$seqs,$b]:+ / }$share"
        done <"$work/rows"
      done
    done
    for seqs in $(echo "${EMBER_AB_BATCH:-1,16}" | tr ',' ' '); do
      for b in $builds; do
        printf '| %s | %s | %s | %s | %s | %s |\n' "$spec" "$prompt" "$seqs" "$b" "${rates[$seqs,$b]:-none}" "${shares[$seqs,$b]:-}" >>"$table"
      done
    done
    unset rates shares
  done
  rm -f "$model"
done
rm -rf "$work" "$tokdir"
cat "$table"
