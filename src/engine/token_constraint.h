// A per-request rule about which tokens may come next (a grammar, a JSON
// schema), applied by the engine core before each sampling step. The engine
// only knows this interface; src/grammar implements it.
//
// The engine calls mask() on a copy of the sequence's logits (never the
// backend's buffer, which other sequences' rows share), samples from the
// result, then tells the constraint which token was chosen with accept().
// A constraint that lets no token through makes the sampler raise BadLogits,
// which ends that one request with an error.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>

namespace ember {

class TokenConstraint {
 public:
  virtual ~TokenConstraint() = default;
  // Sets the logit of every token that may not come next to -inf.
  virtual void mask(float* logits, int64_t vocab) = 0;
  // The token that was sampled (always one mask() let through).
  virtual void accept(int32_t id) = 0;
};

// Makes a fresh constraint for one sequence: a request with n choices gets one each.
using ConstraintFactory = std::function<std::unique_ptr<TokenConstraint>()>;

}  // namespace ember
