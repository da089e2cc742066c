#include "tokenizer/bpe.h"

#include <algorithm>
#include <functional>

#include "tokenizer/utf8.h"
#include "util/error.h"
#include "util/quote.h"

namespace ember {

size_t StringHash::operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }

namespace {
struct ByteTable {
  uint32_t to_cp[256];
  int16_t from_cp[512];
  ByteTable() {
    std::fill(std::begin(from_cp), std::end(from_cp), int16_t(-1));
    // Printable Latin-1 bytes stand for themselves; the rest are moved to 256+.
    uint32_t extra = 0;
    for (int b = 0; b < 256; ++b) {
      bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      to_cp[b] = printable ? uint32_t(b) : 256 + extra++;
      from_cp[to_cp[b]] = int16_t(b);
    }
  }
};
const ByteTable& byte_table() { static const ByteTable t; return t; }

// Undoes the byte-to-printable mapping; false when a character is not a stand-in.
bool unmap_bytes(std::string_view spelling, std::string& raw) {
  raw.clear();
  size_t i = 0;
  while (i < spelling.size()) {
    int b = codepoint_to_byte(utf8::next(spelling, i));
    if (b < 0) return false;
    raw.push_back(char(b));
  }
  return true;
}

uint64_t pair_key(int32_t a, int32_t b) { return (uint64_t(uint32_t(a)) << 32) | uint32_t(b); }
uint64_t mix(uint64_t k) {
  k ^= k >> 33; k *= 0xff51afd7ed558ccdULL; k ^= k >> 33; k *= 0xc4ceb9fe1a85ec53ULL; k ^= k >> 33;
  return k;
}
constexpr uint64_t kEmpty = ~uint64_t(0);
constexpr size_t kMaxCachedWord = 128;
constexpr size_t kMaxCacheEntries = 200000;
}  // namespace

uint32_t byte_to_codepoint(uint8_t b) { return byte_table().to_cp[b]; }
int codepoint_to_byte(uint32_t cp) { return cp < 512 ? byte_table().from_cp[cp] : -1; }

BpeModel::BpeModel(std::vector<std::string> tokens, const std::vector<std::pair<std::string, std::string>>& merges,
                   Options opt)
    : opt_(opt), tokens_(std::move(tokens)) {
  by_spelling_.reserve(tokens_.size());
  std::string raw;
  for (size_t id = 0; id < tokens_.size(); ++id) {
    const std::string& t = tokens_[id];
    if (t.empty()) continue;
    by_spelling_[t] = int32_t(id);  // a later id with the same spelling wins, as in the reference
  }
  if (opt_.byte_level) {
    by_key_.reserve(by_spelling_.size());
    for (const auto& [spelling, id] : by_spelling_)
      if (unmap_bytes(spelling, raw)) by_key_[raw] = id;
  }
  const TokenMap& keys = opt_.byte_level ? by_key_ : by_spelling_;
  for (int b = 0; b < 256; ++b) {
    auto it = keys.find(std::string_view(reinterpret_cast<const char*>(&b), 1));
    byte_symbol_[b] = (opt_.byte_level && it != keys.end()) ? it->second : -1;
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    byte_fallback_[b] = find(name);
  }
  for (int c = 0; c < 128; ++c) {
    char ch = char(c);
    auto it = by_spelling_.find(std::string_view(&ch, 1));
    ascii_symbol_[c] = it != by_spelling_.end() ? it->second : -1;
  }

  size_t cap = 16;
  while (cap < merges.size() * 2) cap <<= 1;
  table_.assign(cap, MergeEntry{kEmpty, 0, -1});
  mask_ = cap - 1;
  merge_list_.reserve(merges.size());
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const auto& [l, r] = merges[rank];
    int32_t a = find(l), b = find(r);
    if (a < 0 || b < 0)
      throw Error("tokenizer merges: entry " + std::to_string(rank) + " ('" + excerpt(l + " " + r) + "') names a token '" +
                  excerpt(a < 0 ? l : r) + "' that is not in the vocabulary");
    int32_t result = find(l + r);
    if (result < 0)
      throw Error("tokenizer merges: entry " + std::to_string(rank) + " ('" + excerpt(l + " " + r) + "') produces '" +
                  excerpt(l + r) + "', which is not in the vocabulary");
    merge_list_.emplace_back(a, b);
    uint64_t key = pair_key(a, b);
    for (uint64_t slot = mix(key) & mask_;; slot = (slot + 1) & mask_) {
      MergeEntry& e = table_[slot];
      if (e.key == kEmpty || e.key == key) {
        // A repeated pair takes its later rank, as the reference's map does.
        e = MergeEntry{key, uint32_t(rank), result};
        break;
      }
    }
  }
}

int32_t BpeModel::find(std::string_view spelling) const {
  auto it = by_spelling_.find(spelling);
  return it == by_spelling_.end() ? -1 : it->second;
}

const BpeModel::MergeEntry* BpeModel::find_merge(int32_t a, int32_t b) const {
  uint64_t key = pair_key(a, b);
  for (uint64_t slot = mix(key) & mask_;; slot = (slot + 1) & mask_) {
    const MergeEntry& e = table_[slot];
    if (e.key == key) return &e;
    if (e.key == kEmpty) return nullptr;
  }
}

int32_t BpeModel::char_symbol(std::string_view ch) const {
  if (ch.size() == 1 && uint8_t(ch[0]) < 128) return ascii_symbol_[uint8_t(ch[0])];
  return find(ch);
}

void BpeModel::encode_word(std::string_view word, std::vector<int32_t>& out) const {
  if (word.empty()) return;
  if (opt_.ignore_merges) {
    const TokenMap& keys = opt_.byte_level ? by_key_ : by_spelling_;
    auto it = keys.find(word);
    if (it != keys.end()) { out.push_back(it->second); return; }
  }
  if (word.size() > kMaxCachedWord) { bpe(word, out); return; }
  {
    std::lock_guard<std::mutex> lock(cache_->mu);
    auto it = cache_->words.find(word);
    if (it != cache_->words.end()) { out.insert(out.end(), it->second.begin(), it->second.end()); return; }
  }
  size_t first = out.size();
  bpe(word, out);
  std::lock_guard<std::mutex> lock(cache_->mu);
  if (cache_->words.size() >= kMaxCacheEntries) cache_->words.clear();
  cache_->words.emplace(std::string(word), std::vector<int32_t>(out.begin() + long(first), out.end()));
}

void BpeModel::bpe(std::string_view word, std::vector<int32_t>& out) const {
  struct Sym { int32_t id; int32_t prev, next; uint32_t start, len; };
  struct Cand { uint32_t rank; uint32_t pos; int32_t left, right, result; };
  thread_local std::vector<Sym> syms;
  thread_local std::vector<Cand> heap;
  syms.clear();
  heap.clear();

  if (opt_.byte_level) {
    for (size_t i = 0; i < word.size(); ++i)
      syms.push_back(Sym{byte_symbol_[uint8_t(word[i])], int32_t(syms.size()) - 1, int32_t(syms.size()) + 1,
                         uint32_t(i), 1});
  } else {
    for (size_t i = 0; i < word.size();) {
      size_t len = std::min<size_t>(size_t(utf8::seq_len(uint8_t(word[i]))), word.size() - i);
      syms.push_back(Sym{char_symbol(word.substr(i, len)), int32_t(syms.size()) - 1, int32_t(syms.size()) + 1,
                         uint32_t(i), uint32_t(len)});
      i += len;
    }
  }
  syms.back().next = -1;

  // Min-heap on (rank, position): lowest rank first, leftmost on ties.
  auto later = [](const Cand& x, const Cand& y) { return x.rank != y.rank ? x.rank > y.rank : x.pos > y.pos; };
  auto consider = [&](int32_t pos) {
    const Sym& l = syms[size_t(pos)];
    if (l.id < 0 || l.next < 0) return;
    const Sym& r = syms[size_t(l.next)];
    if (r.id < 0) return;
    if (const MergeEntry* m = find_merge(l.id, r.id)) {
      heap.push_back(Cand{m->rank, uint32_t(pos), l.id, r.id, m->result});
      std::push_heap(heap.begin(), heap.end(), later);
    }
  };
  for (int32_t i = 0; i + 1 < int32_t(syms.size()); ++i) consider(i);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), later);
    Cand c = heap.back();
    heap.pop_back();
    Sym& l = syms[c.pos];
    if (l.id != c.left || l.next < 0) continue;  // stale: the left symbol changed or died
    Sym& r = syms[size_t(l.next)];
    if (r.id != c.right) continue;
    l.id = c.result;
    l.len += r.len;
    l.next = r.next;
    if (r.next >= 0) syms[size_t(r.next)].prev = int32_t(c.pos);
    r.id = -2;  // dead
    if (l.prev >= 0) consider(l.prev);
    consider(int32_t(c.pos));
  }

  for (int32_t i = 0; i >= 0; i = syms[size_t(i)].next) {
    const Sym& s = syms[size_t(i)];
    if (s.id >= 0) { out.push_back(s.id); continue; }
    bool fell_back = false;
    if (opt_.byte_fallback) {
      fell_back = true;
      for (uint32_t k = 0; k < s.len; ++k)
        if (byte_fallback_[uint8_t(word[s.start + k])] < 0) fell_back = false;
      if (fell_back)
        for (uint32_t k = 0; k < s.len; ++k) out.push_back(byte_fallback_[uint8_t(word[s.start + k])]);
    }
    // Consecutive unknowns are fused by the caller, across words (fuse_unk).
    if (!fell_back && opt_.unk_id >= 0) out.push_back(opt_.unk_id);
  }
}

}  // namespace ember
