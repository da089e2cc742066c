#include "engine/kv_manager.h"

#include <sys/mman.h>

#include <algorithm>
#include <string>

#include "engine/backend.h"
#include "util/error.h"

namespace ember {

KvManager::KvManager(int n_blocks, int block_size, bool prefix_cache)
    : bs_(block_size), cache_enabled_(prefix_cache), alloc_(n_blocks), cache_(alloc_, block_size) {
  copies_.reserve(64);
}

KvManager::~KvManager() {
  if (host_mem_) munmap(host_mem_, host_bytes_);
}

void KvManager::enable_host_tier(Backend& backend, uint64_t bytes) {
  if (!cache_enabled_ || bytes == 0) return;
  const size_t block = backend.block_bytes();
  const uint64_t n = bytes / block;
  if (n == 0) throw Error("--cache-host-mem of " + std::to_string(bytes) + " bytes holds no KV block of " + std::to_string(block));
  host_bytes_ = size_t(n) * block;
  // Reserved, not committed: host memory is used only as blocks are saved.
  void* p = mmap(nullptr, host_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) throw Error("cannot reserve " + std::to_string(host_bytes_ >> 20) + " MiB of host memory for the prefix cache");
  host_mem_ = static_cast<uint8_t*>(p);
  host_slots_ = std::make_unique<BlockAllocator>(int(std::min<uint64_t>(n, 1u << 30)));
  PrefixCache::HostTier tier;
  tier.slots = host_slots_.get();
  uint8_t* mem = host_mem_;
  tier.save = [&backend, mem, block](int b, int slot) { backend.read_kv_block(b, mem + size_t(slot) * block); };
  tier.load = [&backend, mem, block](int slot, int b) { backend.write_kv_block(b, mem + size_t(slot) * block); };
  cache_.set_host_tier(std::move(tier));
}

int KvManager::allocate(bool evict) {
  int b = alloc_.allocate();
  if (b < 0 && evict && cache_enabled_ && cache_.evict_until_free(1)) b = alloc_.allocate();
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

int64_t KvManager::grow(Sequence& s, int64_t positions, bool evict) {
  while (int64_t(s.blocks.size()) * bs_ < positions) {
    const int b = allocate(evict);
    if (b < 0) break;
    s.blocks.push_back(b);
  }
  return int64_t(s.blocks.size()) * bs_;
}

void KvManager::trim(Sequence& s, int64_t positions) {
  const size_t keep = size_t((positions + bs_ - 1) / bs_);
  while (s.blocks.size() > keep) {
    alloc_.release(s.blocks.back());
    s.blocks.pop_back();
  }
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

int KvManager::cached_blocks() const {
  if (!cache_enabled_) return 0;
  std::vector<int> refs(size_t(alloc_.n_blocks()), 0);
  cache_.count_references(refs);
  return int(std::count_if(refs.begin(), refs.end(), [](int r) { return r > 0; }));
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
  if (host_slots_) {
    std::vector<int> host(size_t(host_slots_->n_blocks()), 0);
    cache_.count_host_references(host);
    for (int s = 0; s < host_slots_->n_blocks(); ++s)
      if (host[size_t(s)] != host_slots_->ref_count(s))
        throw Error("KV accounting: host slot " + std::to_string(s) + " has " + std::to_string(host_slots_->ref_count(s)) +
                    " references, the cache accounts for " + std::to_string(host[size_t(s)]));
  }
}

}  // namespace ember
