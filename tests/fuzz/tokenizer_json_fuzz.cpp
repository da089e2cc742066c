// libFuzzer target: tokenizer.json bytes -> Tokenizer::from_hf (the loader,
// normalizers, pre-tokenizer regexes, merges, added tokens), then a short
// encode/decode with whatever loaded. Any input must load or fail with
// ember::Error.
#include <cstdint>
#include <string>

#include "tokenizer/tokenizer.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const ember::Tokenizer t = ember::Tokenizer::from_hf(std::string(reinterpret_cast<const char*>(data), size), "");
    const std::vector<int32_t> ids = t.encode("Hello, world! 123 <s> \xE2\x96\x81 ab", true, true);
    (void)t.decode(ids);
  } catch (const ember::Error&) {
  }
  return 0;
}
