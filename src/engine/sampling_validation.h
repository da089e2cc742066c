// Checks of user-supplied numbers, with the allowed range in every message:
// the sampling parameters, the thread count and the context length. One set
// of checks for `ember run` / `ember batch`, the engine and (later) the
// server's request fields, so the same input is refused the same way
// everywhere.
#pragma once
#include <cstdint>
#include <optional>
#include <string_view>

#include "engine/sampler.h"

namespace ember {

// Throws ember::Error("<name> = <value> is outside <range>") unless lo <= v <= hi
// (open at either end when asked). NaN and infinities are always refused.
void check_real(std::string_view name, double v, double lo, double hi, bool lo_open = false, bool hi_open = false);
// Same for integers, closed range.
void check_integer(std::string_view name, int64_t v, int64_t lo, int64_t hi);

// Temperature finite >= 0 (0: greedy), top-p in (0, 1], top-k >= 0, min-p in
// [0, 1], repetition penalty finite > 0, presence/frequency penalties finite
// (|x| <= 100), penalty window >= -1 (-1: all).
void validate_sampling(const SamplingParams& p);

// Largest --threads accepted: a sane multiple of the hardware threads.
int max_threads();
// 0 (one per hardware thread) or 1 .. max_threads(); returns it.
int validate_threads(int64_t threads);

// The context to allocate: `requested` when given (it must be in 1 .. model_max),
// else min(model_max, fallback). Never silently replaces a bad value.
int resolve_context(std::optional<int64_t> requested, int model_max, int fallback = 4096);

// A token id the model can take: 0 <= id < vocab.
void validate_token_id(int64_t id, int vocab, std::string_view what = "token id");

}  // namespace ember
