// libFuzzer target: arbitrary bytes into the GGUF reader. Parsing must either
// succeed or throw ember::Error; on success every value and every tensor's
// data range is touched so that a wrong bound shows up as a sanitizer error.
#include <cstddef>
#include <cstdint>

#include "gguf/gguf.h"
#include "util/error.h"

namespace {

uint64_t touch(const ember::gguf::Value& v) {
  uint64_t h = v.u ^ uint64_t(v.i) ^ uint64_t(v.f != 0) ^ v.s.size();
  for (unsigned char c : v.s) h = h * 31 + c;
  for (const auto& e : v.array) h ^= touch(e);
  return h + v.to_display().size();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const auto r = ember::gguf::Reader::from_memory(data, size, "fuzz.gguf");
    volatile uint64_t sink = 0;
    for (const auto& [key, v] : r.metadata()) sink = sink + touch(v) + key.size();
    for (const auto& t : r.tensors()) {
      sink = sink + uint64_t(t.n_elements()) + uint64_t(t.rows());
      if (t.nbytes) sink = sink + t.data[0] + t.data[t.nbytes - 1];
      if (r.find_tensor(t.name) != &t) __builtin_trap();  // lookup must find this very tensor
    }
    (void)r.get_int("general.alignment", 0);
  } catch (const ember::Error&) {
  }
  return 0;
}
