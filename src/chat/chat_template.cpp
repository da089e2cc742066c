#include "chat/chat_template.h"

#include <fstream>
#include <sstream>

#include "util/error.h"
#include "util/json_bounded.h"
#include "util/limits.h"
#include "util/text_file.h"

namespace ember::chat {

using ojson = nlohmann::ordered_json;

nlohmann::ordered_json chat_context(const ChatRequest& req, const std::string& bos_token, const std::string& eos_token) {
  if (!req.messages.is_array()) throw Error("chat request: messages must be an array");
  if (!req.tools.is_null() && !req.tools.is_array()) throw Error("chat request: tools must be null or an array");
  if (!req.kwargs.is_null() && !req.kwargs.is_object()) throw Error("chat request: kwargs must be an object");
  ojson ctx = ojson::object();
  ctx["messages"] = req.messages;
  ctx["tools"] = req.tools;  // transformers passes tools=None when there are none
  ctx["add_generation_prompt"] = req.add_generation_prompt;
  ctx["bos_token"] = bos_token;
  ctx["eos_token"] = eos_token;
  if (req.kwargs.is_object())
    for (auto it = req.kwargs.begin(); it != req.kwargs.end(); ++it) ctx[it.key()] = it.value();
  return ctx;
}

std::string render_chat_template(const Template& tmpl, const ChatRequest& req, const std::string& bos_token,
                                 const std::string& eos_token) {
  return tmpl.render(chat_context(req, bos_token, eos_token));
}

std::string render_chat_template(const std::string& template_source, const ChatRequest& req,
                                 const std::string& bos_token, const std::string& eos_token) {
  return render_chat_template(Template::parse(template_source), req, bos_token, eos_token);
}

static std::string token_text(const ojson& config, const char* key) {
  auto it = config.find(key);
  if (it == config.end() || it->is_null()) return "";
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object()) {
    auto content = it->find("content");
    if (content != it->end() && content->is_string()) return content->get<std::string>();
  }
  throw Error(std::string("tokenizer_config.json: ") + key + " must be a string or an object with \"content\"");
}

TokenizerChatConfig read_tokenizer_chat_config(const nlohmann::ordered_json& config) {
  if (!config.is_object()) throw Error("tokenizer_config.json: top level must be an object");
  TokenizerChatConfig out;
  out.bos_token = token_text(config, "bos_token");
  out.eos_token = token_text(config, "eos_token");
  auto it = config.find("chat_template");
  if (it == config.end() || it->is_null()) throw Error("tokenizer_config.json has no chat_template");
  if (it->is_string()) {
    out.chat_template = it->get<std::string>();
  } else if (it->is_array()) {
    // [{"name": "default", "template": "..."}, {"name": "tool_use", ...}]
    for (const auto& entry : *it)
      if (entry.is_object() && entry.value("name", "") == "default" && entry.contains("template") && entry["template"].is_string())
        out.chat_template = entry["template"].get<std::string>();
    if (out.chat_template.empty()) throw Error("tokenizer_config.json: chat_template list has no \"default\" entry");
  } else {
    throw Error("tokenizer_config.json: chat_template must be a string or a list of named templates");
  }
  return out;
}

static ojson read_json_file(const std::string& path, const char* what) {
  // Regular files only (a FIFO would block), size- and depth-limited JSON.
  return parse_ordered_json(read_text_file(path, limits::kMaxJsonFileBytes), std::string(what) + " file " + path);
}

TokenizerChatConfig load_tokenizer_chat_config(const std::string& path) {
  try {
    return read_tokenizer_chat_config(read_json_file(path, "tokenizer config"));
  } catch (const Error& e) {
    throw Error(std::string(e.what()) + " (" + path + ")");
  }
}

static void check_messages(const ojson& messages, const std::string& path) {
  if (!messages.is_array()) throw Error("messages file " + path + ": expected an array of messages");
  for (size_t i = 0; i < messages.size(); ++i) {
    const ojson& m = messages[i];
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string())
      throw Error("messages file " + path + ": message " + std::to_string(i) + " needs a string \"role\"");
  }
}

ChatRequest load_chat_request(const ChatTemplateCommand& cmd) {
  ChatRequest req;
  ojson doc = read_json_file(cmd.messages_path, "messages");
  if (doc.is_object()) {
    if (!doc.contains("messages")) throw Error("messages file " + cmd.messages_path + ": object without \"messages\"");
    req.messages = doc["messages"];
    if (doc.contains("tools")) req.tools = doc["tools"];
  } else {
    req.messages = doc;
  }
  check_messages(req.messages, cmd.messages_path);
  if (!cmd.tools_path.empty()) {
    ojson tools = read_json_file(cmd.tools_path, "tools");
    if (tools.is_object() && tools.contains("tools")) tools = tools["tools"];
    if (!tools.is_array()) throw Error("tools file " + cmd.tools_path + ": expected an array of tools");
    req.tools = tools;
  }
  if (!req.tools.is_null() && !req.tools.is_array()) throw Error("messages file " + cmd.messages_path + ": \"tools\" must be an array");
  req.add_generation_prompt = cmd.add_generation_prompt;
  if (!cmd.kwargs_json.empty()) {
    req.kwargs = parse_ordered_json(cmd.kwargs_json, "--kwargs");
    if (!req.kwargs.is_object()) throw Error("--kwargs must be a JSON object");
  }
  return req;
}

void write_chat_prompt(std::ostream& out, const std::string& template_source, const std::string& bos_token,
                       const std::string& eos_token, const ChatTemplateCommand& cmd) {
  out << render_chat_template(template_source, load_chat_request(cmd), bos_token, eos_token);
}

}  // namespace ember::chat
