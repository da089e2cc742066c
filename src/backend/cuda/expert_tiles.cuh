// The items one block of an expert product takes (the tensor-core expert
// products, integer and float): per item, block row y is item y alone, of
// expert ids[y]; grouped by expert (moe.h group_by_expert), it is tile y of
// the (first, count, expert) triples, whose items are order[first ..
// first + count).
#pragma once
#include <cstdint>

namespace ember::cuda {

struct ExpertItems {
  const int32_t* order;  // null: one item, `first` itself
  int64_t first, expert;
  int count;  // 0: an unused tile
  __device__ __forceinline__ int64_t item(int i) const { return order ? order[first + i] : first; }
};

__device__ __forceinline__ ExpertItems expert_items(int64_t y, const int32_t* ids, const int32_t* order,
                                                    const int32_t* tiles) {
  if (!tiles) return {nullptr, y, ids[y], 1};
  const int32_t* tile = tiles + 3 * y;
  return {order, tile[0], tile[2], tile[1]};
}

}  // namespace ember::cuda
