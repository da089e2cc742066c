#include "engine/kv_pool.h"

#include <string>

#include "util/error.h"

namespace ember {

KvPool::KvPool(const ModelDesc& d, int n_blocks, int block_size)
    : n_layers_(d.n_layers), n_blocks_(n_blocks), block_size_(block_size), kv_dim_(d.kv_dim()) {
  if (n_blocks <= 0 || block_size <= 0) throw Error("KV pool needs a positive block count and size");
  storage_.assign(size_t(n_layers_) * size_t(n_blocks_) * 2 * size_t(block_size_) * size_t(kv_dim_), 0.0f);
  refs_.assign(size_t(n_blocks_), 0);
  free_.reserve(size_t(n_blocks_));
  for (int b = n_blocks_ - 1; b >= 0; --b) free_.push_back(b);
}

int KvPool::allocate() {
  if (free_.empty()) return -1;
  const int b = free_.back();
  free_.pop_back();
  refs_[size_t(b)] = 1;
  return b;
}

void KvPool::retain(int block) { ++refs_[size_t(block)]; }

void KvPool::release(int block) {
  if (--refs_[size_t(block)] == 0) free_.push_back(block);
}

void KvPool::reserve(std::vector<int32_t>& table, int64_t n_positions) {
  const int64_t need = (n_positions + block_size_ - 1) / block_size_;
  while (int64_t(table.size()) < need) {
    const int b = allocate();
    if (b < 0)
      throw Error("KV cache is full: " + std::to_string(n_positions) + " positions need " + std::to_string(need) +
                  " blocks of " + std::to_string(block_size_) + ", pool has " + std::to_string(n_blocks_));
    table.push_back(b);
  }
}

}  // namespace ember
