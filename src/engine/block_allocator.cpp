#include "engine/block_allocator.h"

#include <string>

#include "util/error.h"

namespace ember {

BlockAllocator::BlockAllocator(int n_blocks) {
  if (n_blocks <= 0) throw Error("the KV cache needs at least one block");
  refs_.assign(size_t(n_blocks), 0);
  free_.reserve(size_t(n_blocks));
  for (int b = n_blocks - 1; b >= 0; --b) free_.push_back(b);  // hands out low ids first
}

int BlockAllocator::allocate() {
  if (free_.empty()) return -1;
  const int b = free_.back();
  free_.pop_back();
  refs_[size_t(b)] = 1;
  return b;
}

void BlockAllocator::check(int block, const char* what) const {
  if (block < 0 || block >= n_blocks())
    throw Error(std::string(what) + " of KV block " + std::to_string(block) + ", outside the pool of " +
                std::to_string(n_blocks()));
  if (refs_[size_t(block)] <= 0) throw Error(std::string(what) + " of KV block " + std::to_string(block) + ", which is free");
}

void BlockAllocator::retain(int block) {
  check(block, "retain");
  ++refs_[size_t(block)];
}

void BlockAllocator::release(int block) {
  check(block, "release");
  if (--refs_[size_t(block)] == 0) free_.push_back(block);
}

}  // namespace ember
