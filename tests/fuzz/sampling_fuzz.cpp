// libFuzzer target: sampling parameters and logits straight from the bytes
// (NaN, infinities, -inf masks, any vocabulary split): the parameters are
// validated or refused with ember::Error, and a sample is either an id below
// valid_vocab with a finite logit or a BadLogits error.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "engine/sampler.h"
#include "engine/sampling_validation.h"
#include "util/error.h"

namespace {

struct Reader {
  const uint8_t* p;
  size_t n;
  template <class T>
  T take() {
    T v{};
    const size_t k = n < sizeof(T) ? n : sizeof(T);
    std::memcpy(&v, p, k);
    p += k;
    n -= k;
    return v;
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Reader r{data, size};
  ember::SamplingParams sp;
  sp.temperature = r.take<float>();
  sp.top_k = r.take<int32_t>();
  sp.top_p = r.take<float>();
  sp.min_p = r.take<float>();
  sp.repetition_penalty = r.take<float>();
  sp.presence_penalty = r.take<float>();
  sp.frequency_penalty = r.take<float>();
  sp.penalty_last_n = r.take<int16_t>();
  sp.seed = r.take<uint64_t>();
  const int vocab = 1 + r.take<uint8_t>() % 64;
  const int valid = 1 + r.take<uint8_t>() % vocab;
  std::vector<float> logits(size_t(vocab), -INFINITY);
  for (int i = 0; i < vocab && r.n >= 4; ++i) logits[size_t(i)] = r.take<float>();
  std::vector<int32_t> recent;
  while (r.n >= 2) recent.push_back(int32_t(r.take<int16_t>()) % (vocab + 2));
  try {
    (void)ember::validate_threads(int64_t(sp.top_k));
  } catch (const ember::Error&) {
  }
  try {
    ember::Sampler s(sp, vocab, valid);
    for (int round = 0; round < 3; ++round) {
      const int32_t id = s.sample(logits.data(), recent);
      if (id < 0 || id >= valid || !std::isfinite(logits[size_t(id)])) __builtin_trap();
    }
  } catch (const ember::Error&) {
  }
  return 0;
}
