// Causal attention of the query heads that share one key/value head, over a
// sequence's cached keys/values (read through its block table).
#pragma once
#include <cstdint>

#include "backend/cpu/kv_storage.h"

namespace ember::cpu {

struct AttentionArgs {
  const KvStorage* kv;
  int layer;
  const int32_t* blocks;  // the sequence's block table
  int kv_head;            // the key/value head the query heads share
  int n_q;                // query heads in the group (grouped-query attention)
  int head_dim;
  int64_t first, last;    // attend to positions [first, last]
  float scale;            // q·k multiplier
  float softcap;          // 0: none
};

// For each of the n_q query heads (contiguous in q, head_dim apart):
// out = softmax(scale * q·K) · V over the positions. Each key and value row is
// read once for the whole group, in the storage's element type (converted to
// float in registers). `scores` holds n_q * (last - first + 1) floats.
//
// Every output depends only on its own query and the cached rows, in a fixed
// order: the same bits whatever else runs in the step (batch invariance).
void attend_group(const AttentionArgs& a, const float* q, float* out, float* scores);

}  // namespace ember::cpu
