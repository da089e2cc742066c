// The radix-tree prefix cache: matching to the token, splits, copy-on-write of
// partial blocks, eviction and reference counts, checked directly and by a
// randomized comparison with a plain reference model of what was inserted.
#include "engine/prefix_cache.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

using namespace ember;

namespace {

constexpr int kBs = 4;

// A stand-in for the backend's KV storage: block -> the token each position holds.
// A correct cache hands out blocks whose positions hold exactly the matched tokens.
struct FakeKv {
  std::map<int, std::vector<int32_t>> content;
  void write(int block, int row, int32_t token) {
    auto& c = content[block];
    c.resize(kBs, -1);
    c[size_t(row)] = token;
  }
  void copy(int src, int dst, int n) {
    for (int r = 0; r < n; ++r) write(dst, r, content[src][size_t(r)]);
  }
};

// What a sequence does with the cache: match, copy the shared partial block,
// "compute" the rest into blocks of its own, insert, let go.
struct Harness {
  BlockAllocator alloc;
  BlockAllocator host_slots;
  PrefixCache cache;
  FakeKv kv;
  std::map<int, std::vector<int32_t>> host;  // slot -> content
  explicit Harness(int n_blocks, int n_host_slots = 0)
      : alloc(n_blocks), host_slots(std::max(1, n_host_slots)), cache(alloc, kBs) {
    if (n_host_slots > 0) {
      PrefixCache::HostTier t;
      t.slots = &host_slots;
      t.save = [this](int b, int slot) { host[slot] = kv.content[b]; };
      t.load = [this](int slot, int b) { kv.content[b] = host[slot]; };
      cache.set_host_tier(t);
    }
  }

  // Returns the matched length, or -1 when the pool ran out.
  int64_t run(const std::vector<int32_t>& tokens, bool insert = true) {
    std::vector<int32_t> blocks;
    PrefixCache::Node* lock = nullptr;
    const int64_t m = cache.match(tokens, int64_t(tokens.size()) - 1, blocks, lock);
    check_content(tokens, blocks, m);
    if (m % kBs) {  // copy-on-write of the partly matched block
      int dst = alloc.allocate();
      if (dst < 0 && cache.evict_until_free(1)) dst = alloc.allocate();
      if (dst < 0) { release(blocks, lock); return -1; }
      kv.copy(blocks.back(), dst, int(m % kBs));
      alloc.release(blocks.back());
      blocks.back() = dst;
    }
    for (int64_t p = m; p < int64_t(tokens.size()); ++p) {
      if (p % kBs == 0) {
        int b = alloc.allocate();
        if (b < 0 && cache.evict_until_free(1)) b = alloc.allocate();
        if (b < 0) { release(blocks, lock); return -1; }
        blocks.push_back(b);
      }
      kv.write(blocks[size_t(p / kBs)], int(p % kBs), tokens[size_t(p)]);
    }
    if (insert) cache.insert(tokens, blocks);
    release(blocks, lock);
    return m;
  }
  void release(std::vector<int32_t>& blocks, PrefixCache::Node* lock) {
    if (lock) cache.unlock(lock);
    for (int32_t b : blocks) alloc.release(b);
  }
  void check_content(const std::vector<int32_t>& tokens, const std::vector<int32_t>& blocks, int64_t m) {
    ASSERT_EQ(int64_t(blocks.size()), (m + kBs - 1) / kBs);
    for (int64_t p = 0; p < m; ++p)
      ASSERT_EQ(kv.content[blocks[size_t(p / kBs)]][size_t(p % kBs)], tokens[size_t(p)]) << "position " << p;
  }
  // With no sequence live, every reference is the cache's.
  void check_accounting() {
    std::vector<int> refs(size_t(alloc.n_blocks()), 0);
    cache.count_references(refs);
    int free_count = 0;
    for (int b = 0; b < alloc.n_blocks(); ++b) {
      ASSERT_EQ(refs[size_t(b)], alloc.ref_count(b)) << "block " << b;
      free_count += refs[size_t(b)] == 0;
    }
    ASSERT_EQ(free_count, alloc.free_blocks());
    std::vector<int> hrefs(size_t(host_slots.n_blocks()), 0);
    cache.count_host_references(hrefs);
    for (int s = 0; s < host_slots.n_blocks(); ++s) ASSERT_EQ(hrefs[size_t(s)], host_slots.ref_count(s)) << "slot " << s;
  }
};

std::vector<int32_t> seq(std::initializer_list<int32_t> v) { return v; }

}  // namespace

TEST(PrefixCache, MatchesToTheTokenAtEveryBoundary) {
  Harness h(64);
  const std::vector<int32_t> a = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
  EXPECT_EQ(h.run(a), 0);
  // Every prefix length, block-aligned or not, is found exactly.
  for (size_t n = 1; n <= a.size(); ++n) {
    std::vector<int32_t> q(a.begin(), a.begin() + int64_t(n));
    q.push_back(99);  // one new token after the prefix
    EXPECT_EQ(h.run(q, /*insert=*/false), int64_t(n)) << n;
  }
  h.check_accounting();
}

TEST(PrefixCache, SplitsEdgesAndKeepsBothBranches) {
  Harness h(64);
  const auto a = seq({1, 2, 3, 4, 5, 6, 7, 8, 9});
  const auto b = seq({1, 2, 3, 4, 5, 6, 70, 80, 90, 100});  // diverges inside a block
  h.run(a);
  EXPECT_EQ(h.run(b), 6);
  EXPECT_EQ(h.cache.n_nodes(), 3u);  // shared [0,6), then each tail
  EXPECT_EQ(h.cache.cached_tokens(), 6 + 3 + 4);
  auto a2 = a;
  a2.push_back(42);
  auto b2 = b;
  b2.push_back(42);
  EXPECT_EQ(h.run(a2, false), int64_t(a.size()));  // both conversations resident
  EXPECT_EQ(h.run(b2, false), int64_t(b.size()));
  h.check_accounting();
}

TEST(PrefixCache, ConversationTurnsReuseEverything) {
  Harness h(64);
  std::vector<int32_t> convo = {5, 6, 7};
  for (int turn = 0; turn < 5; ++turn) {
    const int64_t before = int64_t(convo.size());
    for (int i = 0; i < 7; ++i) convo.push_back(100 * turn + i);  // the answer, then the next question
    const int64_t m = h.run(convo);
    if (turn > 0) EXPECT_EQ(m, before);
  }
  h.check_accounting();
}

TEST(PrefixCache, EvictsLeastRecentlyUsedUnlockedLeaves) {
  Harness h(64);
  h.run(seq({1, 1, 1, 1, 1, 1, 1, 1}));  // 2 blocks
  h.run(seq({2, 2, 2, 2, 2, 2, 2, 2}));
  h.run(seq({3, 3, 3, 3, 3, 3, 3, 3}));
  h.run(seq({1, 1, 1, 1, 1, 1, 1, 1, 9}), false);  // touches the first
  // A locked path survives eviction.
  std::vector<int32_t> blocks;
  PrefixCache::Node* lock = nullptr;
  EXPECT_EQ(h.cache.match(seq({3, 3, 3, 3, 3, 3, 3, 3, 5}), 8, blocks, lock), 8);
  EXPECT_TRUE(h.cache.evict_until_free(h.alloc.n_blocks()) == false);  // cannot free the locked one
  std::vector<int32_t> b2;
  PrefixCache::Node* l2 = nullptr;
  EXPECT_EQ(h.cache.match(seq({3, 3, 3, 3, 3, 3, 3, 3, 5}), 8, b2, l2), 8);
  h.release(b2, l2);
  EXPECT_EQ(h.cache.match(seq({1, 1, 1, 1, 1, 1, 1, 1, 5}), 8, b2, l2), 0);  // evicted
  h.cache.unlock(lock);
  for (int32_t b : blocks) h.alloc.release(b);
  EXPECT_TRUE(h.cache.evict_until_free(h.alloc.n_blocks()));
  EXPECT_EQ(h.cache.n_nodes(), 0u);
  EXPECT_EQ(h.alloc.free_blocks(), h.alloc.n_blocks());
}

TEST(PrefixCache, LruOrderDecidesWhatGoes) {
  Harness h(64);
  h.run(seq({1, 1, 1, 1, 1}));
  h.run(seq({2, 2, 2, 2, 2}));
  h.run(seq({1, 1, 1, 1, 1, 7}), false);  // 1 is now more recent than 2
  const int free_before = h.alloc.free_blocks();
  EXPECT_TRUE(h.cache.evict_until_free(free_before + 1));
  EXPECT_EQ(h.run(seq({2, 2, 2, 2, 2, 7}), false), 0);
  EXPECT_EQ(h.run(seq({1, 1, 1, 1, 1, 7}), false), 5);
}

TEST(PrefixCache, HostTierKeepsEvictedPrefixesAndBringsThemBack) {
  Harness h(6, 16);  // six device blocks: one 17-token document at a time
  std::vector<int32_t> A, B;
  for (int i = 0; i < 17; ++i) { A.push_back(10 + i); B.push_back(50 + i); }
  h.run(A);
  h.run(B);  // A's blocks go to the host tier to make room
  EXPECT_GT(h.host_slots.used_blocks(), 0);
  auto A2 = A;
  A2.push_back(7);
  EXPECT_EQ(h.run(A2, false), 17);  // all of A, copied back (run() checks every position's token)
  EXPECT_GT(h.cache.restored_blocks(), 0);
  auto B2 = B;
  B2.push_back(7);
  EXPECT_EQ(h.run(B2, false), 17);  // and B in turn
  h.check_accounting();
}

// Random conversations over a small alphabet (many shared prefixes and splits).
// Phase 1, a pool too big to evict: matches equal the reference exactly.
// Phase 2, a pool that must evict: every match is a real prefix of something
// inserted, its blocks hold exactly its tokens, and the accounting balances.
// Phase 3 adds a host tier: the same, with blocks going out and coming back.
TEST(PrefixCache, RandomizedAgainstReferenceModel) {
  // Phase 3: the same small pool with a host tier behind it.
  for (int phase = 0; phase < 3; ++phase) {
    Harness h(phase == 0 ? 4096 : 24, phase == 2 ? 40 : 0);
    std::mt19937 rng(1234 + phase);
    std::set<std::vector<int32_t>> inserted;
    std::vector<std::vector<int32_t>> history;
    for (int iter = 0; iter < 600; ++iter) {
      std::vector<int32_t> t;
      if (!history.empty() && rng() % 3 != 0) {  // extend or branch from an earlier sequence
        const auto& base = history[rng() % history.size()];
        t.assign(base.begin(), base.begin() + int64_t(rng() % (base.size() + 1)));
      }
      const int extra = 1 + int(rng() % 9);
      for (int i = 0; i < extra; ++i) t.push_back(int32_t(rng() % 3));
      if (t.size() < 2) t.push_back(int32_t(rng() % 3));
      // Reference: the longest prefix of t (at most |t| - 1) that starts some inserted sequence.
      int64_t ref = 0;
      for (const auto& s : inserted) {
        int64_t k = 0;
        while (k < int64_t(s.size()) && k < int64_t(t.size()) - 1 && s[size_t(k)] == t[size_t(k)]) ++k;
        ref = std::max(ref, k);
      }
      const int64_t m = h.run(t);
      if (::testing::Test::HasFatalFailure()) return;
      if (phase == 0) {
        ASSERT_EQ(m, ref) << "iteration " << iter;
      } else {
        ASSERT_LE(m, ref) << "iteration " << iter;
      }
      if (m >= 0) {
        inserted.insert(t);
        history.push_back(t);
      }
      h.check_accounting();
      if (::testing::Test::HasFatalFailure()) return;
    }
    if (phase == 2) EXPECT_GT(h.cache.restored_blocks(), 0) << "the host tier was never used";
  }
}
