// libFuzzer target: arbitrary bytes into the safetensors reader. Parsing must
// succeed or throw ember::Error; on success every tensor's data range is
// touched so that a wrong bound shows up as a sanitizer error.
#include <cstddef>
#include <cstdint>

#include "safetensors/safetensors.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const auto st = ember::safetensors::Folder::from_memory(data, size, "fuzz.safetensors");
    volatile uint64_t sink = 0;
    for (const auto& t : st.tensors()) {
      sink = sink + uint64_t(t.n_elements()) + t.dtype.size();
      if (t.nbytes) sink = sink + t.data[0] + t.data[t.nbytes - 1];
      if (st.find(t.name) != &t) __builtin_trap();  // lookup must find this very tensor
    }
    for (const auto& [k, v] : st.metadata()) sink = sink + k.size() + v.size();
  } catch (const ember::Error&) {
  }
  return 0;
}
