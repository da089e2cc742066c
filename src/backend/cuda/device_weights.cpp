#include "backend/cuda/device_weights.h"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/device_layout.h"
#include "util/error.h"

namespace ember::cuda {

namespace {

constexpr size_t kAlign = 256;
constexpr size_t kStage = size_t(32) << 20;  // bytes of each of the two pinned staging buffers

size_t align_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// One piece of host memory and where it goes in the device allocation.
struct Piece {
  const void* host;
  size_t bytes;
  size_t offset;
};

// A range of the device allocation to rewrite into its format's device layout once it is up.
struct Relayout {
  GgmlType type;
  size_t offset;
  size_t bytes;
  int64_t k;  // elements a row
};

// Walks the model's tensors in a fixed order, giving each its place; the same
// walk serves sizing (no device memory yet) and upload.
class Layout {
 public:
  explicit Layout(uint8_t* base) : base_(base) {}
  size_t total() const { return next_; }
  const std::vector<Piece>& pieces() const { return pieces_; }
  const std::vector<Relayout>& relayouts() const { return relayouts_; }
  std::vector<std::vector<double>> owned_doubles;  // host data made here (RoPE tables) kept alive until the copy

  const uint8_t* add(const void* host, size_t bytes) {
    if (!bytes) return nullptr;
    const size_t off = next_;
    pieces_.push_back({host, bytes, off});
    next_ = align_up(next_ + bytes);
    return base_ ? base_ + off : nullptr;
  }
  const float* floats(const std::vector<float>& v) {
    return reinterpret_cast<const float*>(add(v.data(), v.size() * sizeof(float)));
  }
  DeviceMatrix matrix(const Matrix& m, const std::string& what) {
    DeviceMatrix d;
    if (!m.present()) return d;
    check_format(m.type, what);
    d.type = m.type;
    d.k = m.k;
    d.rows = m.rows;
    d.row_stride = m.row_stride;
    const size_t offset = next_;
    d.data = add(m.data, m.bytes());
    if (has_device_layout(m.type)) relayouts_.push_back({m.type, offset, m.bytes(), m.k});
    return d;
  }
  // Experts of one layer packed contiguously, expert e at e * expert_stride.
  DeviceMatrix experts(const ExpertMatrices& e, const std::string& what) {
    DeviceMatrix d;
    if (!e.present()) return d;
    const Matrix& m0 = e.experts[0];
    check_format(m0.type, what);
    d.type = m0.type;
    d.k = m0.k;
    d.rows = m0.rows;
    d.row_stride = m0.row_stride;
    d.expert_stride = m0.bytes();
    const size_t start = next_;
    for (const Matrix& m : e.experts) {
      if (m.type != m0.type || m.bytes() != m0.bytes()) throw Error(what + ": experts differ in format or shape");
      pieces_.push_back({m.data, m.bytes(), next_});
      next_ += m.bytes();
    }
    if (has_device_layout(m0.type)) relayouts_.push_back({m0.type, start, next_ - start, m0.k});
    next_ = align_up(next_);
    d.data = base_ ? base_ + start : nullptr;
    return d;
  }

 private:
  static void check_format(GgmlType t, const std::string& what) {
    if (!device_can_decode(t))
      throw Error(std::string("the CUDA backend has no product for ") + what + " in format " + type_name(t));
  }
  uint8_t* base_;
  size_t next_ = 0;
  std::vector<Piece> pieces_;
  std::vector<Relayout> relayouts_;
};

// Fills `weights` (when base is set) or only sizes the layout (base null).
void lay_out(const Model& model, Layout& L, DeviceWeights* out) {
  const ModelDesc& d = model.desc();
  const Weights& w = model.weights();
  DeviceWeights dw;
  dw.token_embd = L.matrix(w.token_embd, "the token embedding");
  dw.output = L.matrix(w.output, "the output head");
  dw.output_norm = L.floats(w.output_norm);
  for (size_t l = 0; l < w.layers.size(); ++l) {
    const LayerWeights& lw = w.layers[l];
    const std::string at = " of layer " + std::to_string(l);
    DeviceLayer dl;
    dl.wq = L.matrix(lw.wq, "wq" + at);
    dl.wk = L.matrix(lw.wk, "wk" + at);
    dl.wv = L.matrix(lw.wv, "wv" + at);
    dl.wo = L.matrix(lw.wo, "wo" + at);
    dl.ffn_gate = L.matrix(lw.ffn_gate, "ffn_gate" + at);
    dl.ffn_up = L.matrix(lw.ffn_up, "ffn_up" + at);
    dl.ffn_down = L.matrix(lw.ffn_down, "ffn_down" + at);
    dl.router = L.matrix(lw.router, "the router" + at);
    dl.gate_exps = L.experts(lw.gate_exps, "the gate experts" + at);
    dl.up_exps = L.experts(lw.up_exps, "the up experts" + at);
    dl.down_exps = L.experts(lw.down_exps, "the down experts" + at);
    dl.attn_norm = L.floats(lw.attn_norm);
    dl.q_norm = L.floats(lw.q_norm);
    dl.k_norm = L.floats(lw.k_norm);
    dl.post_attn_norm = L.floats(lw.post_attn_norm);
    dl.ffn_norm = L.floats(lw.ffn_norm);
    dl.post_ffn_norm = L.floats(lw.post_ffn_norm);
    dl.bq = L.floats(lw.bq);
    dl.bk = L.floats(lw.bk);
    dl.bv = L.floats(lw.bv);
    L.owned_doubles.push_back(d.rope_inverse_frequencies(int(l)));
    const auto& fk = L.owned_doubles.back();
    dl.inv_freq = reinterpret_cast<const double*>(L.add(fk.data(), fk.size() * sizeof(double)));
    dw.layers.push_back(dl);
  }
  if (out) *out = std::move(dw);
}

// A progress line on a terminal (updated in place), nothing otherwise.
class Progress {
 public:
  explicit Progress(size_t total) : total_(total), tty_(isatty(2) && total > (size_t(256) << 20)) {}
  void at(size_t done) {
    if (!tty_) return;
    const int pct = int(100.0 * double(done) / double(total_));
    if (pct == last_) return;
    last_ = pct;
    std::fprintf(stderr, "\rweights to the GPU: %3d%% of %.1f GiB", pct, double(total_) / double(1ull << 30));
    if (done == total_) std::fprintf(stderr, "\n");
  }

 private:
  size_t total_;
  bool tty_;
  int last_ = -1;
};

}  // namespace

uint64_t device_weight_bytes(const Model& model) {
  Layout L(nullptr);
  lay_out(model, L, nullptr);
  return L.total();
}

DeviceWeights upload_weights(const Model& model, cudaStream_t stream) {
  Layout sizing(nullptr);
  lay_out(model, sizing, nullptr);
  DeviceBuffer storage(sizing.total());
  Layout L(storage.get<uint8_t>());
  DeviceWeights dw;
  lay_out(model, L, &dw);
  dw.storage = std::move(storage);
  dw.iq_storage = upload_iq_tables();
  dw.iq = dw.iq_storage.tables;

  // Two pinned buffers: the host fills one from the mapped file while the
  // device copies out of the other.
  PinnedBuffer stage[2] = {PinnedBuffer(kStage), PinnedBuffer(kStage)};
  cudaEvent_t done[2];
  for (auto& e : done) EMBER_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  bool used[2] = {false, false};
  int cur = 0;
  size_t fill = 0, sent = 0;
  Progress progress(L.total());
  std::vector<std::pair<size_t, size_t>> runs;  // (device offset, bytes) of what is in the current stage
  auto flush = [&] {
    if (!fill) return;
    size_t at = 0;
    for (const auto& [off, n] : runs) {
      EMBER_CUDA_CHECK(cudaMemcpyAsync(dw.storage.get<uint8_t>() + off, stage[cur].get<uint8_t>() + at, n,
                                       cudaMemcpyHostToDevice, stream));
      at += n;
    }
    EMBER_CUDA_CHECK(cudaEventRecord(done[cur], stream));
    used[cur] = true;
    sent += fill;
    progress.at(sent);
    runs.clear();
    fill = 0;
    cur ^= 1;
    if (used[cur]) EMBER_CUDA_CHECK(cudaEventSynchronize(done[cur]));  // that buffer's copy must be over before refilling
  };
  for (const Piece& p : L.pieces()) {
    size_t done_bytes = 0;
    while (done_bytes < p.bytes) {
      if (fill == kStage) flush();
      const size_t n = std::min(p.bytes - done_bytes, kStage - fill);
      std::memcpy(stage[cur].get<uint8_t>() + fill, static_cast<const uint8_t*>(p.host) + done_bytes, n);
      // Consecutive pieces in the stage usually continue one device range; keep them as one copy.
      if (!runs.empty() && runs.back().first + runs.back().second == p.offset + done_bytes) runs.back().second += n;
      else runs.emplace_back(p.offset + done_bytes, n);
      fill += n;
      done_bytes += n;
    }
  }
  flush();
  // Queued behind the copies on the same stream.
  for (const Relayout& r : L.relayouts()) to_device_layout(r.type, dw.storage.get<uint8_t>() + r.offset, r.bytes, r.k, stream);
  EMBER_CUDA_CHECK(cudaStreamSynchronize(stream));
  for (auto& e : done) cudaEventDestroy(e);
  progress.at(L.total());
  return dw;
}

}  // namespace ember::cuda
