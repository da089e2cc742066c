#!/usr/bin/env bash
# Speculative decoding (--draft-tokens) against plain decoding, through `ember run`:
# greedy answers of 256 tokens to two prompts, rounds interleaved, medians.
#   copy: a passage, then its first lines again, as when an answer repeats its
#         input (editing code, quoting a document);
#   free: the opening of another passage, nothing to repeat.
# Every answer must be byte-identical to the plain one (the script fails otherwise).
#
#   bench/speculation/run.sh [EMBER] [MODEL] [ROUNDS] [BACKEND] [DRAFT_MODEL]
# defaults: build/ember, models/ember-doc-base-Q8_0.gguf, 5, cpu,
# models/ember-doc-draft-Q8_0.gguf with the default model (none otherwise).
# Settings: plain; n-gram drafts of 4 and 8 tokens; the draft model's drafts of 4.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
ember=${1:-$here/build/ember}
model=${2:-$here/models/ember-doc-base-Q8_0.gguf}
rounds=${3:-5}
backend=${4:-cpu}
draft_model=${5:-}
[ -z "$draft_model" ] && [ "$(realpath "$model")" = "$here/models/ember-doc-base-Q8_0.gguf" ] && draft_model=$here/models/ember-doc-draft-Q8_0.gguf
text=$here/tests/data/trained/val-sample.txt
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

head -c 900 "$text" > "$work/passage"
{ cat "$work/passage"; printf '\n\n'; head -c 200 "$work/passage"; } > "$work/copy"
tail -c +20000 "$text" | head -c 400 > "$work/free"

drafts=(0 4 8)
[ -n "$draft_model" ] && drafts+=(m4)
flags() { case $1 in m*) echo "--draft-model $draft_model --draft-tokens ${1#m}" ;; *) echo "--draft-tokens $1" ;; esac; }
for r in $(seq "$rounds"); do
  for p in copy free; do
    for d in "${drafts[@]}"; do
      # shellcheck disable=SC2046
      "$ember" run -m "$model" --backend "$backend" $(flags "$d") -n 256 --temp 0 - < "$work/$p" \
        > "$work/out-$p-$d" 2> "$work/err-$p-$d-$r"
      if ! cmp -s "$work/out-$p-$d" "$work/out-$p-0"; then
        echo "FAIL: $p with --draft-tokens $d differs from plain decoding" >&2
        exit 1
      fi
    done
  done
done

rate() { sed -n 's/.*generated [0-9]* tokens, \([0-9.]*\) tok\/s.*/\1/p' "$@"; }
median() { sort -g | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}'; }
echo "model $(basename "$model"), backend $backend, $rounds rounds, greedy, 256 new tokens; answers identical at every setting"
echo
echo "| prompt | drafts | decode tok/s (median) | vs plain | drafted per generated token | drafts kept |"
echo "|---|---|---|---|---|---|"
for p in copy free; do
  base=$(for r in $(seq "$rounds"); do rate "$work/err-$p-0-$r"; done | median)
  for d in "${drafts[@]}"; do
    tps=$(for r in $(seq "$rounds"); do rate "$work/err-$p-$d-$r"; done | median)
    if [ "$d" = 0 ]; then stats="- | -"; else
      read -r drafted kept < <(sed -n 's/.*drafted \([0-9]*\) tokens, kept \([0-9]*\).*/\1 \2/p' "$work/err-$p-$d-1")
      stats=$(awk -v a="$drafted" -v k="$kept" 'BEGIN {printf "%.2f | %.1f%%", a / 256, a ? 100 * k / a : 0}')
    fi
    case $d in 0) label="none" ;; m*) label="draft model, ${d#m}" ;; *) label="n-gram, $d" ;; esac
    awk -v p="$p" -v d="$label" -v t="$tps" -v b="$base" -v s="$stats" 'BEGIN {printf "| %s | %s | %.1f | %.2fx | %s |\n", p, d, t, t / b, s}'
  done
done
