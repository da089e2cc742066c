#!/bin/sh
# Encode throughput of ember's tokenizers next to @huggingface/tokenizers, same
# text, same machine, one thread each. Prints a Markdown table.
#   bench/tokenizer/run.sh BUILD_DIR
set -e
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build}
bin=$(find "$build" -name tokenizer_bench -type f | head -1)
[ -x "$bin" ] || { echo "tokenizer_bench not built in $build (ninja tokenizer_bench)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$root/tools/oracle" && node tok_bench.mjs --make-text "$tmp/text.txt" && node tok_bench.mjs "$tmp/text.txt") > "$tmp/ref.jsonl"
taskset -c 0 "$bin" "$tmp/text.txt" > "$tmp/ember.jsonl" 2>/dev/null || "$bin" "$tmp/text.txt" > "$tmp/ember.jsonl"
node -e '
const fs = require("fs");
const read = (p) => Object.fromEntries(fs.readFileSync(p, "utf8").trim().split("\n").map((l) => JSON.parse(l)).map((r) => [r.model, r]));
const ref = read(process.argv[1]), ours = read(process.argv[2]);
console.log("| tokenizer | text | ember MB/s | reference MB/s | speed-up | same ids count | ~128K-token prompt (ember, cold) |");
console.log("|---|---|---|---|---|---|---|");
for (const m of Object.keys(ours)) {
  const o = ours[m], r = ref[m];
  console.log(`| ${m} | ${(o.bytes / 1048576).toFixed(2)} MiB, ${o.tokens} tokens | ${o.mb_per_s.toFixed(1)} | ${r.mb_per_s.toFixed(2)} | ${(o.mb_per_s / r.mb_per_s).toFixed(1)}x | ${o.tokens === r.tokens ? "yes" : "NO (" + r.tokens + ")"} | ${o.prompt_tokens} tokens in ${o.prompt_ms.toFixed(1)} ms |`);
}' "$tmp/ref.jsonl" "$tmp/ember.jsonl"
