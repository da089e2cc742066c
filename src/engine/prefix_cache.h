// The prefix cache: a radix tree over token ids whose edges own KV blocks.
//
// A node holds the tokens of its edge, which occupy positions [start, end) of
// every sequence passing through it, and the blocks that hold their keys and
// values: one per block index from start / block_size to (end - 1) / block_size.
// Each block of a node holds correct KV for every position of its block index
// below the node's end, so a node whose edge starts inside a block has a block
// of its own for that index (a copy made when the branch was written, or,
// after a split, the same block as its parent, shared read-only).
//
// Matching is exact to the token: a request reuses the longest cached prefix
// whatever its length; the last, partly used block is shared and the sequence
// copies it before writing (copy-on-write, done by the engine). Finished
// requests insert their prompt and generated tokens, so the next turn of a
// conversation finds all of the last one. Nodes on a running sequence's
// matched path are locked; unlocked leaves are evicted least recently used
// first, only when blocks are needed.
//
// With a host tier, an evicted node's blocks are first copied to host memory
// (slots counted by a second allocator) and the node stays in the tree; a
// later match copies them back into fresh blocks, which is faster than
// recomputing them. Host slots are evicted least recently used in turn.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "engine/block_allocator.h"

namespace ember {

class PrefixCache {
 public:
  struct Node;

  PrefixCache(BlockAllocator& alloc, int block_size);

  // The host tier: `slots` counts host slots of one block each; save(block,
  // slot) copies a block out, load(slot, block) copies it back.
  struct HostTier {
    BlockAllocator* slots = nullptr;
    std::function<void(int block, int slot)> save;
    std::function<void(int slot, int block)> load;
  };
  void set_host_tier(HostTier tier) { host_ = std::move(tier); }
  ~PrefixCache();  // releases every block the cache holds
  PrefixCache(const PrefixCache&) = delete;
  PrefixCache& operator=(const PrefixCache&) = delete;

  // The longest cached prefix of `tokens`, at most `limit` tokens long. Sets
  // `blocks` to the blocks covering its positions, each retained for the
  // caller, and `lock` to its deepest node, whose path stays unevictable
  // until unlock(lock) (nullptr when nothing matched). Returns its length.
  int64_t match(std::span<const int32_t> tokens, int64_t limit, std::vector<int32_t>& blocks, Node*& lock);
  void unlock(Node* lock);

  // Adds `tokens`, whose KV is in `blocks` (covering every position of
  // tokens), retaining the blocks of the part the cache did not hold yet.
  void insert(std::span<const int32_t> tokens, std::span<const int32_t> blocks);

  // Evicts unlocked leaves, least recently used first, until the allocator has
  // `want_free` free blocks or nothing more can be evicted. Returns whether it got there.
  bool evict_until_free(int want_free);

  int64_t cached_tokens() const { return tokens_; }  // tokens on all edges, device and host
  int64_t restored_blocks() const { return restored_; }  // blocks brought back from the host tier so far
  size_t n_nodes() const { return n_nodes_; }
  // Adds, for each block (host slot), how many references the cache holds on it (accounting checks).
  void count_references(std::vector<int>& refs) const;
  void count_host_references(std::vector<int>& refs) const;

 private:
  Node* find_child(Node* n, int32_t token) const;
  Node* split(Node* child, size_t k);  // child keeps its tail; returns the new upper node of k tokens
  Node* lru_evictable_leaf() const;
  Node* lru_host_leaf() const;
  bool evict_one();                 // moves the LRU evictable node to the host tier, or drops it
  bool restore(Node* n);            // brings a host node's blocks back; false when no block can be had
  void lock_path(Node* n, int delta);
  BlockAllocator& owner(const Node* n);  // the allocator of its blocks: the device's or the host tier's
  void remove_leaf(Node* leaf);
  void release_all(Node* n);
  int first_block_index(const Node* n) const;

  BlockAllocator& alloc_;
  int bs_;
  std::unique_ptr<Node> root_;
  uint64_t clock_ = 0;
  int64_t tokens_ = 0;
  int64_t restored_ = 0;
  size_t n_nodes_ = 0;
  HostTier host_;
};

}  // namespace ember
