// `ember run`: a prompt in, streamed text out. The engine with one request.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <iterator>
#include <optional>

#include "backend/cpu/cpu_backend.h"
#include "chat/chat_template.h"
#include "cli/commands.h"
#include "cli/stop_strings.h"
#include "engine/sampler.h"
#include "engine/session.h"
#include "gguf/gguf.h"
#include "tokenizer/cli_commands.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace ember::cli {

namespace {

// The tokenizer a model file carries (GGUF metadata, or tokenizer.json in the folder).
std::optional<Tokenizer> tokenizer_of(const Model& m) {
  if (m.gguf()) {
    if (!m.gguf()->find("tokenizer.ggml.tokens")) return std::nullopt;
    return Tokenizer::from_gguf(*m.gguf());
  }
  if (std::filesystem::exists(std::filesystem::path(m.path()) / "tokenizer.json"))
    return Tokenizer::from_hf_path(m.path());
  return std::nullopt;
}

struct RunOptions {
  std::string model, prompt, ids, system;
  bool chat = false, no_think = false;
  int n = 128, ctx = 0, threads = 0;
  std::vector<std::string> stops;
  SamplingParams sp;
};

void run(const RunOptions& o) {
  auto model = Model::load(o.model);
  const ModelDesc& d = model->desc();
  std::optional<Tokenizer> tok = tokenizer_of(*model);

  std::vector<int32_t> prompt;
  if (!o.ids.empty()) {
    prompt = parse_id_list(o.ids);
  } else {
    if (!tok) throw Error(o.model + " carries no tokenizer: pass token ids with --ids");
    std::string text = o.prompt;
    if (text == "-") text.assign(std::istreambuf_iterator<char>(std::cin), {});
    if (o.chat) {
      if (tok->chat_template().empty()) throw Error(o.model + " has no chat template");
      chat::ChatRequest req;
      req.messages = nlohmann::ordered_json::array();
      if (!o.system.empty()) req.messages.push_back({{"role", "system"}, {"content", o.system}});
      req.messages.push_back({{"role", "user"}, {"content", text}});
      req.add_generation_prompt = true;
      req.kwargs = nlohmann::ordered_json::object();
      if (o.no_think) req.kwargs["enable_thinking"] = false;
      const std::string rendered = chat::render_chat_template(tok->chat_template(), req, tok->bos_token(), tok->eos_token());
      prompt = tok->encode(rendered, /*add_special=*/false, /*parse_special=*/true);
    } else {
      prompt = tok->encode(text, /*add_special=*/true, /*parse_special=*/true);
    }
  }
  if (prompt.empty()) throw Error("the prompt is empty");

  CpuBackendOptions bo;
  bo.max_context = o.ctx > 0 ? o.ctx : std::min(d.max_context, 4096);
  bo.n_threads = o.threads;
  if (int64_t(prompt.size()) >= bo.max_context)
    throw Error("the prompt has " + std::to_string(prompt.size()) + " tokens, the context only " +
                std::to_string(bo.max_context) + " (raise --ctx)");
  CpuBackend backend(*model, bo);
  KvPool kv(d, (bo.max_context + 15) / 16, 16);
  Session session(backend, kv);
  Sampler sampler(o.sp, d.vocab);
  std::optional<StreamDecoder> dec;
  if (tok) dec.emplace(*tok, /*skip_special=*/true);
  StopStringFilter stops(o.stops);

  auto t0 = std::chrono::steady_clock::now();
  const float* logits = session.append(prompt);
  auto t1 = std::chrono::steady_clock::now();
  int generated = 0;
  bool stopped = false;
  while (generated < o.n && !stopped) {
    const int32_t id = sampler.sample(logits, session.tokens());
    ++generated;
    if (tok && tok->is_end_of_generation(id)) break;
    std::string piece = dec ? dec->feed(id) : std::to_string(id) + " ";
    std::string out = stops.push(piece, stopped);
    std::fwrite(out.data(), 1, out.size(), stdout);
    std::fflush(stdout);
    if (stopped || generated == o.n || session.length() + 1 > bo.max_context) break;
    logits = session.append(std::span<const int32_t>(&id, 1));
  }
  if (!stopped) {
    std::string rest = stops.push(dec ? dec->finish() : std::string(), stopped);
    if (!stopped) rest += stops.flush();
    std::fwrite(rest.data(), 1, rest.size(), stdout);
  }
  std::printf("\n");
  auto t2 = std::chrono::steady_clock::now();
  const double prefill_s = std::chrono::duration<double>(t1 - t0).count();
  const double decode_s = std::chrono::duration<double>(t2 - t1).count();
  std::fprintf(stderr, "[prompt %zu tokens, %.1f tok/s | generated %d tokens, %.1f tok/s]\n", prompt.size(),
               prompt.size() / prefill_s, generated, generated > 1 ? (generated - 1) / decode_s : 0.0);
}

}  // namespace

void add_run(CLI::App& app) {
  auto* cmd = app.add_subcommand("run", "Generate text from a prompt");
  static RunOptions o;
  cmd->add_option("prompt", o.prompt, "Prompt text ('-' reads standard input)");
  cmd->add_option("--model,-m", o.model, "GGUF file or Hugging Face folder")->required();
  cmd->add_option("--ids", o.ids, "Prompt as comma-separated token ids instead of text");
  cmd->add_flag("--chat", o.chat, "Wrap the prompt in the model's chat template as a user message");
  cmd->add_option("--system", o.system, "System message (with --chat)");
  cmd->add_flag("--no-think", o.no_think, "Pass enable_thinking=false to the chat template");
  cmd->add_option("-n,--max-tokens", o.n, "Tokens to generate");
  cmd->add_option("--ctx", o.ctx, "Context length (default: min(model's, 4096))");
  cmd->add_option("--threads", o.threads, "CPU threads (0: all)");
  cmd->add_option("--temp,--temperature", o.sp.temperature, "Sampling temperature (0: greedy)");
  cmd->add_option("--top-k", o.sp.top_k, "Top-k (0: off)");
  cmd->add_option("--top-p", o.sp.top_p, "Top-p (1: off)");
  cmd->add_option("--min-p", o.sp.min_p, "Min-p (0: off)");
  cmd->add_option("--repeat-penalty", o.sp.repetition_penalty, "Repetition penalty (1: off)");
  cmd->add_option("--presence-penalty", o.sp.presence_penalty, "Presence penalty");
  cmd->add_option("--frequency-penalty", o.sp.frequency_penalty, "Frequency penalty");
  cmd->add_option("--penalty-last-n", o.sp.penalty_last_n, "Tokens the penalties look back over (-1: all)");
  cmd->add_option("--seed", o.sp.seed, "Random seed");
  cmd->add_option("--stop", o.stops, "Stop string (repeatable)");
  cmd->callback([] {
    if (o.prompt.empty() && o.ids.empty()) throw Error("give a prompt or --ids");
    run(o);
  });
}

}  // namespace ember::cli
