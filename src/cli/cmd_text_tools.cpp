// `ember tokenize`, `ember detokenize`, `ember chat-template`: the tools users
// debug prompts with.
#include <CLI/CLI.hpp>
#include <filesystem>
#include <iostream>
#include <optional>

#include "chat/chat_template.h"
#include "chat/chat_tokens.h"
#include "cli/commands.h"
#include "tokenizer/cli_commands.h"
#include "util/error.h"

namespace ember::cli {

namespace {

void add_source_options(CLI::App* cmd, TokenizerSource& src) {
  cmd->add_option("--model", src.model_path, "GGUF file or Hugging Face folder");
  cmd->add_option("--tokenizer", src.tokenizer_path, "tokenizer.json or the folder holding it");
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
    static std::string model, config;
    static chat::ChatTemplateCommand o;
    static bool no_generation_prompt = false, ids = false, special_everywhere = false;
    cmd->add_option("--model", model, "GGUF file or Hugging Face folder (its tokenizer's template)");
    cmd->add_option("--tokenizer-config", config, "tokenizer_config.json holding chat_template");
    cmd->add_option("--messages", o.messages_path, "JSON file: array of messages")->required();
    cmd->add_option("--tools", o.tools_path, "JSON file: array of tool definitions");
    cmd->add_flag("--no-generation-prompt", no_generation_prompt, "Do not open an assistant turn at the end");
    cmd->add_option("--kwargs", o.kwargs_json, "JSON object of extra template variables, e.g. {\"enable_thinking\":false}");
    cmd->add_flag("--ids", ids,
                  "Print the token ids the engine would feed (JSON array): special tokens come only from the "
                  "template, message text is tokenized with special-token parsing off");
    cmd->add_flag("--special-everywhere", special_everywhere,
                  "With --ids: parse special tokens in message text too (the reference behaviour, for exactness tests)");
    cmd->callback([] {
      o.add_generation_prompt = !no_generation_prompt;
      chat::TokenizerChatConfig c;
      std::optional<Tokenizer> tok;
      if (ids || !model.empty()) {
        // --ids with --tokenizer-config reads tokenizer.json beside it.
        const std::string dir = config.empty() ? "" : std::filesystem::path(config).parent_path().string();
        tok = load_tokenizer(TokenizerSource{model, model.empty() ? (dir.empty() ? "." : dir) : ""});
      }
      if (!config.empty()) {
        c = chat::load_tokenizer_chat_config(config);
      } else if (tok) {
        c = {tok->chat_template(), tok->bos_token(), tok->eos_token()};
      } else {
        throw Error("give --model or --tokenizer-config");
      }
      if (c.chat_template.empty()) throw Error("no chat template found");
      if (!ids) {
        if (special_everywhere) throw Error("--special-everywhere only applies with --ids");
        chat::write_chat_prompt(std::cout, c.chat_template, c.bos_token, c.eos_token, o);
        return;
      }
      const chat::ChatPrompt p =
          chat::encode_chat(*tok, c.chat_template, chat::load_chat_request(o),
                            special_everywhere ? chat::SpecialTokens::Everywhere : chat::SpecialTokens::FromTemplateOnly);
      std::cout << '[';
      for (size_t i = 0; i < p.ids.size(); ++i) std::cout << (i ? "," : "") << p.ids[i];
      std::cout << "]\n";
    });
  }
}

}  // namespace ember::cli
