// One logit row to one token id: greedy, or a draw from the temperature
// softmax cut by top-k, min-p and top-p. Every backend picks by these rules
// (the CPU through pick_id below, the CUDA backend in a kernel), and the host
// sampler applies them after its penalties, so a sequence gets the same tokens
// whichever side picks.
//
// The rules, for the first n logits of a row:
//  - a NaN or +inf logit: kPickNonFinite; every logit -inf: kPickAllMasked;
//  - temperature 0 (or below kMinTemperature, whose inverse would overflow):
//    the lowest id holding the largest logit (greedy_id);
//  - otherwise the candidates are the finite logits in the order (logit
//    descending, id ascending); top-k keeps the first k of them; each has the
//    weight w = exp((logit - max) * (1 / temperature)) (floats; a weight at or
//    below kMinWeight, 2^-41 of the largest, drops the candidate: both sides
//    can then sum weights as integers in units of 2^-40); min-p drops
//    w < min_p; top-p keeps the shortest prefix whose weights sum to at least
//    top_p times the sum over the top-k candidates;
//  - the pick: x = draw * (sum of the kept weights), then the kept candidates
//    are walked in id order and the first whose weight exceeds what is left of
//    x is the token. `draw` is uniform in [0, 1), drawn by the sequence's
//    seeded generator (Sampler::draw), so the draw never depends on the side.
// Sums are exact up to rounding: two sides may disagree only where x or a
// top-p sum falls within rounding of a boundary.
#pragma once
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace ember {

constexpr float kMinTemperature = 1e-30f;

struct Pick {
  float temperature = 0.0f;  // below kMinTemperature: greedy
  int top_k = 0;             // 0: off
  float top_p = 1.0f;        // 1: off
  float min_p = 0.0f;        // 0: off
  double draw = 0.0;         // uniform in [0, 1)
  bool greedy() const { return !(temperature >= kMinTemperature); }
};

constexpr int32_t kPickNonFinite = -1, kPickAllMasked = -2;
constexpr float kMinWeight = 0x1p-41f;

// The greedy choice: the lowest id holding the largest logit among the first
// n, or one of the codes above.
int32_t greedy_id(const float* logits, int n);

// Working memory of pick_id, sized for a vocabulary once so that picking allocates nothing.
class PickScratch {
 public:
  explicit PickScratch(int vocab = 0) : key_hist_(size_t(1) << (32 - kKeyShift)), bin_mass_(kBins) {
    cand_.reserve(size_t(vocab));
    by_id_.reserve(size_t(vocab));
    tile_mass_.reserve(size_t(vocab) / kTile + 1);
  }

  struct Cand {
    float logit;
    int32_t id;
    float w;
  };
  static constexpr int kKeyShift = 20;          // top-k's histogram: the 12 leading bits of a logit's order key
  static constexpr int kBins = 8192;            // top-p's bins of d = (max - logit) / temperature ...
  static constexpr float kBinsPerUnit = 256.0f;  // ... 1/256 wide (d >= 32 in the last)
  static constexpr int kTile = 256;             // the draw's tiles of ids

 private:
  friend int32_t pick_id(const float*, int, const Pick&, PickScratch&);
  std::vector<Cand> cand_;            // the candidates of one bin
  std::vector<float> by_id_;          // weights by id
  std::vector<uint32_t> key_hist_;
  std::vector<double> bin_mass_;
  std::vector<double> tile_mass_;
};

// The pick of the rules above among the first n logits, or kPickNonFinite / kPickAllMasked.
int32_t pick_id(const float* logits, int n, const Pick& p, PickScratch& scratch);

}  // namespace ember
