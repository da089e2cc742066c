// The flags that load a model onto a backend and start the engine, shared by
// `ember run`, `ember batch`, `ember serve` and the C API (src/capi).
#pragma once
#include <memory>
#include <optional>
#include <string>

#include "engine/backend.h"
#include "engine/engine.h"
#include "engine/sampler.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace CLI { class App; class Option; }

namespace ember::cli {

struct EngineFlags {
  std::string model;
  std::string hf;              // --hf OWNER/REPO[:QUANT]: download into the cache, then `model` is that file
  bool offline = false;        // --offline: --hf from the cache only
  std::string backend = "auto";
  std::string kv_type = "f16";
  std::string kv_mem;          // bytes, with an optional K/M/G suffix; empty: the command's default
  std::string cache_host_mem;  // bytes of host memory for evicted prefixes; empty: none
  int64_t ctx = 0;             // when --ctx is given: 1 .. the model's; else min(the model's, 4096)
  CLI::Option* ctx_option = nullptr;
  int threads = 0;
  int parallel = 1;
  int step_tokens = 256;
  int prefill_step_tokens = -1;  // tokens of a step in which no sequence decodes; -1: default_prefill_step_tokens
  bool no_prefix_cache = false;
  int draft_tokens = 0;        // speculative decoding: drafts of up to this many tokens (0: off) ...
  std::string draft_model;     // ... from this model (same tokenizer), else by n-gram lookup
  int prediction_tokens = 0;   // drafts of up to this many tokens from a request's predicted output (0: not used;
                               // only the server and the C API take requests that carry one)
};

void add_engine_flags(CLI::App* cmd, EngineFlags& f);
void add_sampling_flags(CLI::App* cmd, SamplingParams& sp);
// --prediction-tokens, for commands whose requests may carry a prediction (ember serve); sets the default.
void add_prediction_flag(CLI::App* cmd, EngineFlags& f);

// "512M", "2G", "1048576" -> bytes. Throws ember::Error on anything else.
uint64_t parse_bytes(const std::string& text);

// The tokenizer a model carries (GGUF metadata, or tokenizer.json in its folder).
std::optional<Tokenizer> tokenizer_of(const Model& m);

struct LoadedEngine {
  std::string path;  // the model's file
  std::unique_ptr<Model> model;
  // On the heap: the engine keeps a pointer to it, which must survive a move of this struct.
  std::unique_ptr<Tokenizer> tok;
  std::unique_ptr<Backend> backend;
  std::unique_ptr<Engine> engine;
};

// The model's file: --model, or with --hf the cached download (made now when
// missing). Throws ember::Error with neither.
std::string model_path(const EngineFlags& f);

// Loads the model (model_path) and its tokenizer, builds the backend and starts the engine.
// Without --kv-mem, the KV cache is sized for `default_kv_contexts` full
// contexts, or, when that is 0, from the memory available (many cached
// conversations; pages are committed only as blocks fill).
LoadedEngine load_engine(const EngineFlags& f, int default_kv_contexts);

}  // namespace ember::cli
