#include "tokenizer/tokenizer.h"

#include <utf8proc.h>

#include <algorithm>
#include <utility>
#include <span>
#include <tuple>
#include <cstdlib>
#include <unordered_set>

#include "tokenizer/impl.h"
#include "tokenizer/utf8.h"
#include "util/error.h"
#include "util/limits.h"
#include "util/quote.h"

namespace ember {

// ---- added-token trie -------------------------------------------------------

namespace {
// Child of `node` on byte `b` in a byte-sorted edge list, -1 if none.
int32_t find_edge(const std::vector<std::pair<uint8_t, int32_t>>& next, uint8_t b) {
  auto it = std::lower_bound(next.begin(), next.end(), b, [](const auto& e, uint8_t x) { return e.first < x; });
  return it != next.end() && it->first == b ? it->second : -1;
}

// Adds the edges for `s` below the root of `nodes`; returns the last node.
template <class Node>
int32_t insert_path(std::vector<Node>& nodes, std::string_view s) {
  int32_t node = 0;
  for (char ch : s) {
    const auto c = uint8_t(ch);
    int32_t next = find_edge(nodes[size_t(node)].next, c);
    if (next < 0) {
      next = int32_t(nodes.size());
      auto& edges = nodes[size_t(node)].next;
      edges.insert(std::lower_bound(edges.begin(), edges.end(), std::make_pair(c, int32_t(-1))), {c, next});
      nodes.emplace_back();
    }
    node = next;
  }
  return node;
}
}  // namespace

void AddedTokenTrie::add(std::string_view s, int32_t index) {
  if (s.empty()) return;
  first_[uint8_t(s[0])] = true;
  nodes_[size_t(insert_path(nodes_, s))].token = index;  // a later token with the same spelling wins
}

int32_t AddedTokenTrie::child(int32_t node, uint8_t b) const { return find_edge(nodes_[size_t(node)].next, b); }

std::pair<size_t, int32_t> AddedTokenTrie::longest_at(std::string_view text, size_t pos) const {
  std::pair<size_t, int32_t> best{0, -1};
  int32_t node = 0;
  for (size_t i = pos; i < text.size(); ++i) {
    node = child(node, uint8_t(text[i]));
    if (node < 0) break;
    if (nodes_[size_t(node)].token >= 0) best = {i + 1 - pos, nodes_[size_t(node)].token};
  }
  return best;
}

// ---- added-token automaton --------------------------------------------------

void AddedTokenMatcher::add(std::string_view s, int32_t index) {
  if (s.empty()) return;
  const std::string reversed(s.rbegin(), s.rend());
  const int32_t node = insert_path(nodes_, reversed);
  nodes_[size_t(node)].token = index;
  nodes_[size_t(node)].depth = uint32_t(s.size());
  max_len_ = std::max(max_len_, s.size());
}

int32_t AddedTokenMatcher::child(int32_t node, uint8_t b) const { return find_edge(nodes_[size_t(node)].next, b); }

void AddedTokenMatcher::build() {
  // Breadth first, so that a node's failure link (a shorter suffix) is final before its children's.
  std::vector<int32_t> queue{0};
  nodes_[0].longest = -1;
  for (size_t q = 0; q < queue.size(); ++q) {
    const int32_t u = queue[q];
    for (const auto& [b, v] : nodes_[size_t(u)].next) {
      int32_t f = nodes_[size_t(u)].fail;
      int32_t to = -1;
      if (u != 0) {
        for (;;) {
          to = child(f, b);
          if (to >= 0 || f == 0) break;
          f = nodes_[size_t(f)].fail;
        }
      }
      Node& n = nodes_[size_t(v)];
      n.fail = to >= 0 ? to : 0;
      n.longest = n.token >= 0 ? v : nodes_[size_t(n.fail)].longest;
      queue.push_back(v);
    }
  }
}

void AddedTokenMatcher::starts(std::string_view text, size_t begin, size_t end, std::vector<Start>& out) const {
  out.clear();
  if (empty() || begin >= end) return;
  // The state at position j depends on text[j, j + max_len) only: starting
  // max_len bytes past the block gives the states the whole text would.
  int32_t state = 0;
  for (size_t j = std::min(text.size(), end + max_len_); j-- > begin;) {
    const auto b = uint8_t(text[j]);
    int32_t next = child(state, b);
    while (next < 0 && state != 0) {
      state = nodes_[size_t(state)].fail;
      next = child(state, b);
    }
    state = next < 0 ? 0 : next;
    if (j >= end) continue;
    if (const int32_t hit = nodes_[size_t(state)].longest; hit >= 0)
      out.push_back(Start{j, nodes_[size_t(hit)].depth, nodes_[size_t(hit)].token});
  }
  std::reverse(out.begin(), out.end());
}

// ---- helpers ----------------------------------------------------------------

namespace {

void replace_all(std::string& s, std::string_view from, std::string_view to) {
  if (from.empty() || s.find(from) == std::string::npos) return;
  std::string out;
  out.reserve(s.size());
  size_t pos = 0;
  for (size_t hit; (hit = s.find(from, pos)) != std::string::npos; pos = hit + from.size()) {
    out.append(s, pos, hit - pos);
    out.append(to);
  }
  out.append(s, pos, std::string::npos);
  s.swap(out);
}

bool is_ascii(std::string_view s) {
  for (char c : s)
    if (uint8_t(c) >= 0x80) return false;
  return true;
}

struct Section {
  std::string_view text;
};

// Splits `s` around added-token matches (leftmost, longest at each position).
// Inside `zones` (byte ranges of `s`, sorted), only `plain` (non-special)
// tokens may match: a special token's text there stays text.
void split_on_added(std::string_view s, const AddedTokenMatcher& all, std::vector<Section>& out,
                    const AddedTokenMatcher* plain = nullptr, std::span<const std::pair<size_t, size_t>> zones = {}) {
  out.clear();
  if (all.empty()) { out.push_back({s}); return; }
  constexpr size_t kBlock = 64 * 1024;
  thread_local std::vector<AddedTokenMatcher::Start> found, found_plain;
  size_t zone = 0;  // candidates come in ascending order, so do the zones they may touch
  auto overlaps_zone = [&](size_t b, size_t e) {
    while (zone < zones.size() && zones[zone].second <= b) ++zone;
    for (size_t z = zone; z < zones.size() && zones[z].first < e; ++z)
      if (zones[z].second > b) return true;
    return false;
  };
  size_t start = 0, i = 0;  // i: where the next match may start
  for (size_t block = 0; block < s.size(); block += kBlock) {
    const size_t block_end = std::min(s.size(), block + kBlock);
    if (i >= block_end) continue;
    all.starts(s, std::max(block, i), block_end, found);
    if (plain && !zones.empty()) plain->starts(s, std::max(block, i), block_end, found_plain);
    size_t p = 0;  // next candidate in found_plain
    for (AddedTokenMatcher::Start m : found) {
      if (m.pos < i) continue;
      if (plain && !zones.empty() && overlaps_zone(m.pos, m.pos + m.len)) {
        while (p < found_plain.size() && found_plain[p].pos < m.pos) ++p;
        if (p == found_plain.size() || found_plain[p].pos != m.pos) continue;
        m = found_plain[p];
      }
      if (m.pos > start) out.push_back({s.substr(start, m.pos - start)});
      out.push_back({s.substr(m.pos, m.len)});
      i = start = m.pos + m.len;
    }
  }
  if (start < s.size()) out.push_back({s.substr(start)});
}

// The ByteLevel pre-tokenizer's own split (GPT-2's pattern, JavaScript's \s set).
const char kJsSpace[] = "\\t\\n\\x0B\\f\\r \\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}\\x{FEFF}";
// Ends a run of raw bytes that decoders turned tokens into: the run becomes one
// UTF-8 text piece (invalid sequences as U+FFFD). For the last run, records
// whether it stopped inside a sequence, which streaming decode must hold back.
void flush_utf8_run(std::string& bytes, bool last, std::vector<std::string>& out, bool& pending_tail) {
  utf8::Decoder dec;
  std::string text;
  dec.feed(bytes, text);
  if (last) pending_tail = dec.pending();
  dec.finish(text);
  out.push_back(std::move(text));
  bytes.clear();
}

std::string gpt2_pattern() {
  std::string s = kJsSpace;
  return "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^" + s + "\\p{L}\\p{N}]+|[" + s + "]+(?![^" + s + "])|[" +
         s + "]+";
}

}  // namespace

std::string clean_up_tokenization(std::string s) {
  if (s.find(' ') == std::string::npos) return s;
  static const std::pair<const char*, const char*> kRules[] = {
      {" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","}, {" ' ", "'"},
      {" n't", "n't"}, {" 'm", "'m"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
  for (auto& [from, to] : kRules) replace_all(s, from, to);
  return s;
}

// ---- Impl -------------------------------------------------------------------

std::string Tokenizer::Impl::normalize(std::string_view in, size_t regex_window) const {
  std::string s(in);
  for (size_t k = 0; k < spec.normalizers.size(); ++k) {
    const NormalizerStep& n = spec.normalizers[k];
    switch (n.kind) {
      case NormalizerStep::Kind::NFC: case NormalizerStep::Kind::NFD:
      case NormalizerStep::Kind::NFKC: case NormalizerStep::Kind::NFKD: {
        if (is_ascii(s)) break;  // every form leaves ASCII unchanged
        int opts = UTF8PROC_STABLE;
        if (n.kind == NormalizerStep::Kind::NFC || n.kind == NormalizerStep::Kind::NFKC) opts |= UTF8PROC_COMPOSE;
        else opts |= UTF8PROC_DECOMPOSE;
        if (n.kind == NormalizerStep::Kind::NFKC || n.kind == NormalizerStep::Kind::NFKD) opts |= UTF8PROC_COMPAT;
        utf8proc_uint8_t* buf = nullptr;
        utf8proc_ssize_t len = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(s.data()),
                                            utf8proc_ssize_t(s.size()), &buf, utf8proc_option_t(opts));
        if (len < 0) throw Error(std::string("tokenizer normalizer: ") + utf8proc_errmsg(len));
        s.assign(reinterpret_cast<const char*>(buf), size_t(len));
        std::free(buf);
        break;
      }
      case NormalizerStep::Kind::Replace:
        if (n.pattern_is_regex) {
          std::vector<std::pair<size_t, size_t>> m;
          norm_regex[k]->find_all(s, m, regex_window);
          if (m.empty()) break;
          std::string out;
          size_t prev = 0;
          for (auto [a, b] : m) { out.append(s, prev, a - prev); out += n.content; prev = b; }
          out.append(s, prev, std::string::npos);
          s.swap(out);
        } else {
          replace_all(s, n.pattern, n.content);
        }
        break;
      case NormalizerStep::Kind::Prepend:
        s.insert(0, n.content);
        break;
    }
  }
  return s;
}

void Tokenizer::Impl::pre_tokenize(std::string_view s, size_t section_index, std::string& arena,
                                   std::vector<std::pair<size_t, size_t>>& words, size_t regex_window) const {
  arena.assign(s);
  words.assign(1, {0, s.size()});
  thread_local std::vector<std::pair<size_t, size_t>> next, matches;
  for (size_t k = 0; k < spec.pre_tokenizers.size(); ++k) {
    const PreTokenizerStep& p = spec.pre_tokenizers[k];
    next.clear();
    for (auto [off, len] : words) {
      std::string_view w(arena.data() + off, len);
      switch (p.kind) {
        case PreTokenizerStep::Kind::Split: {
          matches.clear();
          split_regex[k]->find_all(w, matches, regex_window);
          if (p.invert) {
            for (auto [a, b] : matches) next.emplace_back(off + a, b - a);
          } else {
            bool removed = p.behavior == "Removed" || p.behavior == "removed";
            size_t prev = 0;
            for (auto [a, b] : matches) {
              if (a > prev) next.emplace_back(off + prev, a - prev);
              if (!removed) next.emplace_back(off + a, b - a);
              prev = b;
            }
            if (prev < len) next.emplace_back(off + prev, len - prev);
          }
          break;
        }
        case PreTokenizerStep::Kind::ByteLevel: {
          size_t o = off, l = len;
          if (p.add_prefix_space && (len == 0 || arena[off] != ' ')) {
            std::string tmp = " " + std::string(w);
            o = arena.size();
            l = tmp.size();
            arena += tmp;
          }
          if (!p.use_regex) { next.emplace_back(o, l); break; }
          matches.clear();
          split_regex[k]->find_all(std::string_view(arena.data() + o, l), matches, regex_window);
          for (auto [a, b] : matches) next.emplace_back(o + a, b - a);
          break;
        }
        case PreTokenizerStep::Kind::Metaspace: {
          std::string t(w);
          replace_all(t, " ", p.replacement);
          bool prepend = p.prepend_scheme == "always" || (p.prepend_scheme == "first" && section_index == 0);
          if (prepend && t.compare(0, p.replacement.size(), p.replacement) != 0) t.insert(0, p.replacement);
          next.emplace_back(arena.size(), t.size());
          arena += t;
          break;
        }
        case PreTokenizerStep::Kind::Digits: {
          matches.clear();
          split_regex[k]->find_all(w, matches, regex_window);
          for (auto [a, b] : matches) next.emplace_back(off + a, b - a);
          break;
        }
      }
    }
    words.swap(next);
  }
}

void Tokenizer::Impl::encode(std::string_view text, bool add_special, bool parse_special,
                             std::vector<int32_t>& out, std::span<const std::pair<size_t, size_t>> plain_zones,
                             size_t regex_window) const {
  std::string clean;
  std::string_view s = text;
  if (!utf8::is_valid(text)) {
    clean = utf8::sanitize(text);
    s = clean;
    // The zones' offsets no longer hold: keep every special token as text (the safe side).
    if (!plain_zones.empty()) { parse_special = false; plain_zones = {}; }
  }
  if (add_special) out.insert(out.end(), spec.prefix.begin(), spec.prefix.end());

  // Whether the piece `t` of `s` (a view into it) touches a plain zone.
  auto in_zone = [&](std::string_view t) {
    if (plain_zones.empty() || t.data() < s.data() || t.data() > s.data() + s.size()) return false;
    const size_t b = size_t(t.data() - s.data()), e = b + t.size();
    for (const auto& [zb, ze] : plain_zones)
      if (b < ze && e > zb) return true;
    return false;
  };
  auto lookup = [&](std::string_view t) -> int32_t {
    auto it = added_by_text.find(t);
    if (it == added_by_text.end()) return -1;
    if ((!parse_special || in_zone(t)) && spec.added[size_t(it->second)].special) return -1;
    return it->second;
  };
  // lstrip/rstrip: an added token eats the whitespace next to it.
  auto strip_around = [&](std::vector<Section>& secs) {
    for (size_t i = 0; i < secs.size(); ++i) {
      int32_t a = lookup(secs[i].text);
      if (a < 0) continue;
      const AddedToken& t = spec.added[size_t(a)];
      if (t.lstrip && i > 0) secs[i - 1].text = utf8::trim_js_end(secs[i - 1].text);
      if (t.rstrip && i + 1 < secs.size()) secs[i + 1].text = utf8::trim_js_start(secs[i + 1].text);
    }
  };

  std::vector<Section> sections, subs;
  split_on_added(s, parse_special ? raw_all : raw_plain, sections, &raw_plain, plain_zones);
  strip_around(sections);
  thread_local std::string arena;
  thread_local std::vector<std::pair<size_t, size_t>> words;
  for (size_t i = 0; i < sections.size(); ++i) {
    std::string_view sec = sections[i].text;
    if (sec.empty()) continue;
    if (int32_t a = lookup(sec); a >= 0) { out.push_back(spec.added[size_t(a)].id); continue; }
    std::string norm = spec.normalizers.empty() ? std::string(sec) : normalize(sec, regex_window);
    if (norm.empty()) continue;
    // A section that touches a zone is matched with the plain tokens only (its
    // offsets change in normalisation; template text's special tokens were
    // already taken whole by the raw pass above).
    split_on_added(norm, parse_special && !in_zone(sec) ? normalized_all : normalized_plain, subs);
    strip_around(subs);
    for (const Section& sub : subs) {
      if (sub.text.empty()) continue;
      if (int32_t a = lookup(sub.text); a >= 0 && (!in_zone(sec) || !spec.added[size_t(a)].special)) {
        out.push_back(spec.added[size_t(a)].id);
        continue;
      }
      size_t first = out.size();
      if (spec.pre_tokenizers.empty()) {
        model.encode_word(sub.text, out);
      } else {
        pre_tokenize(sub.text, i, arena, words, regex_window);
        for (auto [off, len] : words) model.encode_word(std::string_view(arena.data() + off, len), out);
      }
      if (!id_remap.empty())
        for (size_t k = first; k < out.size(); ++k) out[k] = id_remap[size_t(out[k])];
      if (model.options().fuse_unk && model.options().unk_id >= 0) {
        int32_t unk = model.options().unk_id;
        size_t w = first;
        for (size_t k = first; k < out.size(); ++k)
          if (!(out[k] == unk && w > first && out[w - 1] == unk)) out[w++] = out[k];
        out.resize(w);
      }
    }
  }
  if (add_special) out.insert(out.end(), spec.suffix.begin(), spec.suffix.end());
}

DecodeResult Tokenizer::Impl::decode_raw(const std::vector<int32_t>& ids, bool continuation, bool raw_bytes) const {
  std::vector<std::string> toks;
  toks.reserve(ids.size());
  for (int32_t id : ids) {
    if (id < 0 || size_t(id) >= spec.tokens.size())
      throw Error("decode: token id " + std::to_string(id) + " is outside the vocabulary (size " +
                  std::to_string(spec.tokens.size()) + ")");
    toks.push_back(spec.tokens[size_t(id)]);
  }
  DecodeResult r;
  if (spec.decoders.empty()) {
    for (size_t i = 0; i < toks.size(); ++i) { if (i) r.text += ' '; r.text += toks[i]; }
    return r;
  }
  bool fused = false;
  for (const DecoderStep& d : spec.decoders) {
    std::vector<std::string> out;
    switch (d.kind) {
      case DecoderStep::Kind::ByteLevel: {
        // Runs of ordinary tokens become bytes (then UTF-8 text); added tokens pass through.
        std::string bytes;
        bool in_run = false;
        auto flush = [&](bool last) {
          if (!in_run) return;
          if (raw_bytes) out.push_back(std::exchange(bytes, {}));
          else flush_utf8_run(bytes, last, out, r.pending_tail);
          in_run = false;
        };
        r.pending_tail = false;
        for (const std::string& t : toks) {
          if (added_spelling.count(t)) { flush(false); out.push_back(t); continue; }
          in_run = true;
          size_t i = 0;
          while (i < t.size()) {
            int b = codepoint_to_byte(utf8::next(t, i));
            bytes.push_back(char(b < 0 ? 0 : b));  // the reference maps unknown characters to 0
          }
        }
        flush(true);
        break;
      }
      case DecoderStep::Kind::Replace:
        for (std::string& t : toks) replace_all(t, d.pattern, d.content);
        out.swap(toks);
        break;
      case DecoderStep::Kind::ByteFallback: {
        std::string bytes;
        auto flush = [&](bool last) {
          if (bytes.empty()) return;
          if (raw_bytes) out.push_back(std::exchange(bytes, {}));
          else flush_utf8_run(bytes, last, out, r.pending_tail);
        };
        r.pending_tail = false;
        for (const std::string& t : toks) {
          // <0xHH>: the reference parses the two characters as hex, stopping at the first non-digit.
          int byte = -1;
          if (t.size() == 6 && t.compare(0, 3, "<0x") == 0 && t[5] == '>' && std::isxdigit(uint8_t(t[3])))
            byte = std::isxdigit(uint8_t(t[4])) ? int(std::strtol(t.substr(3, 2).c_str(), nullptr, 16))
                                                : int(std::strtol(t.substr(3, 1).c_str(), nullptr, 16));
          if (byte >= 0) { bytes.push_back(char(byte)); continue; }
          flush(false);
          out.push_back(t);
        }
        flush(true);
        break;
      }
      case DecoderStep::Kind::Fuse: {
        std::string all;
        for (const std::string& t : toks) all += t;
        out.push_back(std::move(all));
        fused = true;
        break;
      }
      case DecoderStep::Kind::Strip: {
        // Removes up to `start` leading and `stop` trailing copies of `content`
        // from each element; after Fuse that is the start of the whole output.
        for (std::string& t : toks) {
          std::string_view v = t;
          if (!(fused && continuation))
            for (int k = 0; k < d.start && !d.content.empty() && v.substr(0, d.content.size()) == d.content; ++k)
              v.remove_prefix(d.content.size());
          for (int k = 0; k < d.stop && !d.content.empty() && v.size() >= d.content.size() &&
                          v.substr(v.size() - d.content.size()) == d.content; ++k)
            v.remove_suffix(d.content.size());
          out.emplace_back(v);
        }
        break;
      }
      case DecoderStep::Kind::Metaspace:
        for (size_t i = 0; i < toks.size(); ++i) {
          std::string t = toks[i];
          replace_all(t, d.replacement, " ");
          if (i == 0 && !continuation && !t.empty() && t[0] == ' ') t.erase(0, 1);
          out.push_back(std::move(t));
        }
        break;
    }
    toks.swap(out);
  }
  for (const std::string& t : toks) r.text += t;
  return r;
}

std::string Tokenizer::Impl::decode(const std::vector<int32_t>& ids, bool skip_special) const {
  std::vector<int32_t> kept;
  const std::vector<int32_t>* use = &ids;
  if (skip_special) {
    kept.reserve(ids.size());
    for (int32_t id : ids)
      if (!(id >= 0 && size_t(id) < skip_on_decode.size() && skip_on_decode[size_t(id)])) kept.push_back(id);
    use = &kept;
  }
  std::string text = decode_raw(*use, false).text;
  return spec.clean_up_spaces ? clean_up_tokenization(std::move(text)) : text;
}

// ---- Tokenizer --------------------------------------------------------------

Tokenizer Tokenizer::from_spec(TokenizerSpec spec) {
  auto impl = std::make_shared<Impl>();
  const size_t n = spec.tokens.size();
  if (n == 0) throw Error("tokenizer: the vocabulary is empty");
  auto check_id = [&](int32_t id, const std::string& what) {
    if (id < -1 || (id >= 0 && size_t(id) >= n))
      throw Error("tokenizer: " + what + " id " + std::to_string(id) + " is outside the vocabulary (size " +
                  std::to_string(n) + ")");
  };
  for (size_t id = 0; id < n; ++id)
    if (spec.tokens[id].size() > limits::kMaxTokenBytes)
      throw Error("tokenizer: token " + std::to_string(id) + " is " + std::to_string(spec.tokens[id].size()) +
                  " bytes long, more than the limit of " + std::to_string(limits::kMaxTokenBytes));
  for (const AddedToken& a : spec.added) {
    // Added tokens are matched at every position of the input: their length
    // bounds the work per input byte.
    if (a.content.size() > limits::kMaxAddedTokenBytes)
      throw Error("tokenizer: added token " + std::to_string(a.id) + " ('" + excerpt(a.content) + "') is " +
                  std::to_string(a.content.size()) + " bytes long, more than the limit of " +
                  std::to_string(limits::kMaxAddedTokenBytes));
    if (a.id < 0 || size_t(a.id) >= n) check_id(a.id < 0 ? -2 : a.id, "added token '" + excerpt(a.content) + "'");
    if (a.content.empty()) throw Error("tokenizer: added token " + std::to_string(a.id) + " has empty content");
    spec.tokens[size_t(a.id)] = a.content;  // the added token's content is its spelling
  }
  check_id(spec.bos, "bos"); check_id(spec.eos, "eos"); check_id(spec.pad, "pad"); check_id(spec.model.unk_id, "unk");
  for (int32_t id : spec.prefix) check_id(id < 0 ? -2 : id, "post-processor");
  for (int32_t id : spec.suffix) check_id(id < 0 ? -2 : id, "post-processor");

  impl->model = BpeModel(spec.tokens, spec.merges, spec.model);
  spec.merges.clear();  // kept as ids in the model
  spec.merges.shrink_to_fit();

  for (size_t k = 0; k < spec.normalizers.size(); ++k) {
    const NormalizerStep& s = spec.normalizers[k];
    impl->norm_regex.emplace_back();
    if (s.kind == NormalizerStep::Kind::Replace && s.pattern_is_regex)
      impl->norm_regex.back().emplace(s.pattern, "normalizer Replace pattern");
  }
  Impl* im = impl.get();
  im->spec = std::move(spec);
  const TokenizerSpec& sp = im->spec;
  for (const PreTokenizerStep& p : sp.pre_tokenizers) {
    im->split_regex.emplace_back();
    switch (p.kind) {
      case PreTokenizerStep::Kind::Split:
        if (p.pattern_is_regex) im->split_regex.back().emplace(p.pattern, "pre_tokenizer Split pattern");
        else im->split_regex.back().emplace(Regex::literal(p.pattern, "pre_tokenizer Split pattern"));
        break;
      case PreTokenizerStep::Kind::ByteLevel:
        if (p.use_regex) im->split_regex.back().emplace(gpt2_pattern(), "pre_tokenizer ByteLevel");
        break;
      case PreTokenizerStep::Kind::Digits:
        im->split_regex.back().emplace(p.individual_digits ? "[^0-9]+|[0-9]" : "[^0-9]+|[0-9]+", "pre_tokenizer Digits");
        break;
      case PreTokenizerStep::Kind::Metaspace:
        break;
    }
  }

  std::unordered_set<std::string> special_spellings(sp.extra_special.begin(), sp.extra_special.end());
  for (size_t i = 0; i < sp.added.size(); ++i) {
    const AddedToken& a = sp.added[i];
    auto idx = int32_t(i);
    im->added_by_text[a.content] = idx;
    im->added_spelling[a.content] = a.id;
    if (a.special) special_spellings.insert(a.content);
    if (!a.normalized || sp.normalizers.empty()) {
      im->raw_all.add(a.content, idx);
      if (!a.special) im->raw_plain.add(a.content, idx);
    } else {
      std::string nc = im->normalize(a.content);
      im->added_by_text[nc] = idx;
      im->normalized_all.add(nc, idx);
      if (!a.special) im->normalized_plain.add(nc, idx);
      // A model piece spelled like the normalized content takes the added token's id.
      int32_t mid = im->model.find(nc);
      if (mid >= 0 && mid != a.id) {
        if (im->id_remap.empty()) {
          im->id_remap.resize(n);
          for (size_t k = 0; k < n; ++k) im->id_remap[k] = int32_t(k);
        }
        im->id_remap[size_t(mid)] = a.id;
      }
    }
  }
  for (AddedTokenMatcher* m : {&im->raw_all, &im->raw_plain, &im->normalized_all, &im->normalized_plain}) m->build();
  im->skip_on_decode.assign(n, 0);
  im->end_of_generation.assign(n, 0);
  static const char* kEndOfTurn[] = {"<|im_end|>", "<|eot_id|>", "<|eom_id|>", "<end_of_turn>", "<|endoftext|>",
                                     "<|end_of_text|>", "<|end|>", "<eos>", "</s>"};
  for (size_t id = 0; id < n; ++id) {
    const std::string& t = sp.tokens[id];
    if (special_spellings.count(t)) im->skip_on_decode[id] = 1;
  }
  for (const char* name : kEndOfTurn) {
    auto it = im->added_spelling.find(std::string_view(name));
    if (it != im->added_spelling.end()) im->end_of_generation[size_t(it->second)] = 1;
  }
  if (sp.eos >= 0) im->end_of_generation[size_t(sp.eos)] = 1;
  Tokenizer t;
  t.impl_ = std::move(impl);
  return t;
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special, bool parse_special) const {
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 4);
  impl_->encode(text, add_special, parse_special, out);
  return out;
}

std::vector<int32_t> Tokenizer::encode_with_plain_zones(std::string_view text,
                                                       std::span<const std::pair<size_t, size_t>> plain_zones,
                                                       bool add_special) const {
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 4);
  impl_->encode(text, add_special, /*parse_special=*/true, out, plain_zones);
  return out;
}

std::string Tokenizer::token_bytes(int32_t id) const { return impl_->decode_raw({id}, /*continuation=*/true, /*raw_bytes=*/true).text; }

std::string Tokenizer::decode(const std::vector<int32_t>& ids, bool skip_special) const {
  return impl_->decode(ids, skip_special);
}

int32_t Tokenizer::bos_id() const { return impl_->spec.bos; }
int32_t Tokenizer::eos_id() const { return impl_->spec.eos; }
int32_t Tokenizer::pad_id() const { return impl_->spec.pad; }
bool Tokenizer::is_end_of_generation(int32_t id) const {
  return id >= 0 && size_t(id) < impl_->end_of_generation.size() && impl_->end_of_generation[size_t(id)];
}
bool Tokenizer::is_special(int32_t id) const {
  return id >= 0 && size_t(id) < impl_->skip_on_decode.size() && impl_->skip_on_decode[size_t(id)];
}
int32_t Tokenizer::vocab_size() const { return int32_t(impl_->spec.tokens.size()); }
const std::string& Tokenizer::chat_template() const { return impl_->spec.chat_template; }
std::string Tokenizer::bos_token() const { return bos_id() >= 0 ? impl_->spec.tokens[size_t(bos_id())] : ""; }
std::string Tokenizer::eos_token() const { return eos_id() >= 0 ? impl_->spec.tokens[size_t(eos_id())] : ""; }
const std::string& Tokenizer::token_text(int32_t id) const {
  if (id < 0 || id >= vocab_size()) throw Error("token id " + std::to_string(id) + " is outside the vocabulary");
  return impl_->spec.tokens[size_t(id)];
}
const TokenizerSpec& Tokenizer::spec() const { return impl_->spec; }

}  // namespace ember
