// libFuzzer target: config.json bytes -> bounded JSON parse -> model descriptor
// -> ModelDesc::validate. Any input must give a descriptor within the limits
// or an ember::Error.
#include <cstdint>
#include <string_view>

#include "model/architectures.h"
#include "util/error.h"
#include "util/json_bounded.h"
#include "util/limits.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const auto j = ember::parse_json(std::string_view(reinterpret_cast<const char*>(data), size), "config.json");
    ember::ModelDesc d = ember::desc_from_hf_config(j, nullptr);
    d.vocab = d.vocab > 0 ? d.vocab : 1;
    d.validate();
    if (d.n_layers > ember::limits::kMaxLayers || int64_t(d.layers.size()) != d.n_layers) __builtin_trap();
  } catch (const ember::Error&) {
  }
  return 0;
}
