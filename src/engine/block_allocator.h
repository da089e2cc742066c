// Which KV blocks are in use, and by how many owners.
//
// The storage of the blocks lives in the backend; this is only the accounting:
// block ids, reference counts (a block shared by a cached prefix and the
// sequences reading it has one reference from each) and the free list. Used by
// the engine's thread alone.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace ember {

class BlockAllocator {
 public:
  explicit BlockAllocator(int n_blocks);

  int n_blocks() const { return int(refs_.size()); }
  int free_blocks() const { return int(free_.size()); }
  int used_blocks() const { return n_blocks() - free_blocks(); }

  int allocate();           // a block with one reference, or -1 when none is free
  void retain(int block);   // one more owner; the block must be in use
  void release(int block);  // one owner fewer; free at zero. Releasing a free block throws.
  int ref_count(int block) const { return refs_[size_t(block)]; }

 private:
  void check(int block, const char* what) const;
  std::vector<int32_t> refs_;
  std::vector<int32_t> free_;
};

}  // namespace ember
