// Helpers behind `ember tokenize` and `ember detokenize`; the CLI parses the
// command line and calls these.
//
//   ember tokenize (--model FILE.gguf | --tokenizer tokenizer.json|DIR) [--no-special] TEXT|-
//     prints the ids as a JSON array, e.g. [9707,11,1879,0]
//   ember detokenize (--model ... | --tokenizer ...) [--skip-special] IDS|-
//     IDS is a JSON array or ids separated by commas/spaces; prints the text.
#pragma once
#include <iosfwd>
#include <string>

#include "tokenizer/tokenizer.h"

namespace ember {

struct TokenizerSource {
  std::string model_path;      // a GGUF file (or a Hugging Face model folder)
  std::string tokenizer_path;  // tokenizer.json or the folder holding it; wins over model_path
};
// Throws ember::Error when neither path is given or loading fails.
Tokenizer load_tokenizer(const TokenizerSource& src);

struct TokenizeOptions {
  TokenizerSource source;
  bool no_special = false;  // no BOS/EOS added, special tokens in the text stay plain text
  std::string text;         // "-" reads standard input
};
// Returns the process exit code (0 ok, 1 error, message on `err`).
int tokenize_command(const TokenizeOptions& opt, std::istream& in, std::ostream& out, std::ostream& err);

struct DetokenizeOptions {
  TokenizerSource source;
  bool skip_special = false;
  std::string ids;  // "-" reads standard input
};
int detokenize_command(const DetokenizeOptions& opt, std::istream& in, std::ostream& out, std::ostream& err);

// Parses "[1, 2, 3]" or "1,2 3"; throws ember::Error naming the bad entry.
std::vector<int32_t> parse_id_list(const std::string& s);

}  // namespace ember
