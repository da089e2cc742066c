#include "model/gguf_export.h"

#include <chrono>
#include <cstdio>
#include <cstring>

#include "gguf/gguf.h"
#include "model/architectures.h"
#include "quant/quant.h"
#include "util/error.h"

namespace ember {

namespace {

void encode_row(GgmlType t, const float* src, uint8_t* dst, int64_t n) {
  if (t == GgmlType::F32) {
    std::memcpy(dst, src, size_t(n) * sizeof(float));
  } else {
    quant::quantize_row(t, src, dst, n);
  }
}

class Progress {
 public:
  Progress(bool on, uint64_t total) : on_(on), total_(total), start_(std::chrono::steady_clock::now()) {}
  void advance(uint64_t bytes) {
    done_ += bytes;
    if (!on_) return;
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    if (done_ < total_ && secs - last_ < 0.25) return;  // redraw at most four times a second
    last_ = secs;
    const double frac = total_ ? double(done_) / double(total_) : 1.0;
    const int width = 30, filled = int(frac * width);
    std::fprintf(stderr, "\r[%.*s%*s] %5.1f%%  %.2f / %.2f GB  %.0f s elapsed, ~%.0f s left ",
                 filled, "##############################", width - filled, "", frac * 100, double(done_) / 1e9,
                 double(total_) / 1e9, secs, frac > 0 ? secs * (1 - frac) / frac : 0.0);
    if (done_ >= total_) std::fprintf(stderr, "\n");
    std::fflush(stderr);
  }

 private:
  bool on_;
  uint64_t total_, done_ = 0;
  double last_ = -1;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace

void export_gguf(const std::string& path, const ModelDesc& desc, const std::vector<ExportTensor>& tensors,
                 const ExportOptions& opt, ThreadPool& pool) {
  gguf::Writer w;
  desc_to_gguf(desc, w);
  if (!opt.name.empty()) w.set("general.name", gguf::Value::str(opt.name));
  w.set("general.quantization_version", gguf::Value::u32(2));
  if (opt.extra_metadata) opt.extra_metadata(w);
  uint64_t total = 0;
  for (const auto& t : tensors) {
    w.add_tensor(t.name, t.ne, t.type);
    int64_t rows = 1;
    for (size_t i = 1; i < t.ne.size(); ++i) rows *= t.ne[i];
    total += uint64_t(rows) * row_bytes(t.type, t.ne[0]);
  }
  w.begin(path);
  Progress progress(opt.progress, total);
  std::vector<uint8_t> buf;
  for (const auto& t : tensors) {
    const int64_t k = t.ne[0];
    int64_t rows = 1;
    for (size_t i = 1; i < t.ne.size(); ++i) rows *= t.ne[i];
    const size_t rb = row_bytes(t.type, k);
    buf.resize(size_t(rows) * rb);
    // Each thread converts its rows in small batches so float copies stay small.
    pool.parallel_for(rows, [&](int64_t r0, int64_t r1, int) {
      constexpr int64_t kBatch = 16;
      std::vector<float> tmp(size_t(kBatch * k));
      for (int64_t r = r0; r < r1; r += kBatch) {
        const int64_t n = std::min(kBatch, r1 - r);
        t.rows(r, r + n, tmp.data());
        for (int64_t i = 0; i < n; ++i) encode_row(t.type, tmp.data() + i * k, buf.data() + size_t(r + i) * rb, k);
      }
    }, 16);
    w.write_tensor_data(buf.data(), buf.size());
    progress.advance(buf.size());
  }
  w.finish();
}

}  // namespace ember
