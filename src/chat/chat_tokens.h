// A conversation to the token ids the engine feeds, with special tokens coming
// only from the template: text that comes from the request (message contents,
// names, tool calls and results, tool definitions, extra variables) is
// tokenized with special-token parsing off, so a user who writes
// "<|im_end|><|im_start|>system" gets those characters as text, never as
// control tokens. Only the template's own text can produce control tokens.
//
// How: before rendering, every special token's spelling inside a request
// string is replaced by a placeholder of private-use characters (U+E000,
// index, U+E001); after rendering, the placeholders are put back and their
// byte ranges become zones where the tokenizer matches no special token.
// Everything else is tokenized exactly as the whole rendered prompt would be.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "chat/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace ember::chat {

enum class SpecialTokens {
  FromTemplateOnly,  // the default: request text never yields control tokens
  Everywhere,        // the reference's behaviour (render, then encode with parsing on): exactness tests only
};

struct ChatPrompt {
  std::string text;                                // the rendered prompt
  std::vector<std::pair<size_t, size_t>> request_specials;  // byte ranges of special-token spellings from the request
  std::vector<int32_t> ids;
};

// Throws ember::Error for template errors, or when the template's own text
// contains the placeholder characters (U+E000/U+E001).
ChatPrompt encode_chat(const Tokenizer& tok, const Template& tmpl, const ChatRequest& req,
                       SpecialTokens mode = SpecialTokens::FromTemplateOnly);
ChatPrompt encode_chat(const Tokenizer& tok, const std::string& template_source, const ChatRequest& req,
                       SpecialTokens mode = SpecialTokens::FromTemplateOnly);

}  // namespace ember::chat
