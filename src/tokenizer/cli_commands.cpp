#include "tokenizer/cli_commands.h"

#include <filesystem>
#include <iostream>
#include <iterator>
#include <sstream>

#include "gguf/gguf.h"
#include "util/error.h"

namespace ember {

Tokenizer load_tokenizer(const TokenizerSource& src) {
  if (!src.tokenizer_path.empty()) return Tokenizer::from_hf_path(src.tokenizer_path);
  if (src.model_path.empty()) throw Error("no tokenizer given: pass --model FILE.gguf or --tokenizer tokenizer.json");
  if (std::filesystem::is_directory(src.model_path)) return Tokenizer::from_hf_path(src.model_path);
  return Tokenizer::from_gguf(gguf::Reader::open(src.model_path));
}

std::vector<int32_t> parse_id_list(const std::string& s) {
  std::vector<int32_t> ids;
  size_t i = 0, entry = 0;
  while (i < s.size()) {
    char c = s[i];
    if (c == '[' || c == ']' || c == ',' || std::isspace(uint8_t(c))) { ++i; continue; }
    size_t end = i;
    if (s[end] == '-') ++end;
    while (end < s.size() && std::isdigit(uint8_t(s[end]))) ++end;
    std::string num = s.substr(i, end - i);
    if (num.empty() || num == "-" || num.size() > 11)
      throw Error("token ids: entry " + std::to_string(entry) + " ('" + s.substr(i, 12) + "') is not an integer");
    long long v = std::stoll(num);
    if (v < INT32_MIN || v > INT32_MAX) throw Error("token ids: entry " + std::to_string(entry) + " is out of range");
    ids.push_back(int32_t(v));
    ++entry;
    i = end;
  }
  return ids;
}

static std::string read_all(std::istream& in) {
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

int tokenize_command(const TokenizeOptions& opt, std::istream& in, std::ostream& out, std::ostream& err) {
  try {
    Tokenizer tok = load_tokenizer(opt.source);
    std::string text = opt.text == "-" ? read_all(in) : opt.text;
    std::vector<int32_t> ids = tok.encode(text, !opt.no_special, !opt.no_special);
    out << '[';
    for (size_t i = 0; i < ids.size(); ++i) out << (i ? "," : "") << ids[i];
    out << "]\n";
    return 0;
  } catch (const Error& e) {
    err << "ember tokenize: " << e.what() << '\n';
    return 1;
  }
}

int detokenize_command(const DetokenizeOptions& opt, std::istream& in, std::ostream& out, std::ostream& err) {
  try {
    Tokenizer tok = load_tokenizer(opt.source);
    std::vector<int32_t> ids = parse_id_list(opt.ids == "-" ? read_all(in) : opt.ids);
    out << tok.decode(ids, opt.skip_special) << '\n';
    return 0;
  } catch (const Error& e) {
    err << "ember detokenize: " << e.what() << '\n';
    return 1;
  }
}

}  // namespace ember
