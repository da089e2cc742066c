// The paged key/value cache.
//
// Memory for keys and values is cut into fixed-size blocks of `block_size`
// positions. A sequence owns a list of block ids (its block table); the
// forward pass reads and writes KV only through that table, so two sequences
// that share a prefix simply share its block ids. Blocks are reference-counted
// for that sharing.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "model/descriptor.h"

namespace ember {

class KvPool {
 public:
  KvPool(const ModelDesc& d, int n_blocks, int block_size = 16);

  int block_size() const { return block_size_; }
  int n_blocks() const { return n_blocks_; }
  int kv_dim() const { return kv_dim_; }
  size_t bytes() const { return storage_.size() * sizeof(float); }

  // Keys (values) of one block of one layer: block_size rows of kv_dim floats.
  float* keys(int layer, int block) { return storage_.data() + offset(layer, block, 0); }
  float* values(int layer, int block) { return storage_.data() + offset(layer, block, 1); }
  const float* keys(int layer, int block) const { return storage_.data() + offset(layer, block, 0); }
  const float* values(int layer, int block) const { return storage_.data() + offset(layer, block, 1); }

  // Block allocation. allocate() returns -1 when the pool is full.
  int allocate();
  void retain(int block);   // one more owner
  void release(int block);  // one owner fewer; free at zero
  int free_blocks() const { return int(free_.size()); }
  int ref_count(int block) const { return refs_[size_t(block)]; }

  // Grows `table` (a sequence's blocks) to cover `n_positions`; throws ember::Error when the pool is full.
  void reserve(std::vector<int32_t>& table, int64_t n_positions);

 private:
  size_t offset(int layer, int block, int kv) const {
    return ((size_t(layer) * size_t(n_blocks_) + size_t(block)) * 2 + size_t(kv)) * size_t(block_size_) * size_t(kv_dim_);
  }
  int n_layers_, n_blocks_, block_size_, kv_dim_;
  std::vector<float> storage_;
  std::vector<int32_t> refs_;
  std::vector<int32_t> free_;
};

}  // namespace ember
