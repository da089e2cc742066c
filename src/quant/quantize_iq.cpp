// Quantisers for the IQ (codebook) formats: IQ3_XXS, IQ3_S, IQ2_XXS, IQ2_XS,
// IQ2_S, IQ1_S, IQ1_M.
//
// All of them store a 256-element super-block as one fp16 scale d, a few bits
// of scale per 16- or 32-element group, and for each run of 4 or 8 elements an
// index into a fixed grid (iq_tables.h); the signed grids add 8 sign bits per
// 8 elements, the IQ1 grids a +-delta per group instead. One encoder serves
// them all, described by a FormatSpec:
//  1. signs: grids hold magnitudes, so each element's sign is stored apart.
//     Formats that keep only 7 sign bits imply the 8th from parity; when the
//     count of negatives is odd the smallest-magnitude element gives up its
//     sign (its target becomes -|x|, which the grid's smallest level serves best).
//  2. per scale group, a continuous scale: a few trial scales, each followed
//     by nearest-grid assignment and a least-squares refit; the best is kept.
//  3. d from the largest group scale; each group's scale code is then chosen
//     among the codes next to its ideal one by the error it actually gives.
//  4. least-squares refits of d over the whole block, reassigning once.
// No importance weighting: every element counts the same.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "quant/blocks.h"
#include "quant/iq_tables.h"
#include "util/error.h"
#include "util/fp16.h"

namespace ember::quant {
namespace {

// A grid of entries of `dim` values with nearest-entry search. The grids are
// subsets of the lattice of their per-coordinate levels (3 levels for the
// 8-wide grids, 8 for the 4-wide ones), so a target is rounded to its nearest
// lattice point coordinate by coordinate, and only the grid entries closest to
// that lattice point are compared. When the lattice point is itself an entry
// it is the exact nearest entry (rounding per coordinate gives the nearest
// lattice point, and the grid is part of the lattice); otherwise the candidate
// list holds every entry within slack() (in squared level steps) of the closest.
class Codebook {
 public:
  template <typename Entry>
  Codebook(const Entry* grid, int size, int dim, bool signed_bytes) : dim_(dim) {
    values_.resize(size_t(size) * dim);
    for (int i = 0; i < size; ++i)
      for (int j = 0; j < dim; ++j) {
        const auto byte = uint8_t(uint64_t(grid[i]) >> (8 * j));
        values_[size_t(i) * dim + j] = signed_bytes ? float(int8_t(byte)) : float(byte);
      }
    levels_ = values_;
    std::sort(levels_.begin(), levels_.end());
    levels_.erase(std::unique(levels_.begin(), levels_.end()), levels_.end());
    for (size_t k = 0; k + 1 < levels_.size(); ++k) cuts_.push_back(0.5f * (levels_[k] + levels_[k + 1]));
    for (float v : levels_) max_abs_ = std::max(max_abs_, std::fabs(v));
    if (levels_.size() != (dim == 4 ? 8u : 3u))
      throw Error("IQ codebook: a grid of " + std::to_string(dim) + " values has " +
                  std::to_string(levels_.size()) + " levels, not the format's");
    build_cells(size);
  }

  int dim() const { return dim_; }
  const float* entry(int i) const { return &values_[size_t(i) * dim_]; }
  const std::vector<float>& levels() const { return levels_; }
  float max_abs() const { return max_abs_; }

  // The grids come in two shapes: 4 values on 8 levels (IQ3) and 8 values on
  // 3 levels (IQ2, IQ1); fixing them at compile time lets the loops unroll.
  int nearest(const float* t) const { return dim_ == 4 ? nearest_in<4, 8>(t) : nearest_in<8, 3>(t); }

 private:
  template <int Dim, int NLev>
  int nearest_in(const float* t) const {
    int cell = 0;
    for (int j = 0, mul = 1; j < Dim; ++j, mul *= NLev) {
      int k = 0;
      for (int c = 0; c < NLev - 1; ++c) k += t[j] > cuts_[c];
      cell += k * mul;
    }
    const uint32_t first = cell_start_[cell], last = cell_start_[cell + 1];
    if (last - first == 1) return cell_entries_[first];
    // Candidates' values are stored side by side, so this loop streams them.
    const float* v = &cell_values_[size_t(first) * Dim];
    uint32_t best = first;
    float best_err = INFINITY;
    for (uint32_t c = first; c < last; ++c, v += Dim) {
      float err = 0;
      for (int j = 0; j < Dim; ++j) err += (t[j] - v[j]) * (t[j] - v[j]);
      best = err < best_err ? c : best;
      best_err = std::min(err, best_err);
    }
    return cell_entries_[best];
  }

  // Wider candidate lists buy a little accuracy at a high price on the 8-wide
  // grids (tens of candidates per cell); on the 4-wide ones they are cheap.
  int slack() const { return dim_ == 4 ? 2 : 0; }

  void build_cells(int size) {
    const int nlev = int(levels_.size());
    std::vector<int> level_of(values_.size());
    for (size_t i = 0; i < values_.size(); ++i)
      level_of[i] = int(std::lower_bound(levels_.begin(), levels_.end(), values_[i]) - levels_.begin());
    int cells = 1;
    for (int j = 0; j < dim_; ++j) cells *= nlev;
    std::vector<int> digits(dim_), dist(size);
    cell_start_.reserve(size_t(cells) + 1);
    for (int cell = 0; cell < cells; ++cell) {
      for (int j = 0, c = cell; j < dim_; ++j, c /= nlev) digits[j] = c % nlev;
      int closest = 1 << 30;
      for (int i = 0; i < size; ++i) {
        int d2 = 0;
        for (int j = 0; j < dim_; ++j) {
          const int diff = digits[j] - level_of[size_t(i) * dim_ + j];
          d2 += diff * diff;
        }
        dist[i] = d2;
        closest = std::min(closest, d2);
      }
      cell_start_.push_back(uint32_t(cell_entries_.size()));
      const int limit = closest == 0 ? 0 : closest + slack();
      for (int i = 0; i < size; ++i)
        if (dist[i] <= limit) {
          cell_entries_.push_back(uint16_t(i));
          cell_values_.insert(cell_values_.end(), entry(i), entry(i) + dim_);
        }
    }
    cell_start_.push_back(uint32_t(cell_entries_.size()));
  }

  int dim_;
  float max_abs_ = 0;
  std::vector<float> values_, levels_, cuts_;
  std::vector<uint32_t> cell_start_;
  std::vector<uint16_t> cell_entries_;
  std::vector<float> cell_values_;  // the values of cell_entries_, dim_ each
};

// The codebooks are built once, on first use (thread-safe static init).
const Codebook& iq3xxs_book() { static const Codebook b(iq::iq3xxs_grid(), 256, 4, false); return b; }
const Codebook& iq3s_book() { static const Codebook b(iq::iq3s_grid(), 512, 4, false); return b; }
const Codebook& iq2xxs_book() { static const Codebook b(iq::iq2xxs_grid(), 256, 8, false); return b; }
const Codebook& iq2xs_book() { static const Codebook b(iq::iq2xs_grid(), 512, 8, false); return b; }
const Codebook& iq2s_book() { static const Codebook b(iq::iq2s_grid(), 1024, 8, false); return b; }
const Codebook& iq1s_book() { static const Codebook b(iq::iq1s_grid(), 2048, 8, true); return b; }

// What the shared encoder needs to know about a format.
struct FormatSpec {
  const Codebook& book;
  int scale_group;         // elements sharing one scale code (16 or 32)
  int ncodes;              // scale codes 0 .. ncodes-1
  float code_base, code_step;  // group scale = d * (code_base + code_step * code)
  bool signed_grid;        // grid holds magnitudes; one sign bit per element
  bool parity_signs;       // only 7 sign bits stored per 8: negatives must be even
  int offset_group;        // IQ1: elements sharing one +-delta choice; 0 = no offset
  float multiplier(int code) const { return code_base + code_step * float(code); }
};

// One super-block, encoded but not yet packed into its format's bytes.
struct Encoded {
  float d = 0;
  uint16_t index[64] = {};     // grid index per run of book.dim() elements
  uint8_t signs[32] = {};      // per 8 elements: bit j set = element j negative
  uint8_t code[16] = {};       // scale code per scale group
  uint8_t offset_neg[32] = {};  // per offset group: 1 = delta is negative
};

// Sign bits, and the magnitudes the grid must match (see step 1 above).
void choose_signs(const FormatSpec& f, const float* x, float* a, Encoded& e) {
  if (!f.signed_grid) {
    std::copy(x, x + kQK_K, a);
    return;
  }
  for (int g = 0; g < kQK_K / 8; ++g) {
    uint8_t s = 0;
    int smallest = 0;
    for (int j = 0; j < 8; ++j) {
      const float v = x[8 * g + j];
      a[8 * g + j] = std::fabs(v);
      if (v < 0) s |= uint8_t(1u << j);
      if (a[8 * g + j] < a[8 * g + smallest]) smallest = j;
    }
    if (f.parity_signs && (__builtin_popcount(s) & 1)) {
      s ^= uint8_t(1u << smallest);
      a[8 * g + smallest] = -a[8 * g + smallest];
    }
    e.signs[g] = s;
  }
}

// Sums of a least-squares fit a ~ s * v: sum(a v) and sum(v v).
struct FitSums {
  float av = 0, vv = 0;
};

// Assigns grid entries (and IQ1 offsets) to the n targets a[0..n) at scale s.
// idx and neg point at this group's first run and first offset group.
FitSums assign(const FormatSpec& f, const float* a, int n, float s, uint16_t* idx, uint8_t* neg) {
  const Codebook& book = f.book;
  const int dim = book.dim();
  const float inv = s > 0 ? 1.f / s : 0.f;
  const int og = f.offset_group ? f.offset_group : n;
  const int options = f.offset_group ? 2 : 1;
  FitSums total;
  for (int o0 = 0; o0 < n; o0 += og) {
    float best_err = INFINITY;
    FitSums best;
    for (int opt = 0; opt < options; ++opt) {
      const float delta = options == 1 ? 0.f : (opt ? -iq::kIQ1Delta : iq::kIQ1Delta);
      FitSums sums;
      uint16_t runs[32];
      for (int r = 0; r < og / dim; ++r) {
        const float* ar = a + o0 + r * dim;
        float t[8];
        for (int j = 0; j < dim; ++j) t[j] = ar[j] * inv - delta;
        const int k = book.nearest(t);
        runs[r] = uint16_t(k);
        const float* v = book.entry(k);
        for (int j = 0; j < dim; ++j) {
          const float w = v[j] + delta;
          sums.av += ar[j] * w;
          sums.vv += w * w;
        }
      }
      const float err = s * s * sums.vv - 2 * s * sums.av;  // error less the constant sum(a a)
      if (err < best_err) {
        best_err = err;
        best = sums;
        std::copy(runs, runs + og / dim, idx + o0 / dim);
        if (options == 2) neg[o0 / og] = uint8_t(opt);
      }
    }
    total.av += best.av;
    total.vv += best.vv;
  }
  return total;
}

// The best continuous scale for one group (step 2); leaves its assignment in idx/neg.
float fit_group_scale(const FormatSpec& f, const float* a, int n, uint16_t* idx, uint8_t* neg) {
  float amax = 0;
  for (int i = 0; i < n; ++i) amax = std::max(amax, std::fabs(a[i]));
  if (amax == 0) {
    assign(f, a, n, 0, idx, neg);
    return 0;
  }
  // Trial scales: the largest target landing on each of the larger levels
  // (offset by +-delta for IQ1), which makes exactly representable groups
  // exact. The 8-level grids get enough trials from their levels; the
  // 3-level ones add a few ratios around the top level to fill the gaps.
  const bool few_levels = f.book.levels().size() <= 3;
  const float off = f.offset_group ? iq::kIQ1Delta : 0.f;
  const float top = f.book.max_abs() + off;
  const float lowest = few_levels ? 0.3f * top : 0.5f * top;
  float trials[24];
  int nt = 0;
  for (float level : f.book.levels())
    for (float o : {-off, off}) {
      const float v = std::fabs(level) + o;
      if (v >= lowest && nt < 20 && (nt == 0 || trials[nt - 1] != amax / v)) trials[nt++] = amax / v;
      if (off == 0) break;
    }
  trials[nt++] = amax / top * 1.15f;
  if (few_levels) {
    trials[nt++] = amax / top * 0.85f;
    trials[nt++] = amax / top * 1.3f;
  }

  float best_score = -1, best_s = 0;
  uint16_t tmp_idx[8];
  uint8_t tmp_neg[4];
  const int nruns = n / f.book.dim(), nneg = f.offset_group ? n / f.offset_group : 0;
  auto try_scale = [&](float s) {
    const FitSums sums = assign(f, a, n, s, tmp_idx, tmp_neg);
    if (sums.av <= 0 || sums.vv <= 0) return;
    const float score = sums.av * sums.av / sums.vv;  // error reduction of the refit scale
    if (score > best_score) {
      best_score = score;
      best_s = sums.av / sums.vv;
      std::copy(tmp_idx, tmp_idx + nruns, idx);
      std::copy(tmp_neg, tmp_neg + nneg, neg);
    }
  };
  for (int t = 0; t < nt; ++t) try_scale(trials[t]);
  if (best_score > 0) try_scale(best_s);  // one more assignment at the refit scale
  return best_s;
}

// Steps 2-4 for one super-block.
void encode_block(const FormatSpec& f, const float* x, Encoded& e) {
  float a[kQK_K];
  choose_signs(f, x, a, e);
  const int n = f.scale_group, groups = kQK_K / n;
  const int runs = n / f.book.dim();
  const int og = f.offset_group ? f.offset_group : n;
  float s[16];
  float smax = 0;
  for (int g = 0; g < groups; ++g) {
    s[g] = fit_group_scale(f, a + g * n, n, e.index + g * runs, e.offset_neg + g * n / og);
    smax = std::max(smax, s[g]);
  }
  float d = fp16_to_f32(f32_to_fp16(smax / f.multiplier(f.ncodes - 1)));
  if (!(d > 0) || !std::isfinite(d)) {  // all zero (or too small for fp16): a zero block
    e.d = 0;
    return;
  }
  // Step 3: each group's code, judged by the error at the quantised scale.
  FitSums sums[16];
  for (int g = 0; g < groups; ++g) {
    const int ideal = int(std::lround((s[g] / d - f.code_base) / f.code_step));
    float best_err = INFINITY;
    for (int c = std::max(0, ideal - 1); c <= std::min(f.ncodes - 1, ideal + 1); ++c) {
      uint16_t tmp_idx[8];
      uint8_t tmp_neg[4];
      const float sg = d * f.multiplier(c);
      const FitSums fs = assign(f, a + g * n, n, sg, tmp_idx, tmp_neg);
      const float err = sg * sg * fs.vv - 2 * sg * fs.av;
      if (err < best_err) {
        best_err = err;
        e.code[g] = uint8_t(c);
        sums[g] = fs;
        std::copy(tmp_idx, tmp_idx + runs, e.index + g * runs);
        std::copy(tmp_neg, tmp_neg + n / og, e.offset_neg + g * n / og);
      }
    }
  }
  // Step 4: refit d with codes and entries fixed, reassign once, refit again.
  for (int pass = 0; pass < 2; ++pass) {
    double num = 0, den = 0;
    for (int g = 0; g < groups; ++g) {
      const float m = f.multiplier(e.code[g]);
      num += double(m) * sums[g].av;
      den += double(m) * m * sums[g].vv;
    }
    if (num > 0 && den > 0) d = fp16_to_f32(f32_to_fp16(float(num / den)));
    if (pass == 1) break;
    for (int g = 0; g < groups; ++g)
      sums[g] = assign(f, a + g * n, n, d * f.multiplier(e.code[g]), e.index + g * runs, e.offset_neg + g * n / og);
  }
  e.d = std::isfinite(d) ? d : 0.f;
}

// --- Formats: their spec and how an Encoded block is packed ------------------

const FormatSpec& iq3xxs_spec() {
  static const FormatSpec f{iq3xxs_book(), 32, 16, 0.25f, 0.5f, true, true, 0};  // d (0.5 + c) / 2
  return f;
}
void pack_iq3_xxs(const Encoded& e, BlockIQ3_XXS& b) {
  b.d = f32_to_fp16(e.d);
  for (int r = 0; r < 64; ++r) b.qs[r] = uint8_t(e.index[r]);
  for (int ib = 0; ib < 8; ++ib) {
    uint32_t aux = uint32_t(e.code[ib]) << 28;
    for (int l = 0; l < 4; ++l) aux |= uint32_t(e.signs[4 * ib + l] & 127) << (7 * l);
    std::memcpy(b.qs + 64 + 4 * ib, &aux, 4);
  }
}

const FormatSpec& iq3s_spec() {
  static const FormatSpec f{iq3s_book(), 32, 16, 1.f, 2.f, true, false, 0};  // d (1 + 2c)
  return f;
}
void pack_iq3_s(const Encoded& e, BlockIQ3_S& b) {
  std::memset(&b, 0, sizeof b);
  b.d = f32_to_fp16(e.d);
  for (int r = 0; r < 64; ++r) {
    b.qs[r] = uint8_t(e.index[r]);
    b.qh[r / 8] |= uint8_t(((e.index[r] >> 8) & 1) << (r % 8));
  }
  std::memcpy(b.signs, e.signs, 32);
  for (int ib = 0; ib < 8; ++ib) b.scales[ib / 2] |= uint8_t(e.code[ib] << (4 * (ib % 2)));
}

const FormatSpec& iq2xxs_spec() {
  static const FormatSpec f{iq2xxs_book(), 32, 16, 0.125f, 0.25f, true, true, 0};  // d (0.5 + c) / 4
  return f;
}
void pack_iq2_xxs(const Encoded& e, BlockIQ2_XXS& b) {
  b.d = f32_to_fp16(e.d);
  auto* bytes = reinterpret_cast<uint8_t*>(b.qs);
  for (int ib = 0; ib < 8; ++ib) {
    uint32_t aux = uint32_t(e.code[ib]) << 28;
    for (int l = 0; l < 4; ++l) {
      bytes[8 * ib + l] = uint8_t(e.index[4 * ib + l]);
      aux |= uint32_t(e.signs[4 * ib + l] & 127) << (7 * l);
    }
    std::memcpy(bytes + 8 * ib + 4, &aux, 4);
  }
}

// IQ2_XS and IQ2_S: a 4-bit scale per 16 elements, two per byte.
void pack_iq2_scales(const Encoded& e, uint8_t* scales) {
  for (int ib = 0; ib < 8; ++ib) scales[ib] = uint8_t(e.code[2 * ib] | (e.code[2 * ib + 1] << 4));
}
const FormatSpec& iq2xs_spec() {
  static const FormatSpec f{iq2xs_book(), 16, 16, 0.125f, 0.25f, true, true, 0};
  return f;
}
void pack_iq2_xs(const Encoded& e, BlockIQ2_XS& b) {
  b.d = f32_to_fp16(e.d);
  for (int r = 0; r < 32; ++r) b.qs[r] = uint16_t(e.index[r] | ((e.signs[r] & 127) << 9));
  pack_iq2_scales(e, b.scales);
}

const FormatSpec& iq2s_spec() {
  static const FormatSpec f{iq2s_book(), 16, 16, 0.125f, 0.25f, true, false, 0};
  return f;
}
void pack_iq2_s(const Encoded& e, BlockIQ2_S& b) {
  std::memset(&b, 0, sizeof b);
  b.d = f32_to_fp16(e.d);
  for (int r = 0; r < 32; ++r) {
    b.qs[r] = uint8_t(e.index[r]);
    b.qs[32 + r] = e.signs[r];
    b.qh[r / 4] |= uint8_t(((e.index[r] >> 8) & 3) << (2 * (r % 4)));
  }
  pack_iq2_scales(e, b.scales);
}

const FormatSpec& iq1s_spec() {
  static const FormatSpec f{iq1s_book(), 32, 8, 1.f, 2.f, false, false, 32};  // d (1 + 2c), delta per 32
  return f;
}
void pack_iq1_s(const Encoded& e, BlockIQ1_S& b) {
  b.d = f32_to_fp16(e.d);
  for (int ib = 0; ib < 8; ++ib) {
    uint32_t qh = uint32_t(e.code[ib]) << 12 | uint32_t(e.offset_neg[ib]) << 15;
    for (int l = 0; l < 4; ++l) {
      const int r = 4 * ib + l;
      b.qs[r] = uint8_t(e.index[r]);
      qh |= uint32_t((e.index[r] >> 8) & 7) << (3 * l);
    }
    b.qh[ib] = uint16_t(qh);
  }
}

const FormatSpec& iq1m_spec() {
  static const FormatSpec f{iq1s_book(), 16, 8, 1.f, 2.f, false, false, 8};  // d (1 + 2c) per 16, delta per 8
  return f;
}
void pack_iq1_m(const Encoded& e, BlockIQ1_M& b) {
  std::memset(&b, 0, sizeof b);
  uint16_t sc[4] = {};
  for (int r = 0; r < 32; ++r) {
    b.qs[r] = uint8_t(e.index[r]);
    const int nib = ((e.index[r] >> 8) & 7) | (e.offset_neg[r] << 3);
    b.qh[r / 2] |= uint8_t(nib << (4 * (r % 2)));
  }
  for (int g = 0; g < 16; ++g) sc[g / 4] |= uint16_t(e.code[g] << (3 * (g % 4)));
  // The fp16 d is spread over the top nibbles of the four scale words.
  const uint16_t h = f32_to_fp16(e.d);
  for (int w = 0; w < 4; ++w) sc[w] |= uint16_t(((h >> (4 * w)) & 0xF) << 12);
  std::memcpy(b.scales, sc, 8);
}

template <typename Block, const FormatSpec& (*Spec)(), void (*Pack)(const Encoded&, Block&)>
void encode_row(const float* x, void* dst, int64_t n) {
  const FormatSpec& f = Spec();
  auto* b = static_cast<Block*>(dst);
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    Encoded e;
    encode_block(f, x + i * kQK_K, e);
    Pack(e, b[i]);
  }
}

}  // namespace

// Entry points for quantize_row (quantize.cpp); n is a multiple of 256 there.
void quantize_row_iq3_xxs(const float* x, void* dst, int64_t n) { encode_row<BlockIQ3_XXS, iq3xxs_spec, pack_iq3_xxs>(x, dst, n); }
void quantize_row_iq3_s(const float* x, void* dst, int64_t n) { encode_row<BlockIQ3_S, iq3s_spec, pack_iq3_s>(x, dst, n); }
void quantize_row_iq2_xxs(const float* x, void* dst, int64_t n) { encode_row<BlockIQ2_XXS, iq2xxs_spec, pack_iq2_xxs>(x, dst, n); }
void quantize_row_iq2_xs(const float* x, void* dst, int64_t n) { encode_row<BlockIQ2_XS, iq2xs_spec, pack_iq2_xs>(x, dst, n); }
void quantize_row_iq2_s(const float* x, void* dst, int64_t n) { encode_row<BlockIQ2_S, iq2s_spec, pack_iq2_s>(x, dst, n); }
void quantize_row_iq1_s(const float* x, void* dst, int64_t n) { encode_row<BlockIQ1_S, iq1s_spec, pack_iq1_s>(x, dst, n); }
void quantize_row_iq1_m(const float* x, void* dst, int64_t n) { encode_row<BlockIQ1_M, iq1m_spec, pack_iq1_m>(x, dst, n); }

}  // namespace ember::quant
