// `ember tokenize`, `ember detokenize`, `ember chat-template`: the tools users
// debug prompts with.
#include <CLI/CLI.hpp>
#include <fstream>
#include <iostream>

#include "chat/chat.h"
#include "cli/commands.h"
#include "tokenizer/cli_commands.h"
#include "util/error.h"

namespace ember::cli {

namespace {

void add_source_options(CLI::App* cmd, TokenizerSource& src) {
  cmd->add_option("--model", src.model_path, "GGUF file or Hugging Face folder");
  cmd->add_option("--tokenizer", src.tokenizer_path, "tokenizer.json or the folder holding it");
}

nlohmann::ordered_json read_json_file(const std::string& path, const char* what) {
  std::ifstream in(path);
  if (!in) throw Error(std::string(what) + " " + path + ": cannot open");
  try {
    return nlohmann::ordered_json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string(what) + " " + path + ": " + e.what());
  }
}

}  // namespace

void add_text_tools(CLI::App& app) {
  {
    auto* cmd = app.add_subcommand("tokenize", "Print the token ids of a text as a JSON array");
    static TokenizeOptions o;
    add_source_options(cmd, o.source);
    cmd->add_flag("--no-special", o.no_special, "Add no BOS/EOS and treat special-token text as plain text");
    cmd->add_option("text", o.text, "Text ('-' reads standard input)")->required();
    cmd->callback([] {
      if (int rc = tokenize_command(o, std::cin, std::cout, std::cerr)) std::exit(rc);
    });
  }
  {
    auto* cmd = app.add_subcommand("detokenize", "Print the text of token ids");
    static DetokenizeOptions o;
    add_source_options(cmd, o.source);
    cmd->add_flag("--skip-special", o.skip_special, "Leave special tokens out");
    cmd->add_option("ids", o.ids, "JSON array or comma-separated ids ('-' reads standard input)")->required();
    cmd->callback([] {
      if (int rc = detokenize_command(o, std::cin, std::cout, std::cerr)) std::exit(rc);
    });
  }
  {
    auto* cmd = app.add_subcommand("chat-template", "Render a conversation with a model's chat template");
    static std::string model, config, messages, tools, kwargs;
    static bool no_generation_prompt = false;
    cmd->add_option("--model", model, "GGUF file or Hugging Face folder (its tokenizer's template)");
    cmd->add_option("--tokenizer-config", config, "tokenizer_config.json holding chat_template");
    cmd->add_option("--messages", messages, "JSON file: array of messages")->required();
    cmd->add_option("--tools", tools, "JSON file: array of tool definitions");
    cmd->add_flag("--no-generation-prompt", no_generation_prompt, "Do not open an assistant turn at the end");
    cmd->add_option("--kwargs", kwargs, "JSON object of extra template variables, e.g. {\"enable_thinking\":false}");
    cmd->callback([] {
      std::string source, bos, eos;
      if (!config.empty()) {
        const auto cfg = read_json_file(config, "tokenizer config");
        const ChatTemplateSource s = chat_template_from_config(cfg);
        source = s.source;
        bos = s.bos_token;
        eos = s.eos_token;
      } else if (!model.empty()) {
        const Tokenizer tok = load_tokenizer(TokenizerSource{model, ""});
        source = tok.chat_template();
        bos = tok.bos_token();
        eos = tok.eos_token();
      } else {
        throw Error("give --model or --tokenizer-config");
      }
      if (source.empty()) throw Error("no chat template found");
      chat::ChatRequest req;
      req.messages = read_json_file(messages, "messages");
      if (!tools.empty()) req.tools = read_json_file(tools, "tools");
      req.add_generation_prompt = !no_generation_prompt;
      if (!kwargs.empty()) {
        try {
          req.kwargs = nlohmann::ordered_json::parse(kwargs);
        } catch (const nlohmann::json::exception& e) {
          throw Error(std::string("--kwargs: ") + e.what());
        }
      }
      std::cout << chat::render_chat_template(source, req, bos, eos);
    });
  }
}

}  // namespace ember::cli
