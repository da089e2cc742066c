#include "cli/engine_flags.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <filesystem>

#include "backend/backend_factory.h"
#include "cli/flag_checks.h"
#include "engine/model_drafter.h"
#include "engine/sampling_validation.h"
#include "gguf/gguf.h"
#include "hub/hf_download.h"
#include "util/error.h"

namespace ember::cli {

void add_engine_flags(CLI::App* cmd, EngineFlags& f) {
  auto* model = cmd->add_option("--model,-m", f.model, "GGUF file or Hugging Face folder");
  cmd->add_option("--hf", f.hf, "OWNER/REPO[:QUANT]: a GGUF model from the Hugging Face Hub, downloaded once (HF_TOKEN, HF_ENDPOINT)")
      ->excludes(model);
  cmd->add_flag("--offline", f.offline, "With --hf: use the local cache only");
  cmd->add_option("--backend", f.backend, "cpu, cuda, or auto (CUDA where built and a device is present)");
  f.ctx_option = cmd->add_option("--ctx", f.ctx, "Context length per sequence (default: min(model's, 4096))");
  cmd->add_option("--threads", f.threads, "CPU threads (0: all)")->check(integer_in("threads", 0, max_threads()));
  cmd->add_option("--kv-mem", f.kv_mem, "Bytes for the KV cache, e.g. 2G (default: see the command's help)");
  cmd->add_option("--kv-type", f.kv_type, "KV cache element type: f16, bf16 or f32");
  cmd->add_option("--step-tokens", f.step_tokens, "Tokens per engine step, all sequences together (prompt chunks share it)")
      ->check(integer_in("step tokens", 1, 65536));
  cmd->add_option("--prefill-step-tokens", f.prefill_step_tokens,
                  "Tokens of a step in which no sequence is decoding, only prompts (default: 2048 on CUDA, where longer "
                  "steps prefill far faster; --step-tokens on the CPU)")
      ->check(integer_in("prefill step tokens", 1, 65536));
  cmd->add_flag("--no-prefix-cache", f.no_prefix_cache, "Keep no finished prefixes for reuse");
  cmd->add_option("--cache-host-mem", f.cache_host_mem, "Host memory for prefixes evicted from the KV cache, e.g. 8G (default: none)");
  cmd->add_option("--draft-tokens", f.draft_tokens,
                  "Speculative decoding: up to N tokens a step guessed from earlier text of the same conversation and checked "
                  "in one pass (the output is the same; faster where answers repeat their input; 0: off)")
      ->check(integer_in("draft tokens", 0, EngineOptions::kMaxDraftTokens));
  cmd->add_option("--draft-model", f.draft_model,
                  "Speculative decoding with drafts from this smaller model of the same tokenizer (GGUF file or Hugging Face "
                  "folder), on the same backend; --draft-tokens defaults to 4 with it");
}

void add_prediction_flag(CLI::App* cmd, EngineFlags& f) {
  f.prediction_tokens = EngineOptions{}.prediction_tokens;
  cmd->add_option("--prediction-tokens", f.prediction_tokens,
                  "Up to N tokens a step drafted from a request's predicted output (the OpenAI API's \"prediction\"), also "
                  "where --draft-tokens is 0 (default " + std::to_string(f.prediction_tokens) + "; 0: predictions are not used)")
      ->check(integer_in("prediction tokens", 0, EngineOptions::kMaxDraftTokens));
}

void add_sampling_flags(CLI::App* cmd, SamplingParams& sp) {
  cmd->add_option("--temp,--temperature", sp.temperature, "Sampling temperature (0: greedy)")
      ->check(real_in("temperature", 0, INFINITY));
  cmd->add_option("--top-k", sp.top_k, "Top-k (0: off)")->check(integer_in("top-k", 0, INT32_MAX));
  cmd->add_option("--top-p", sp.top_p, "Top-p (1: off)")->check(real_in("top-p", 0, 1, /*lo_open=*/true));
  cmd->add_option("--min-p", sp.min_p, "Min-p (0: off)")->check(real_in("min-p", 0, 1));
  cmd->add_option("--repeat-penalty", sp.repetition_penalty, "Repetition penalty (1: off)")
      ->check(real_in("repetition penalty", 0, 100, /*lo_open=*/true));
  cmd->add_option("--presence-penalty", sp.presence_penalty, "Presence penalty")->check(real_in("presence penalty", -100, 100));
  cmd->add_option("--frequency-penalty", sp.frequency_penalty, "Frequency penalty")->check(real_in("frequency penalty", -100, 100));
  cmd->add_option("--penalty-last-n", sp.penalty_last_n, "Tokens the penalties look back over (-1: all)")
      ->check(integer_in("penalty window (last n)", -1, INT32_MAX));
  cmd->add_option("--seed", sp.seed, "Random seed");
}

uint64_t parse_bytes(const std::string& text) {
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  std::string unit = text.substr(used);
  std::transform(unit.begin(), unit.end(), unit.begin(), [](unsigned char c) { return char(std::toupper(c)); });
  if (unit.ends_with("IB")) unit.erase(unit.size() - 2);
  else if (unit.ends_with("B")) unit.pop_back();
  double mult = 0;
  if (unit.empty()) mult = 1;
  else if (unit == "K") mult = 1024.0;
  else if (unit == "M") mult = 1024.0 * 1024;
  else if (unit == "G") mult = 1024.0 * 1024 * 1024;
  else if (unit == "T") mult = 1024.0 * 1024 * 1024 * 1024;
  if (used == 0 || mult == 0 || !(v > 0) || v * mult > 1e15)
    throw Error("'" + text.substr(0, 32) + "' is not a size in bytes (examples: 512M, 4G, 1048576)");
  return uint64_t(v * mult);
}

std::optional<Tokenizer> tokenizer_of(const Model& m) {
  if (m.gguf()) {
    if (!m.gguf()->find("tokenizer.ggml.tokens")) return std::nullopt;
    return Tokenizer::from_gguf(*m.gguf());
  }
  if (std::filesystem::exists(std::filesystem::path(m.path()) / "tokenizer.json")) return Tokenizer::from_hf_path(m.path());
  return std::nullopt;
}

std::string model_path(const EngineFlags& f) {
  if (!f.hf.empty()) return hub::fetch_gguf(hub::parse_hf_ref(f.hf), hub::hub_options_from_env(f.offline));
  if (f.model.empty()) throw Error("--model or --hf is required");
  return f.model;
}

namespace {

// The draft model of --draft-model, on a backend of the served model's kind
// with KV blocks for every parallel sequence's context. Its tokenizer must be
// the served model's, token for token: a draft is a list of ids.
std::shared_ptr<Drafter> load_draft_model(const EngineFlags& f, const LoadedEngine& e, const BackendOptions& served) {
  auto model = Model::load(f.draft_model);
  const ModelDesc& d = model->desc();
  const auto tok = tokenizer_of(*model);
  const int32_t n = e.tok ? e.tok->vocab_size() : 0;
  bool same = (tok.has_value() == bool(e.tok)) && d.vocab == e.model->desc().vocab;
  if (same && tok) {
    same = tok->vocab_size() == n;
    for (int32_t id = 0; same && id < n; ++id) same = tok->token_bytes(id) == e.tok->token_bytes(id);
  }
  if (!same) throw Error("--draft-model " + f.draft_model + " does not share the model's tokenizer: its drafts would be other tokens");
  BackendOptions bo = served;
  bo.limits.max_context = std::min<int64_t>(served.limits.max_context, d.max_context);
  bo.limits.max_logit_rows = f.parallel;
  bo.kv_mem = kv_bytes_for(d, bo, bo.limits.max_context) * uint64_t(f.parallel);
  auto backend = make_backend(*model, bo);
  return std::make_shared<ModelDrafter>(std::move(model), std::move(backend), e.model->desc().vocab);
}

}  // namespace

LoadedEngine load_engine(const EngineFlags& f, int default_kv_contexts) {
  check_integer("--parallel", f.parallel, 1, 1024);
  if (f.step_tokens < f.parallel || f.step_tokens > 65536)
    throw Error("--step-tokens must be at least --parallel (" + std::to_string(f.parallel) + ") and at most 65536");
  LoadedEngine e;
  e.path = model_path(f);
  e.model = Model::load(e.path);
  const ModelDesc& d = e.model->desc();
  if (auto t = tokenizer_of(*e.model)) e.tok = std::make_unique<Tokenizer>(std::move(*t));

  BackendOptions bo;
  bo.kind = resolve_backend_kind(f.backend);  // "cpu" or "cuda": the defaults below depend on it
  // Steps with only prompts in them: longer on a GPU (backend_factory.h default_prefill_step_tokens).
  const int prefill_step_tokens = std::max(
      f.step_tokens, f.prefill_step_tokens > 0 ? f.prefill_step_tokens : default_prefill_step_tokens(bo.kind));
  // --ctx given (or, without a command line, a context above 0: the C API).
  const bool ctx_given = f.ctx_option ? f.ctx_option->count() > 0 : f.ctx > 0;
  bo.limits.max_context = resolve_context(ctx_given ? std::optional<int64_t>(f.ctx) : std::nullopt, d.max_context);
  bo.limits.max_tokens = prefill_step_tokens;
  const int draft_tokens = f.draft_tokens > 0 || f.draft_model.empty() ? f.draft_tokens : 4;
  // A drafting sequence's step returns a logit row for each of its tokens: rows
  // for four whole drafts a step (drafts matter most with few sequences, and
  // each row is a vocabulary of floats on the backend).
  const int longest_draft = std::max(draft_tokens, f.prediction_tokens);
  bo.limits.max_logit_rows =
      int(std::min<int64_t>(f.step_tokens, int64_t(f.parallel) + int64_t(std::min(f.parallel, 4)) * longest_draft));
  bo.kv_type = parse_kv_type(f.kv_type);
  bo.n_threads = validate_threads(f.threads);
  if (!f.kv_mem.empty()) bo.kv_mem = parse_bytes(f.kv_mem);
  else if (default_kv_contexts > 0) bo.kv_mem = kv_bytes_for(d, bo, bo.limits.max_context) * uint64_t(default_kv_contexts);
  // else 0: the backend takes a share of the memory available (backend_factory.h)
  e.backend = make_backend(*e.model, bo);

  EngineOptions eo;
  eo.max_running = f.parallel;
  eo.step_tokens = f.step_tokens;
  eo.prefill_step_tokens = prefill_step_tokens;
  eo.prefix_cache = !f.no_prefix_cache;
  eo.draft_tokens = draft_tokens;
  eo.prediction_tokens = f.prediction_tokens;
  if (!f.draft_model.empty()) eo.drafter = load_draft_model(f, e, bo);
  if (!f.cache_host_mem.empty()) eo.cache_host_mem = parse_bytes(f.cache_host_mem);
  e.engine = std::make_unique<Engine>(*e.backend, e.tok.get(), eo);
  return e;
}

}  // namespace ember::cli
