// `ember run`: a prompt in, streamed text out. The engine with one request.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <iterator>

#include "chat/chat_tokens.h"
#include "cli/commands.h"
#include "cli/engine_flags.h"
#include "cli/flag_checks.h"
#include "cli/model_sampling_flags.h"
#include "tokenizer/cli_commands.h"
#include "util/error.h"

namespace ember::cli {

namespace {

struct RunOptions {
  EngineFlags engine;
  std::string prompt, ids, system;
  bool chat = false, no_think = false;
  int n = 128;
  std::vector<std::string> stops;
  SamplingParams sp;
};

std::vector<int32_t> prompt_ids(const RunOptions& o, const LoadedEngine& e) {
  if (!o.ids.empty()) return parse_id_list(o.ids);
  if (!e.tok) throw Error(e.path + " carries no tokenizer: pass token ids with --ids");
  const Tokenizer& tok = *e.tok;
  std::string text = o.prompt;
  if (text == "-") text.assign(std::istreambuf_iterator<char>(std::cin), {});
  if (!o.chat) return tok.encode(text, /*add_special=*/true, /*parse_special=*/true);
  if (tok.chat_template().empty()) throw Error(e.path + " has no chat template");
  chat::ChatRequest req;
  req.messages = nlohmann::ordered_json::array();
  if (!o.system.empty()) req.messages.push_back({{"role", "system"}, {"content", o.system}});
  req.messages.push_back({{"role", "user"}, {"content", text}});
  req.add_generation_prompt = true;
  req.kwargs = nlohmann::ordered_json::object();
  if (o.no_think) req.kwargs["enable_thinking"] = false;
  // Control tokens come only from the template: a message that spells one out stays text.
  return chat::encode_chat(tok, tok.chat_template(), req).ids;
}

void run(RunOptions o, const CLI::App& cmd) {
  // One request and then exit: nothing would ever reuse a cached prefix, and
  // keeping one costs a last step to store the final token.
  o.engine.no_prefix_cache = true;
  LoadedEngine e = load_engine(o.engine, /*default_kv_contexts=*/1);
  apply_model_sampling(cmd, *e.model, o.sp);
  GenerationRequest req;
  req.prompt = prompt_ids(o, e);
  req.max_tokens = o.n;
  req.sampling = o.sp;
  req.stop = o.stops;
  if (!e.tok && !req.stop.empty()) throw Error("--stop needs a model with a tokenizer");

  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  auto stream = e.engine->submit(req);
  RequestUpdate u;
  Clock::time_point t_first{};
  int64_t generated = 0;
  std::string error;
  while (stream->next(u)) {
    if (generated == 0 && !u.tokens.empty()) t_first = Clock::now();
    generated += int64_t(u.tokens.size());
    if (e.tok) {
      std::fwrite(u.text.data(), 1, u.text.size(), stdout);
    } else {
      for (int32_t id : u.tokens) std::printf("%d ", id);
    }
    std::fflush(stdout);
    if (u.finished && u.reason == FinishReason::Error) error = u.error;
  }
  std::printf("\n");
  if (!error.empty()) throw Error(error);
  const auto t2 = Clock::now();
  const double prefill_s = std::chrono::duration<double>(t_first - t0).count();
  const double decode_s = std::chrono::duration<double>(t2 - t_first).count();
  std::string drafts;
  if (o.engine.draft_tokens > 0 || !o.engine.draft_model.empty()) {
    e.engine->wait_idle();  // the stream may end inside the step whose counts are not in stats() yet
    const EngineStats st = e.engine->stats();
    drafts = " | drafted " + std::to_string(st.draft_tokens) + " tokens, kept " + std::to_string(st.accepted_tokens);
  }
  std::fprintf(stderr, "[prompt %zu tokens, %.1f tok/s | generated %lld tokens, %.1f tok/s%s]\n", req.prompt.size(),
               double(req.prompt.size()) / prefill_s, (long long)generated,
               generated > 1 ? double(generated - 1) / decode_s : 0.0, drafts.c_str());
}

}  // namespace

void add_run(CLI::App& app) {
  auto* cmd = app.add_subcommand("run", "Generate text from a prompt");
  static RunOptions o;
  cmd->add_option("prompt", o.prompt, "Prompt text ('-' reads standard input)");
  add_engine_flags(cmd, o.engine);
  cmd->add_option("--ids", o.ids, "Prompt as comma-separated token ids instead of text");
  cmd->add_flag("--chat", o.chat, "Wrap the prompt in the model's chat template as a user message");
  cmd->add_option("--system", o.system, "System message (with --chat)");
  cmd->add_flag("--no-think", o.no_think, "Pass enable_thinking=false to the chat template");
  cmd->add_option("-n,--max-tokens", o.n, "Tokens to generate")->check(integer_in("max tokens", 1, INT32_MAX));
  add_sampling_flags(cmd, o.sp);
  cmd->add_option("--stop", o.stops, "Stop string (repeatable)");
  cmd->callback([cmd] {
    if (o.prompt.empty() && o.ids.empty()) throw Error("give a prompt or --ids");
    run(o, *cmd);
  });
}

}  // namespace ember::cli
