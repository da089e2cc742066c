// Tool calls in a model's own words, found in its answer: the format comes
// from the chat template, the parser works over streamed pieces and holds
// back text that may still turn into a call.
//
// Formats:
// - Tagged (Qwen3, Qwen2.5, Hermes): anywhere in the answer,
//   <tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>, any number of times;
// - Llama 3 JSON (Llama 3.1 / 3.2): the whole answer is {"name": ..., "parameters": {...}}
//   (the <|python_tag|> control token before it is dropped by decoding), or several
//   such objects separated by ";".
// A call whose JSON does not parse, or lacks a name, stays in the text as written.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "server/json_fields.h"

namespace ember::server {

enum class ToolCallFormat { None, Tagged, Llama3Json };

// Which format a chat template teaches its model (None when it shows no tool calls).
ToolCallFormat tool_call_format(std::string_view chat_template);

struct ToolCall {
  std::string id;         // "call_…" (the Anthropic routes use their own prefix)
  std::string name;
  std::string arguments;  // JSON text of the arguments object
};

struct ToolCallPiece {
  std::string text;              // answer text that is not a call
  std::vector<ToolCall> calls;   // calls completed in this piece
};

class ToolCallParser {
 public:
  explicit ToolCallParser(ToolCallFormat f, std::string id_prefix = "call_") : format_(f), id_prefix_(std::move(id_prefix)) {}
  ToolCallPiece push(std::string_view text);
  ToolCallPiece finish();  // what was held back, at the end of generation
  // push(text), then with `last` also finish(), as one piece.
  ToolCallPiece take(std::string_view text, bool last);
  bool called() const { return called_; }  // any call so far

 private:
  ToolCallPiece route(bool at_end);
  ToolCallPiece tagged(bool at_end);
  ToolCallPiece llama3(bool at_end);
  bool add_call(const json& call, ToolCallPiece& out);

  ToolCallFormat format_;
  std::string id_prefix_;
  std::string held_;
  bool in_call_ = false;      // Tagged: inside <tool_call> … </tool_call>
  bool decided_ = false;      // Llama3Json: the answer's first character was seen
  bool json_answer_ = false;  // Llama3Json: it was "{", so the answer is held to the end
  bool called_ = false;
};

// A whole answer at once.
ToolCallPiece parse_tool_calls(ToolCallFormat f, std::string_view text, const std::string& id_prefix = "call_");

}  // namespace ember::server
