// Conversation -> prompt text through a model's chat template, with the variables Hugging Face
// transformers passes to it: messages, tools, add_generation_prompt, bos_token, eos_token and any
// extra keyword arguments (e.g. {"enable_thinking": false}).
#pragma once
#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

#include "chat/template.h"

namespace ember::chat {

struct ChatRequest {
  // [{"role": "system"|"user"|"assistant"|"tool", "content": string or list of parts,
  //   "tool_calls": [...], ...}, ...]; passed to the template as is.
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  nlohmann::ordered_json tools;  // null or an array of tool definitions
  bool add_generation_prompt = true;
  nlohmann::ordered_json kwargs = nlohmann::ordered_json::object();  // extra template variables
};

// The template variables for a request. Keys of `kwargs` come last and win over the others.
nlohmann::ordered_json chat_context(const ChatRequest& req, const std::string& bos_token, const std::string& eos_token);

std::string render_chat_template(const std::string& template_source, const ChatRequest& req,
                                 const std::string& bos_token, const std::string& eos_token);
// Same, for a template parsed once and used for many requests.
std::string render_chat_template(const Template& tmpl, const ChatRequest& req, const std::string& bos_token,
                                 const std::string& eos_token);

// What a tokenizer_config.json says about chat formatting. bos/eos may be written as strings or
// as {"content": ...}; a missing or null token is "". A list of named templates picks "default".
struct TokenizerChatConfig {
  std::string chat_template;
  std::string bos_token;
  std::string eos_token;
};
TokenizerChatConfig read_tokenizer_chat_config(const nlohmann::ordered_json& tokenizer_config);
TokenizerChatConfig load_tokenizer_chat_config(const std::string& path);

// Options of `ember chat-template`, as the command line gives them.
struct ChatTemplateCommand {
  std::string messages_path;  // JSON: an array of messages, or an object with "messages" (and "tools")
  std::string tools_path;     // optional JSON: an array of tools, or an object with "tools"
  bool add_generation_prompt = true;
  std::string kwargs_json;  // optional JSON object, e.g. {"enable_thinking": false}
};
// Reads and checks the files named by the command. Throws ember::Error naming the file.
ChatRequest load_chat_request(const ChatTemplateCommand& cmd);

// Renders the prompt for `cmd` with the given template and special tokens and writes it to out
// (no trailing newline is added: the prompt is printed exactly).
void write_chat_prompt(std::ostream& out, const std::string& template_source, const std::string& bos_token,
                       const std::string& eos_token, const ChatTemplateCommand& cmd);

}  // namespace ember::chat
