#!/usr/bin/env bash
# `ember batch` end to end: text and id prompts, per-line sampling fields,
# malformed lines answered with an error object while the rest run, outputs
# equal between --parallel 1 (one at a time, file order), --parallel 4, and
# --parallel 4 with speculative decoding (--draft-tokens 4; and a draft model,
# the model itself).
set -euo pipefail
ember=${1:?usage: batch_test.sh path/to/ember}
src=$(cd "$(dirname "$0")/../.." && pwd)
model="${EMBER_SHARED_DIR:-$src/../shared}/testdata/peer-gguf-qwen3/qwen3-tiny-Q8_0.gguf"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cat >"$work/in.jsonl" <<'JSONL'
{"id": "text", "prompt": "The quick brown fox", "max_tokens": 6}
{"id": 2, "ids": [1656, 1561, 821, 2457], "max_tokens": 5, "temperature": 0.8, "top_k": 20, "seed": 3}
{"ids": [1656, 1561, 821, 2457, 734, 945], "max_tokens": 4}
this line is not JSON
{"id": "both", "prompt": "x", "ids": [1]}
{"id": "bad-id", "ids": [1, 99999999]}
{"id": "stop", "prompt": "The quick brown fox", "max_tokens": 6, "stop": ["zzz-never"]}

{"id": "last", "ids": [5, 6, 7], "max_tokens": 3, "min_p": 0.05, "temperature": 0.5, "top_p": 0.9, "seed": 9}
JSONL

"$ember" batch --model "$model" --in "$work/in.jsonl" --out "$work/p1.jsonl" --parallel 1 --threads 2
"$ember" batch --model "$model" --in "$work/in.jsonl" --out "$work/p4.jsonl" --parallel 4 --threads 2
"$ember" batch --model "$model" --in "$work/in.jsonl" --out "$work/d4.jsonl" --parallel 4 --threads 2 --draft-tokens 4
"$ember" batch --model "$model" --in "$work/in.jsonl" --out "$work/m4.jsonl" --parallel 4 --threads 2 --draft-model "$model"

node - "$work/p1.jsonl" "$work/p4.jsonl" "$work/d4.jsonl" "$work/m4.jsonl" <<'JS'
const fs = require('fs');
const read = f => fs.readFileSync(f, 'utf8').trim().split('\n').map(l => JSON.parse(l));
const [p1, p4, d4, m4] = [2, 3, 4, 5].map(i => read(process.argv[i]));
const fail = m => { console.error('FAIL ' + m); process.exit(1); };
if (p1.length !== 8) fail(`8 results expected, got ${p1.length}`);
const byId = r => Object.fromEntries(r.map(x => [JSON.stringify(x.id), x]));
const a = byId(p1), b = byId(p4), d = byId(d4), m = byId(m4);
for (const id of ['"text"', '2', '3', '"stop"', '"last"']) {
  const r = a[id];
  if (!r || r.error) fail(`${id}: ${r && r.error}`);
  for (const k of ['ids', 'text', 'prompt_tokens', 'cached_tokens', 'finish_reason'])
    if (!(k in r)) fail(`${id}: no ${k}`);
  if (JSON.stringify(r.ids) !== JSON.stringify(b[id].ids)) fail(`${id}: --parallel 1 and 4 differ`);
  if (JSON.stringify(r.ids) !== JSON.stringify(d[id].ids) || r.text !== d[id].text) fail(`${id}: drafts changed the answer`);
  if (JSON.stringify(r.ids) !== JSON.stringify(m[id].ids)) fail(`${id}: a draft model changed the answer`);
}
if (a['"text"'].ids.length !== 6 || a['"text"'].finish_reason !== 'length') fail('max_tokens not honoured');
if (a['3'].prompt_tokens !== 6 || a['3'].ids.length !== 4) fail('line 3 (no id) wrong');
for (const [id, pat] of [['4', /line 4/], ['"both"', /exactly one/], ['"bad-id"', /vocabulary/]])
  if (!a[id] || !pat.test(a[id].error || '')) fail(`${id}: expected an error matching ${pat}, got ${JSON.stringify(a[id])}`);
console.log('batch: 5 results, 3 clear errors, --parallel 1 and 4 agree, with drafts too');
JS
