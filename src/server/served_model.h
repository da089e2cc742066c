// The model the server answers with, as the request translation sees it:
// its name, tokenizer, parsed chat template, context length and token trie. Plain data,
// so the request parsers run in unit tests and fuzzers without an engine.
#pragma once
#include <memory>
#include <optional>
#include <string>

#include "chat/template.h"
#include "engine/sampler.h"
#include "model/sampling_defaults.h"
#include "grammar/token_trie.h"
#include "tokenizer/tokenizer.h"

namespace ember::server {

struct ServedModel {
  std::string id;                              // the name clients put in "model"
  const Tokenizer* tok = nullptr;              // never null once the server runs
  std::optional<chat::Template> chat_template;  // absent: the chat routes refuse
  std::shared_ptr<const grammar::TokenTrie> token_trie;  // for constrained output (response_format, forced tool calls)
  int context = 4096;                          // tokens per sequence, prompt and answer together
  int64_t created = 0;                         // unix time the model was loaded ("created" in /v1/models)
  // The model's own default sampling (model/sampling_defaults.h, through
  // model_sampling()): every request starts from it; its own fields win.
  SamplingParams sampling;
  SamplingDefaults sampling_defaults;  // what the model itself set (shown in /v1/models)
};

}  // namespace ember::server
