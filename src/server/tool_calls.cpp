#include "server/tool_calls.h"

#include <atomic>
#include <ctime>

#include "server/partial_tag.h"

namespace ember::server {

namespace {

constexpr std::string_view kOpen = "<tool_call>", kClose = "</tool_call>";

std::string new_call_id(const std::string& prefix) {  // unique within the process
  static std::atomic<uint64_t> counter{0};
  return prefix + std::to_string(std::time(nullptr)) + std::to_string(counter.fetch_add(1));
}

std::string_view trim(std::string_view s) {
  const size_t a = s.find_first_not_of(" \t\r\n");
  if (a == std::string_view::npos) return {};
  return s.substr(a, s.find_last_not_of(" \t\r\n") - a + 1);
}

}  // namespace

ToolCallFormat tool_call_format(std::string_view chat_template) {
  if (chat_template.find(kOpen) != std::string_view::npos) return ToolCallFormat::Tagged;
  if (chat_template.find("<|python_tag|>") != std::string_view::npos ||
      chat_template.find("\"parameters\": dictionary of argument name") != std::string_view::npos)
    return ToolCallFormat::Llama3Json;
  return ToolCallFormat::None;
}

bool ToolCallParser::add_call(const json& call, ToolCallPiece& out) {
  if (!call.is_object()) return false;
  const json* name = field(call, "name");
  const json* args = field(call, "arguments");
  if (!args) args = field(call, "parameters");
  if (!name || !name->is_string() || name->get<std::string>().empty()) return false;
  ToolCall c;
  c.id = new_call_id(id_prefix_);
  c.name = name->get<std::string>();
  // Arguments are an object; some models write it as a string holding the JSON.
  if (!args) c.arguments = "{}";
  else if (args->is_string()) c.arguments = args->get<std::string>();
  else if (args->is_object()) c.arguments = args->dump();
  else return false;
  out.calls.push_back(std::move(c));
  called_ = true;
  return true;
}

ToolCallPiece ToolCallParser::push(std::string_view text) {
  held_ += text;
  return route(false);
}

ToolCallPiece ToolCallParser::finish() { return route(true); }

ToolCallPiece ToolCallParser::route(bool at_end) {
  switch (format_) {
    case ToolCallFormat::Tagged: return tagged(at_end);
    case ToolCallFormat::Llama3Json: return llama3(at_end);
    case ToolCallFormat::None: break;
  }
  ToolCallPiece out;  // no format: all of it is text
  out.text.swap(held_);
  return out;
}

ToolCallPiece ToolCallParser::tagged(bool at_end) {
  ToolCallPiece out;
  for (;;) {
    if (!in_call_) {
      const size_t open = held_.find(kOpen);
      if (open == std::string::npos) {
        const size_t keep = at_end ? 0 : partial_tag_suffix(held_, kOpen);
        out.text += held_.substr(0, held_.size() - keep);
        held_.erase(0, held_.size() - keep);
        return out;
      }
      out.text += held_.substr(0, open);
      held_.erase(0, open + kOpen.size());
      in_call_ = true;
      continue;
    }
    const size_t close = held_.find(kClose);
    if (close == std::string::npos && !at_end) return out;
    // A call cut short by the end of generation still counts when its JSON is whole.
    const std::string body(trim(std::string_view(held_).substr(0, close == std::string::npos ? held_.size() : close)));
    const json call = json::parse(body, nullptr, /*allow_exceptions=*/false);
    if (call.is_discarded() || !add_call(call, out)) {
      out.text += std::string(kOpen) + held_.substr(0, close == std::string::npos ? held_.size() : close + kClose.size());
    }
    held_.erase(0, close == std::string::npos ? held_.size() : close + kClose.size());
    in_call_ = false;
    if (close == std::string::npos) return out;
  }
}

ToolCallPiece ToolCallParser::llama3(bool at_end) {
  ToolCallPiece out;
  if (!decided_) {
    const std::string_view t = trim(held_);
    if (t.empty() && !at_end) return out;
    decided_ = true;
    json_answer_ = !t.empty() && t[0] == '{';
  }
  if (!json_answer_) {
    out.text.swap(held_);
    return out;
  }
  if (!at_end) return out;  // the answer is held until it is whole
  const json whole = json::parse(trim(held_), nullptr, false);
  if (!whole.is_discarded() && add_call(whole, out)) {
    held_.clear();
    return out;
  }
  // Several objects separated by ";": all must be calls, else it is all text.
  ToolCallPiece calls;
  std::string_view rest = held_;
  bool all = true;
  while (all && !trim(rest).empty()) {
    const size_t semi = rest.find(';');
    const std::string_view one = semi == std::string_view::npos ? rest : rest.substr(0, semi);
    const json call = json::parse(trim(one), nullptr, false);
    all = !call.is_discarded() && add_call(call, calls);
    rest = semi == std::string_view::npos ? std::string_view() : rest.substr(semi + 1);
  }
  if (all && !calls.calls.empty()) {
    out.calls = std::move(calls.calls);
  } else {
    called_ = false;
    out.text = held_;
  }
  held_.clear();
  return out;
}

ToolCallPiece ToolCallParser::take(std::string_view text, bool last) {
  ToolCallPiece a = push(text);
  if (!last) return a;
  ToolCallPiece b = finish();
  a.text += b.text;
  for (ToolCall& c : b.calls) a.calls.push_back(std::move(c));
  return a;
}

ToolCallPiece parse_tool_calls(ToolCallFormat f, std::string_view text, const std::string& id_prefix) {
  return ToolCallParser(f, id_prefix).take(text, /*last=*/true);
}

}  // namespace ember::server
