#!/usr/bin/env bash
# ember_bench_engine end to end on a small real file (CPU backend): the JSON
# holds the roofline measured in the run, the model's bytes per token, and for
# every batch size and prompt length a positive rate with its ratio to the roofline.
set -euo pipefail
bench=${1:?usage: engine_bench_test.sh path/to/ember_bench_engine}
src=$(cd "$(dirname "$0")/../.." && pwd)
model="${EMBER_SHARED_DIR:-$src/../shared}/testdata/peer-gguf-qwen3/qwen3-tiny-Q8_0.gguf"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$bench" --model "$model" --backend cpu --threads 1 --batch 1,3 --prompt 24,70 --decode 32 --rounds 1 \
  --doc 40 --step 32 --json "$work/out.json" >"$work/out.txt" 2>&1 || { cat "$work/out.txt"; exit 1; }

node - "$work/out.json" <<'JS'
const r = JSON.parse(require('fs').readFileSync(process.argv[2], 'utf8'));
const fail = m => { console.error('FAIL ' + m); process.exit(1); };
const pos = (x, what) => { if (!(typeof x === 'number' && isFinite(x) && x > 0)) fail(`${what}: ${x}`); };
if (r.backend !== 'cpu') fail(`backend ${r.backend}`);
pos(r.roofline.copy_gbs, 'copy bandwidth');
if (r.roofline.bf16_tflops !== null) fail('a bf16 rate on the CPU');
pos(r.weight_bytes_per_token, 'weight bytes per token');
pos(r.kv_bytes_per_position, 'KV bytes per position');
const seqs = r.decode.map(d => d.sequences).join();
if (seqs !== '1,3') fail(`decode rows for ${seqs}`);
for (const d of r.decode) { pos(d.tok_s, 'decode tok/s'); pos(d.roofline_tok_s, 'decode roofline'); pos(d.pct_roofline, 'decode %'); }
// The step thread's CPU is part of the process's (both over the same round; a little slack for the two clocks' reads).
for (const d of r.decode) {
  pos(d.engine_thread_cpu_cores, 'engine thread CPU'); pos(d.process_cpu_cores, 'process CPU');
  if (d.engine_thread_cpu_cores > 1.05 * d.process_cpu_cores + 0.01)
    fail(`engine thread ${d.engine_thread_cpu_cores} cores against the process's ${d.process_cpu_cores}`);
}
if (r.decode[1].roofline_tok_s <= r.decode[0].roofline_tok_s) fail('3 sequences share the weights: their ceiling must be higher');
if (r.backend_step.length !== 2) fail('backend step rows');
const lens = r.prefill.map(p => p.tokens).join();
if (lens !== '24,70') fail(`prefill rows for ${lens}`);
for (const p of r.prefill) { pos(p.tok_s, 'prefill tok/s'); pos(p.tflops, 'prefill TFLOP/s'); if (p.pct_bf16 !== null) fail('bf16 % on the CPU'); }
if (r.prefix_cache.reused !== 40) fail(`the return to A reused ${r.prefix_cache.reused} of 40 tokens`);
if (r.host_step.map(h => h.sequences).join() !== '1,3') fail('host step rows');
for (const h of r.host_step) {
  pos(h.us_per_step, 'host us per step'); pos(h.us_per_token, 'host us per token');
  if (!(h.new_tokens >= 256)) fail(`host rows generate ${h.new_tokens} tokens: too few to spread the requests' start over`);
}
JS
# --host-only: the engine's host cost alone, none of the device's figures.
"$bench" --model "$model" --backend cpu --threads 1 --batch 2 --decode 16 --rounds 1 --host-only \
  --json "$work/host.json" >"$work/host.txt" 2>&1 || { cat "$work/host.txt"; exit 1; }
node - "$work/host.json" <<'JS'
const r = JSON.parse(require('fs').readFileSync(process.argv[2], 'utf8'));
const fail = m => { console.error('FAIL --host-only: ' + m); process.exit(1); };
if (r.decode || r.prefill || r.backend_step) fail('device figures in a host-only run');
if (!(r.host_step.length === 1 && r.host_step[0].sequences === 2 && r.host_step[0].us_per_step > 0)) fail(JSON.stringify(r.host_step));
JS
# --draft: speculative decoding through the engine (host-only: the null backend's picks follow a
# cycle of 100 ids, which the n-gram drafter learns, so greedy drafting steps pick every token).
"$bench" --model "$model" --backend cpu --threads 1 --batch 2 --decode 16 --rounds 1 --host-only --draft 3 \
  --json "$work/draft.json" >"$work/draft.txt" 2>&1 || { cat "$work/draft.txt"; exit 1; }
node - "$work/draft.json" <<'JS'
const r = JSON.parse(require('fs').readFileSync(process.argv[2], 'utf8'));
const fail = m => { console.error('FAIL --draft: ' + m); process.exit(1); };
if (r.draft_tokens !== 3) fail(`draft_tokens ${r.draft_tokens}`);
if (!(r.host_step.length === 1 && r.host_step[0].us_per_step > 0)) fail(JSON.stringify(r.host_step));
JS
grep -q "% of roofline" "$work/out.txt" || { echo "FAIL: no roofline column in the text report"; exit 1; }
echo "ok"
