#include "engine/kv_manager.h"

#include <string>

#include "engine/backend.h"
#include "util/error.h"

namespace ember {

KvManager::KvManager(int n_blocks, int block_size, bool prefix_cache)
    : bs_(block_size), cache_enabled_(prefix_cache), alloc_(n_blocks), cache_(alloc_, block_size) {
  copies_.reserve(64);
}

int KvManager::allocate() {
  int b = alloc_.allocate();
  if (b < 0 && cache_enabled_ && cache_.evict_until_free(1)) b = alloc_.allocate();
  return b;
}

void KvManager::admit(Sequence& s) {
  s.n_computed = 0;
  s.blocks.clear();
  if (!cache_enabled_) return;
  const int64_t m = cache_.match(s.tokens, int64_t(s.tokens.size()) - 1, s.blocks, s.cache_lock);
  s.n_computed = m;
  if (m % bs_ != 0) {
    // The last block is shared and only partly ours: write into a copy.
    const int dst = allocate();
    if (dst < 0) {  // no block for the copy: drop the partial block and recompute its tokens
      alloc_.release(s.blocks.back());
      s.blocks.pop_back();
      s.n_computed = m - m % bs_;
      return;
    }
    const int src = s.blocks.back();
    copies_.push_back({src, dst, int(m % bs_)});  // src stays retained until the copy has run
    s.blocks.back() = dst;
  }
}

int64_t KvManager::grow(Sequence& s, int64_t positions) {
  while (int64_t(s.blocks.size()) * bs_ < positions) {
    const int b = allocate();
    if (b < 0) break;
    s.blocks.push_back(b);
  }
  return int64_t(s.blocks.size()) * bs_;
}

void KvManager::release(Sequence& s) {
  if (cache_enabled_) {
    if (s.n_computed > 0) cache_.insert(std::span(s.tokens).first(size_t(s.n_computed)), s.blocks);
    if (s.cache_lock) cache_.unlock(s.cache_lock);
  }
  s.cache_lock = nullptr;
  for (int32_t b : s.blocks) alloc_.release(b);
  s.blocks.clear();
  s.n_computed = 0;
}

void KvManager::run_copies(Backend& backend) {
  for (const BlockCopy& c : copies_) {
    backend.copy_kv_block(c.src, c.dst, c.n_positions);
    alloc_.release(c.src);
  }
  copies_.clear();
}

void KvManager::check_accounting(const std::vector<const Sequence*>& holders) const {
  std::vector<int> refs(size_t(alloc_.n_blocks()), 0);
  if (cache_enabled_) cache_.count_references(refs);
  for (const Sequence* s : holders)
    for (int32_t b : s->blocks) ++refs[size_t(b)];
  for (const BlockCopy& c : copies_) ++refs[size_t(c.src)];
  int free_count = 0;
  for (int b = 0; b < alloc_.n_blocks(); ++b) {
    if (refs[size_t(b)] != alloc_.ref_count(b))
      throw Error("KV accounting: block " + std::to_string(b) + " has " + std::to_string(alloc_.ref_count(b)) +
                  " references, its holders account for " + std::to_string(refs[size_t(b)]));
    free_count += alloc_.ref_count(b) == 0;
  }
  if (free_count != alloc_.free_blocks())
    throw Error("KV accounting: " + std::to_string(free_count) + " blocks unreferenced, free list has " +
                std::to_string(alloc_.free_blocks()));
}

}  // namespace ember
