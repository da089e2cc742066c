#include "engine/prefix_cache.h"

#include <algorithm>
#include <cassert>

#include "util/error.h"

namespace ember {

struct PrefixCache::Node {
  Node* parent = nullptr;
  int64_t start = 0;             // position of the edge's first token
  std::vector<int32_t> tokens;   // the edge
  std::vector<int32_t> blocks;   // block indices first_block_index() .. (end() - 1) / block size (host slots when on_host)
  std::vector<std::unique_ptr<Node>> children;
  int locks = 0;                 // running sequences whose matched path goes through here
  uint64_t last_use = 0;
  bool on_host = false;          // its blocks live in the host tier
  int64_t end() const { return start + int64_t(tokens.size()); }
};

PrefixCache::PrefixCache(BlockAllocator& alloc, int block_size)
    : alloc_(alloc), bs_(block_size), root_(std::make_unique<Node>()) {
  if (block_size <= 0) throw Error("prefix cache needs a positive block size");
}

PrefixCache::~PrefixCache() { release_all(root_.get()); }

BlockAllocator& PrefixCache::owner(const Node* n) { return n->on_host ? *host_.slots : alloc_; }

void PrefixCache::release_all(Node* n) {
  for (int32_t b : n->blocks) owner(n).release(b);
  n->blocks.clear();
  for (auto& c : n->children) release_all(c.get());
}

int PrefixCache::first_block_index(const Node* n) const { return int(n->start / bs_); }

PrefixCache::Node* PrefixCache::find_child(Node* n, int32_t token) const {
  for (auto& c : n->children)
    if (c->tokens.front() == token) return c.get();
  return nullptr;
}

// How many leading tokens of the child's edge equal tokens[pos, lim).
static size_t common_length(const std::vector<int32_t>& edge, std::span<const int32_t> tokens, int64_t pos, int64_t lim) {
  size_t k = 0;
  while (k < edge.size() && pos + int64_t(k) < lim && edge[k] == tokens[size_t(pos) + k]) ++k;
  return k;
}

PrefixCache::Node* PrefixCache::split(Node* child, size_t k) {
  assert(k > 0 && k < child->tokens.size());
  Node* parent = child->parent;
  auto upper = std::make_unique<Node>();
  upper->parent = parent;
  upper->start = child->start;
  upper->tokens.assign(child->tokens.begin(), child->tokens.begin() + int64_t(k));
  upper->locks = child->locks;  // every lock through the child also covers its upper part
  upper->last_use = child->last_use;
  upper->on_host = child->on_host;
  const int first = first_block_index(child);
  const int upper_last = int((upper->end() - 1) / bs_);
  upper->blocks.assign(child->blocks.begin(), child->blocks.begin() + (upper_last - first + 1));

  child->tokens.erase(child->tokens.begin(), child->tokens.begin() + int64_t(k));
  child->start += int64_t(k);
  const int lower_first = first_block_index(child);
  child->blocks.erase(child->blocks.begin(), child->blocks.begin() + (lower_first - first));
  if (lower_first == upper_last) owner(child).retain(child->blocks.front());  // the block both halves read

  // The upper node takes the child's place under the parent, the child goes under it.
  auto it = std::find_if(parent->children.begin(), parent->children.end(), [&](auto& c) { return c.get() == child; });
  std::unique_ptr<Node> owned = std::move(*it);
  Node* up = upper.get();
  *it = std::move(upper);
  owned->parent = up;
  up->children.push_back(std::move(owned));
  ++n_nodes_;
  return up;
}

void PrefixCache::lock_path(Node* n, int delta) {
  for (; n && n != root_.get(); n = n->parent) n->locks += delta;
}

bool PrefixCache::restore(Node* n) {
  std::vector<int32_t> dev;
  dev.reserve(n->blocks.size());
  for (size_t i = 0; i < n->blocks.size(); ++i) {
    int b = alloc_.allocate();
    if (b < 0 && evict_until_free(1)) b = alloc_.allocate();
    if (b < 0) {
      for (int32_t d : dev) alloc_.release(d);
      return false;
    }
    dev.push_back(b);
  }
  for (size_t i = 0; i < dev.size(); ++i) {
    host_.load(n->blocks[i], dev[i]);
    host_.slots->release(n->blocks[i]);
  }
  n->blocks = std::move(dev);
  n->on_host = false;
  restored_ += int64_t(n->blocks.size());
  return true;
}

int64_t PrefixCache::match(std::span<const int32_t> tokens, int64_t limit, std::vector<int32_t>& blocks, Node*& lock) {
  blocks.clear();
  lock = nullptr;
  const int64_t lim = std::min<int64_t>(limit, int64_t(tokens.size()));
  Node* node = root_.get();
  int64_t pos = 0;
  const uint64_t now = ++clock_;
  while (pos < lim) {
    Node* child = find_child(node, tokens[size_t(pos)]);
    if (!child) break;
    if (child->on_host) {  // bring it back, keeping the path so far (and it) from being evicted meanwhile
      lock_path(child, +1);
      const bool ok = restore(child);
      lock_path(child, -1);
      if (!ok) break;
    }
    const size_t k = common_length(child->tokens, tokens, pos, lim);
    if (k < child->tokens.size()) child = split(child, k);
    node = child;
    node->last_use = now;
    pos += int64_t(k);
  }
  if (pos == 0) return 0;
  // Blocks of the path: for each block index, the deepest node's (it holds every position below its end).
  blocks.assign(size_t((pos + bs_ - 1) / bs_), -1);
  for (Node* n = node; n != root_.get(); n = n->parent) {
    n->locks++;
    const int first = first_block_index(n);
    for (size_t i = 0; i < n->blocks.size(); ++i)
      if (blocks[size_t(first) + i] < 0) blocks[size_t(first) + i] = n->blocks[i];
  }
  for (int32_t b : blocks) alloc_.retain(b);
  lock = node;
  return pos;
}

void PrefixCache::unlock(Node* lock) {
  for (Node* n = lock; n && n != root_.get(); n = n->parent) {
    if (n->locks <= 0) throw Error("prefix cache: unlock of a node that is not locked");
    n->locks--;
  }
}

void PrefixCache::insert(std::span<const int32_t> tokens, std::span<const int32_t> blocks) {
  const int64_t n = int64_t(tokens.size());
  if (int64_t(blocks.size()) * bs_ < n) throw Error("prefix cache: insert with blocks that do not cover the tokens");
  Node* node = root_.get();
  int64_t pos = 0;
  const uint64_t now = ++clock_;
  while (pos < n) {
    Node* child = find_child(node, tokens[size_t(pos)]);
    if (!child) break;
    const size_t k = common_length(child->tokens, tokens, pos, n);
    child->last_use = now;
    if (k < child->tokens.size()) {
      if (pos + int64_t(k) == n) return;  // already cached: the tokens end inside this edge
      child = split(child, k);
    }
    node = child;
    pos += int64_t(k);
  }
  if (pos == n) return;
  auto leaf = std::make_unique<Node>();
  leaf->parent = node;
  leaf->start = pos;
  leaf->tokens.assign(tokens.begin() + pos, tokens.end());
  leaf->last_use = now;
  for (int64_t bi = pos / bs_; bi <= (n - 1) / bs_; ++bi) {
    alloc_.retain(blocks[size_t(bi)]);
    leaf->blocks.push_back(blocks[size_t(bi)]);
  }
  tokens_ += n - pos;
  ++n_nodes_;
  node->children.push_back(std::move(leaf));
}

// Walks over the whole tree: eviction is rare (only when blocks run out) and
// the tree holds one node per branch point, so a scan beats keeping an index.
// A node can leave the device when nothing below it is still there.
static void find_lru(PrefixCache::Node* n, PrefixCache::Node* root, bool on_host, PrefixCache::Node*& best);

PrefixCache::Node* PrefixCache::lru_evictable_leaf() const {
  Node* best = nullptr;
  find_lru(root_.get(), root_.get(), false, best);
  return best;
}

PrefixCache::Node* PrefixCache::lru_host_leaf() const {
  Node* best = nullptr;
  find_lru(root_.get(), root_.get(), true, best);
  return best;
}

static void find_lru(PrefixCache::Node* n, PrefixCache::Node* root, bool on_host, PrefixCache::Node*& best) {
  bool candidate = n != root && n->on_host == on_host && n->locks == 0 && (!best || n->last_use < best->last_use);
  for (auto& c : n->children) {
    candidate = candidate && (on_host ? false : c->on_host);  // device: only host children; host: no children
    find_lru(c.get(), root, on_host, best);
  }
  if (candidate) best = n;
}

void PrefixCache::remove_leaf(Node* leaf) {
  while (!leaf->children.empty()) remove_leaf(leaf->children.back().get());  // a subtree goes whole
  for (int32_t b : leaf->blocks) owner(leaf).release(b);
  tokens_ -= int64_t(leaf->tokens.size());
  --n_nodes_;
  auto& siblings = leaf->parent->children;
  siblings.erase(std::find_if(siblings.begin(), siblings.end(), [&](auto& c) { return c.get() == leaf; }));
}

bool PrefixCache::evict_one() {
  Node* victim = lru_evictable_leaf();
  if (!victim) return false;
  if (host_.slots) {
    const int need = int(victim->blocks.size());
    while (host_.slots->free_blocks() < need) {
      Node* h = lru_host_leaf();
      if (!h) break;
      remove_leaf(h);
    }
    if (host_.slots->free_blocks() >= need) {
      for (int32_t& b : victim->blocks) {
        const int slot = host_.slots->allocate();
        host_.save(b, slot);
        alloc_.release(b);
        b = slot;
      }
      victim->on_host = true;
      return true;
    }
  }
  remove_leaf(victim);  // with any host nodes below it
  return true;
}

bool PrefixCache::evict_until_free(int want_free) {
  while (alloc_.free_blocks() < want_free)
    if (!evict_one()) return false;
  return true;
}

static void count_node_references(const PrefixCache::Node* n, bool on_host, std::vector<int>& refs) {
  if (n->on_host == on_host)
    for (int32_t b : n->blocks) ++refs[size_t(b)];
  for (auto& c : n->children) count_node_references(c.get(), on_host, refs);
}

void PrefixCache::count_references(std::vector<int>& refs) const { count_node_references(root_.get(), false, refs); }
void PrefixCache::count_host_references(std::vector<int>& refs) const { count_node_references(root_.get(), true, refs); }

}  // namespace ember
