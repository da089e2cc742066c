// Causal attention of one query head over a sequence's cached keys/values.
#pragma once
#include <cstdint>

#include "engine/kv_pool.h"

namespace ember::cpu {

struct AttentionArgs {
  const KvPool* kv;
  int layer;
  const int32_t* blocks;  // the sequence's block table
  int kv_head;            // which key/value head this query head reads
  int head_dim;
  int64_t first, last;    // attend to positions [first, last]
  float scale;            // q·k multiplier
  float softcap;          // 0: none
};

// out = softmax(scale * q·K) · V over the positions; `scores` holds last - first + 1 floats.
void attend(const AttentionArgs& a, const float* q, float* out, float* scores);

}  // namespace ember::cpu
