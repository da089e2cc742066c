// libFuzzer target: arbitrary bytes as a JSON schema (response_format and
// tool parameters come from clients). Compiling must either give a grammar
// or refuse with ember::Error; a grammar must then run over the same bytes
// without crashing or hanging. Anything else escapes and is reported.
#include <cstdint>
#include <memory>
#include <string_view>

#include "grammar/grammar_matcher.h"
#include "grammar/json_schema_grammar.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto schema = nlohmann::ordered_json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (schema.is_discarded()) return 0;
  std::shared_ptr<const ember::grammar::Grammar> g;
  try {
    g = std::make_shared<const ember::grammar::Grammar>(ember::grammar::json_schema_grammar(schema));
  } catch (const ember::Error&) {
    return 0;
  }
  ember::grammar::GrammarMatcher m(g);
  for (char c : text.substr(0, 512))  // the first bytes: enough to reach deep states, bounded in time
    if (!m.advance(std::string_view(&c, 1))) break;
  (void)m.can_end();
  return 0;
}
