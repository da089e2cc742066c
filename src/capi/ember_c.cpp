// The C API of include/ember.h over the engine: the model is loaded as the
// command line loads it (cli/engine_flags.h), requests go to the same Engine,
// and each C++ exception becomes a NULL or -1 and a message for
// ember_last_error() on the calling thread. Nothing here throws across the C
// boundary.
#include "ember.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "chat/chat_tokens.h"
#include "cli/engine_flags.h"
#include "engine/engine.h"
#include "util/error.h"

struct ember_engine {
  ember::cli::LoadedEngine loaded;
};

struct ember_request {
  std::shared_ptr<ember::RequestStream> stream;
  ember::RequestUpdate update;  // the last update, which `view`'s pointers point into
  ember_update view{};
};

namespace {

thread_local std::string g_error;

// Runs f; an exception becomes the thread's error message and `failed` is returned.
template <class R, class F>
R guarded(R failed, F&& f) {
  g_error.clear();
  try {
    return f();
  } catch (const std::exception& e) {
    g_error = e.what();
  } catch (...) {
    g_error = "unknown error";
  }
  return failed;
}

void require(bool ok, const char* what) {
  if (!ok) throw ember::Error(what);
}

// Copies ids into out (at most cap) and returns how many there are.
int64_t give_ids(const std::vector<int32_t>& ids, int32_t* out, int64_t cap) {
  require(cap >= 0 && (out || cap == 0), "the output buffer is NULL with room for ids");
  std::copy_n(ids.begin(), std::min<int64_t>(cap, int64_t(ids.size())), out);
  return int64_t(ids.size());
}

const ember::Tokenizer& tokenizer_of(const ember_engine* e) {
  require(e, "the engine is NULL");
  require(e->loaded.tok != nullptr, "the model has no tokenizer");
  return *e->loaded.tok;
}

ember_finish_reason reason_of(ember::FinishReason r) {
  switch (r) {
    case ember::FinishReason::Stop: return EMBER_FINISH_STOP;
    case ember::FinishReason::Length: return EMBER_FINISH_LENGTH;
    case ember::FinishReason::Cancelled: return EMBER_FINISH_CANCELLED;
    case ember::FinishReason::Error: return EMBER_FINISH_ERROR;
    default: return EMBER_FINISH_NONE;
  }
}

}  // namespace

extern "C" {

const char* ember_last_error(void) { return g_error.c_str(); }

int ember_api_version(void) { return EMBER_API_VERSION; }

void ember_engine_options_init(ember_engine_options* o) {
  if (!o) return;
  *o = ember_engine_options{};
  o->size = sizeof *o;
  o->parallel = 1;
  o->prediction_tokens = ember::EngineOptions{}.prediction_tokens;
}

ember_engine* ember_engine_load(const ember_engine_options* o) {
  return guarded<ember_engine*>(nullptr, [&]() -> ember_engine* {
    require(o, "the options are NULL");
    require(o->size == sizeof(ember_engine_options), "the options were not set up by ember_engine_options_init");
    require(o->model && *o->model, "options.model is required");
    ember::cli::EngineFlags f;
    f.model = o->model;
    if (o->backend) f.backend = o->backend;
    require(o->context >= 0, "options.context must be 0 (the model's, at most 4,096) or more");
    f.ctx = o->context;
    f.parallel = o->parallel > 0 ? o->parallel : 1;
    f.step_tokens = std::max(f.step_tokens, f.parallel);
    require(o->threads >= 0, "options.threads must be 0 (all) or more");
    f.threads = o->threads;
    if (o->kv_mem) f.kv_mem = o->kv_mem;
    f.draft_tokens = o->draft_tokens;
    f.prediction_tokens = o->prediction_tokens;
    for (int n : {f.draft_tokens, f.prediction_tokens})
      require(n >= 0 && n <= ember::EngineOptions::kMaxDraftTokens, "draft_tokens and prediction_tokens must be 0 to 32");
    auto e = std::make_unique<ember_engine>();
    e->loaded = ember::cli::load_engine(f, f.parallel);
    return e.release();
  });
}

void ember_engine_free(ember_engine* e) { delete e; }

int64_t ember_vocab_size(const ember_engine* e) {
  return guarded<int64_t>(-1, [&] {
    require(e, "the engine is NULL");
    return int64_t(e->loaded.model->desc().vocab);
  });
}

int64_t ember_context_size(const ember_engine* e) {
  return guarded<int64_t>(-1, [&] {
    require(e, "the engine is NULL");
    return int64_t(e->loaded.backend->limits().max_context);
  });
}

int64_t ember_tokenize(ember_engine* e, const char* text, size_t len, int add_special, int32_t* out, int64_t cap) {
  return guarded<int64_t>(-1, [&] {
    require(text || len == 0, "the text is NULL");
    const std::string s(text ? text : "", len);
    return give_ids(tokenizer_of(e).encode(s, add_special != 0, add_special != 0), out, cap);
  });
}

int64_t ember_detokenize(ember_engine* e, const int32_t* ids, int64_t n, char* out, int64_t cap) {
  return guarded<int64_t>(-1, [&] {
    require(n >= 0 && (ids || n == 0), "the ids are NULL");
    require(cap >= 0 && (out || cap == 0), "the output buffer is NULL with room for text");
    const ember::Tokenizer& tok = tokenizer_of(e);
    for (int64_t i = 0; i < n; ++i)
      require(ids[i] >= 0 && ids[i] < tok.vocab_size(), "a token id is outside the vocabulary");
    const std::string s = tok.decode(std::vector<int32_t>(ids, ids + n), /*skip_special=*/true);
    if (cap > 0) {
      const size_t k = std::min<size_t>(size_t(cap) - 1, s.size());
      std::memcpy(out, s.data(), k);
      out[k] = '\0';
    }
    return int64_t(s.size());
  });
}

int64_t ember_chat_prompt(ember_engine* e, const char* messages_json, int32_t* out, int64_t cap) {
  return guarded<int64_t>(-1, [&] {
    const ember::Tokenizer& tok = tokenizer_of(e);
    require(!tok.chat_template().empty(), "the model has no chat template");
    require(messages_json, "the messages are NULL");
    ember::chat::ChatRequest req;
    try {
      req.messages = nlohmann::ordered_json::parse(messages_json);
    } catch (const nlohmann::json::exception& x) {
      throw ember::Error(std::string("the messages are not JSON: ") + x.what());
    }
    require(req.messages.is_array() && !req.messages.empty(), "the messages must be a non-empty JSON array");
    for (const auto& m : req.messages)
      require(m.is_object() && m.contains("role") && m["role"].is_string(), "each message needs a \"role\" string");
    return give_ids(ember::chat::encode_chat(tok, tok.chat_template(), req).ids, out, cap);
  });
}

void ember_generate_params_init(ember_generate_params* p) {
  if (!p) return;
  *p = ember_generate_params{};
  p->size = sizeof *p;
  p->max_tokens = 256;
  p->top_p = 1.0f;
}

ember_request* ember_generate(ember_engine* e, const ember_generate_params* p) {
  return guarded<ember_request*>(nullptr, [&]() -> ember_request* {
    require(e, "the engine is NULL");
    require(p, "the parameters are NULL");
    require(p->size == sizeof(ember_generate_params), "the parameters were not set up by ember_generate_params_init");
    require(p->max_tokens > 0, "max_tokens must be at least 1");
    require(p->prompt && p->n_prompt > 0, "the prompt is empty");
    require(p->n_stop >= 0 && (p->stop || p->n_stop == 0), "the stop strings are NULL");
    require(p->n_prediction >= 0 && (p->prediction || p->n_prediction == 0), "the prediction is NULL");
    ember::GenerationRequest g;
    g.prompt.assign(p->prompt, p->prompt + p->n_prompt);
    g.max_tokens = p->max_tokens;
    g.sampling.temperature = p->temperature;
    g.sampling.top_k = p->top_k;
    g.sampling.top_p = p->top_p;
    g.sampling.min_p = p->min_p;
    g.sampling.seed = p->seed;
    for (int i = 0; i < p->n_stop; ++i) {
      require(p->stop[i] != nullptr, "a stop string is NULL");
      g.stop.emplace_back(p->stop[i]);
    }
    if (p->n_prediction > 0) g.prediction.assign(p->prediction, p->prediction + p->n_prediction);
    // The engine refuses what it cannot run (ids outside the vocabulary, a prompt past the context, bad sampling).
    auto r = std::make_unique<ember_request>();
    r->stream = e->loaded.engine->submit(std::move(g));
    return r.release();
  });
}

int ember_request_next(ember_request* r, const ember_update** out) {
  return guarded<int>(-1, [&] {
    require(r && out, "the request or the update pointer is NULL");
    if (!r->stream->next(r->update)) return 0;
    const ember::RequestUpdate& x = r->update;
    ember_update* u = &r->view;
    *u = ember_update{};
    u->tokens = x.tokens.data();
    u->n_tokens = int64_t(x.tokens.size());
    u->text = x.text.c_str();
    u->text_len = int64_t(x.text.size());
    u->finished = x.finished ? 1 : 0;
    u->reason = x.finished ? reason_of(x.reason) : EMBER_FINISH_NONE;
    u->error = x.error.c_str();
    u->prompt_tokens = x.prompt_tokens;
    u->cached_tokens = x.cached_tokens;
    u->prediction_kept = x.prediction_kept;
    u->prediction_dropped = x.prediction_dropped;
    *out = u;
    return 1;
  });
}

void ember_request_cancel(ember_request* r) {
  if (r) r->stream->cancel();
}

void ember_request_free(ember_request* r) {
  if (!r) return;
  r->stream->cancel();  // a no-op once it finished; frees its blocks at the engine's next step otherwise
  delete r;
}

}  // extern "C"
