// The engine's side of the KV cache: which blocks each sequence holds, shared
// prefixes through the prefix cache, and the copies that sharing needs.
//
// Owns the block allocator and the prefix cache; the backend owns the
// storage and performs the queued copies before the step that needs them.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "engine/block_allocator.h"
#include "engine/prefix_cache.h"
#include "engine/sequence.h"

namespace ember {

class Backend;

struct BlockCopy {
  int src, dst, n_positions;
};

class KvManager {
 public:
  KvManager(int n_blocks, int block_size, bool prefix_cache);
  ~KvManager();
  KvManager(const KvManager&) = delete;
  KvManager& operator=(const KvManager&) = delete;

  // Evicted prefixes go to `bytes` of host memory first and come back on a hit
  // (the cache's host tier), copied through the backend.
  void enable_host_tier(Backend& backend, uint64_t bytes);
  int host_slots() const { return host_slots_ ? host_slots_->n_blocks() : 0; }
  int host_slots_used() const { return host_slots_ ? host_slots_->used_blocks() : 0; }

  int block_size() const { return bs_; }
  BlockAllocator& allocator() { return alloc_; }
  const BlockAllocator& allocator() const { return alloc_; }
  const PrefixCache* cache() const { return cache_enabled_ ? &cache_ : nullptr; }
  // Device blocks the prefix cache references (each counted once); walks the cache.
  int cached_blocks() const;

  // Gives a waiting sequence the cached prefix of its tokens (all but the
  // last, which must be fed to get logits): sets its blocks and n_computed.
  // A partly used last block is copied before the sequence writes into it.
  void admit(Sequence& s);
  // Grows the sequence's block table towards `positions`, evicting cached
  // prefixes when no block is free (unless `evict` is false). Returns the
  // positions the table covers.
  int64_t grow(Sequence& s, int64_t positions, bool evict = true);
  // Gives back the blocks past the first `positions` positions (blocks grown
  // for a draft that was dropped: never shared, so free at once).
  void trim(Sequence& s, int64_t positions);
  // Gives up the sequence's blocks; with the cache on, its computed tokens stay there first.
  void release(Sequence& s);

  // Copies queued by admit(), to run on the backend before the next forward step.
  void run_copies(Backend& backend);

  // Checks that every block is free or referenced exactly as often as the
  // cache and the given sequences reference it. Throws ember::Error otherwise.
  void check_accounting(const std::vector<const Sequence*>& holders) const;

 private:
  int allocate(bool evict = true);  // a free block, evicting from the cache if needed (and allowed); -1 when none
  int bs_;
  bool cache_enabled_;
  BlockAllocator alloc_;
  std::unique_ptr<BlockAllocator> host_slots_;
  uint8_t* host_mem_ = nullptr;
  size_t host_bytes_ = 0;
  PrefixCache cache_;  // after the allocators: destroyed first, releasing into them
  std::vector<BlockCopy> copies_;
};

}  // namespace ember
