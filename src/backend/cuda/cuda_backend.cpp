// The CUDA forward pass. Reads top to bottom like the CPU's (backend/cpu/forward.cpp):
// embed -> for each layer: attention block, FFN block (dense or experts) -> norm -> output head.
// Every kernel is queued on one stream; the host waits once per step, for the
// logit rows, sleeping rather than spinning (cudaDeviceScheduleBlockingSync).
// Decode-sized steps replay a captured CUDA Graph (one per shape), so their
// hundreds of small kernels cost one launch.
#include "backend/cuda/cuda_backend.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <memory>
#include <tuple>

#include "backend/cuda/argmax.h"
#include "backend/cuda/attention.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/device_buffer.h"
#include "backend/cuda/device_weights.h"
#include "backend/cuda/elementwise.h"
#include "backend/cuda/gemm.h"
#include "backend/cuda/gemv.h"
#include "backend/cuda/moe.h"
#include "backend/cuda/sampling.h"
#include "backend/cuda/step_profile.h"
#include "model/model.h"
#include "util/error.h"

namespace ember {

namespace {

using namespace cuda;

// Steps of more tokens than a captured graph holds (prefill chunks) multiply
// the dense matrices on the tensor cores; EMBER_CUDA_GEMM_MIN_TOKENS moves the
// threshold (to measure both paths at one size).
constexpr int64_t kGemmMinTokens = 65;

// A picked row's parameters (sampling.h) in the step metadata.
constexpr size_t kPickInts = sizeof(DevicePick) / sizeof(int32_t);

// Every float array of the scratch starts on a 16-byte boundary (kernels read
// them four floats at a time), whatever the limits: at one token a step, an
// MoE model's one-float dense FFN rows put every array after them 8 bytes off,
// and the expert down kernel's 16-byte loads faulted.
constexpr size_t whole_float4s(size_t n) { return (n + 3) / 4 * 4; }

// Scratch of one step, sized for the limits: floats, and the ints of the step metadata and the expert choices.
struct ScratchSizes {
  size_t x, q, kv, ffn, logits, partial, router, moe_items, moe_ffn, moe_out, moe_tiles;
  size_t meta_ints;  // step metadata: tokens, positions, sequences, logit rows, table offsets, split-attention
                     // tokens (T each), flash tiles (2T), sequences' first positions (T), picks (8 per logit row), then tables
  size_t picks_at, tables_at;  // where the picks (on a 32-byte boundary: they hold doubles) and the tables start
  int max_table;
  size_t floats() const {
    size_t n = 0;
    for (size_t a : {x, x, x, q, q, kv, kv, ffn, ffn, logits, partial, router, moe_items, moe_ffn, moe_ffn, moe_out})
      n += whole_float4s(a);
    return n;
  }
  // The metadata, then the chosen experts, the items in expert order and their tiles.
  size_t ints() const { return meta_ints + 2 * moe_items + 3 * moe_tiles; }
};

ScratchSizes scratch_sizes(const ModelDesc& d, const StepLimits& lim, int block_size) {
  ScratchSizes s{};
  const size_t T = size_t(lim.max_tokens);
  s.x = T * size_t(d.hidden);
  s.q = T * size_t(d.q_dim());
  s.kv = T * size_t(d.kv_dim());
  s.ffn = T * size_t(std::max(d.ffn, 1));
  s.logits = size_t(lim.max_logit_rows) * size_t(d.vocab);
  s.partial = size_t(std::min<int64_t>(lim.max_tokens, kAttentionTokens)) * size_t(d.n_heads) * size_t(kAttentionMaxSplits) *
              size_t(d.head_dim + 2);
  // Each sequence's table is at most one context of blocks; there are at most max_tokens sequences.
  s.max_table = int(std::min<int64_t>(int64_t(T) * ((lim.max_context + block_size - 1) / block_size + 1), int64_t(1) << 26));
  s.picks_at = (9 * T + kPickInts - 1) / kPickInts * kPickInts;
  s.tables_at = s.picks_at + kPickInts * size_t(lim.max_logit_rows);
  s.meta_ints = s.tables_at + size_t(s.max_table);
  if (d.n_experts > 0) {
    s.router = T * size_t(d.n_experts);
    s.moe_items = T * size_t(d.n_experts_used);
    s.moe_ffn = s.moe_items * size_t(d.expert_ffn);
    s.moe_out = s.moe_items * size_t(d.hidden);
    s.moe_tiles = size_t(max_expert_tiles(int64_t(s.moe_items), d.n_experts));
  }
  return s;
}

// Steps of at least this many tokens multiply the dense matrices on the tensor
// cores (EMBER_CUDA_GEMM_MIN_TOKENS, read once; kGemmMinTokens by default).
int64_t gemm_min_tokens() {
  static const int64_t n = [] {
    const char* gm = std::getenv("EMBER_CUDA_GEMM_MIN_TOKENS");
    return gm && *gm ? std::max<int64_t>(1, std::atoll(gm)) : kGemmMinTokens;
  }();
  return n;
}

// The rest of what a backend allocates on the device, besides its weights, its
// KV blocks and the step scratch: the int8 activations (the widest input of a
// dense product, or the chosen experts' rows) and, where steps can be long
// enough to take it, the tensor-core product's room (the largest dense matrix
// of a layer: the output head keeps the decode products). The constructor
// allocates these and cuda_kv_budget() counts them.
struct ProductRoom {
  int64_t widest = 0;         // elements of the widest dense input
  size_t int8_bytes = 0;
  int64_t gemm_weights = 0;   // elements of the largest dense matrix; 0: no tensor-core product
  int64_t gemm_rows = 0;
  size_t bytes() const { return int8_bytes + (gemm_weights > 0 ? TensorCoreGemm::bytes(gemm_weights, gemm_rows, widest) : 0); }
};

ProductRoom product_room(const Model& model, const StepLimits& lim, const ScratchSizes& sz) {
  const ModelDesc& d = model.desc();
  ProductRoom r;
  r.widest = std::max({d.hidden, d.q_dim(), d.ffn});
  r.int8_bytes = std::max(int8_acts_bytes(int64_t(lim.max_tokens), r.widest),
                          int8_acts_bytes(int64_t(sz.moe_items), int64_t(std::max(d.expert_ffn, 1))));
  if (lim.max_tokens >= gemm_min_tokens()) {
    for (const LayerWeights& L : model.weights().layers)
      for (const Matrix* m : {&L.wq, &L.wk, &L.wv, &L.wo, &L.ffn_gate, &L.ffn_up, &L.ffn_down})
        if (m->present()) r.gemm_weights = std::max(r.gemm_weights, m->rows * m->k);
    r.gemm_rows = lim.max_tokens;
  }
  return r;
}

class CudaBackend final : public Backend {
 public:
  CudaBackend(const Model& model, const StepLimits& limits, const KvConfig& kv);
  ~CudaBackend() override;

  const char* name() const override { return "cuda"; }
  const Model& model() const override { return model_; }
  const StepLimits& limits() const override { return lim_; }
  const KvConfig& kv_config() const override { return kv_; }
  const float* forward(const StepBatch& batch) override;
  const int32_t* picked_ids() const override { return waited_ids_; }
  void submit(const StepBatch& batch) override;
  StepOutput wait_step() override;
  void copy_kv_block(int src, int dst, int n_positions) override;
  void read_kv_block(int block, void* host) override;
  void write_kv_block(int block, const void* host) override;

 private:
  KvLayer kv_layer(int l) const;
  size_t kv_half_bytes() const { return size_t(kv_.block_size) * size_t(model_.desc().kv_dim()) * kv_type_bytes(kv_.type); }
  uint8_t* kv_half(int layer, int block, int kvsel) const {
    return kv_store_.get<uint8_t>() + ((size_t(layer) * size_t(kv_.n_blocks) + size_t(block)) * 2 + size_t(kvsel)) * kv_half_bytes();
  }
  // Host half of a step: the batch's metadata into pinned memory and one copy to the device.
  // What a step runs: tokens, logit rows that come back (n_rows), rows only
  // picked from (n_argmax, after them), and the attention splits.
  struct Shape {
    int64_t n_tok = 0, n_rows = 0, n_argmax = 0;
    int n_splits = 0, pick_vocab = 0;
    int context_class = 0;  // attention_context_class() of the longest context attention() takes
    bool sampled = false;   // a picked row samples (sample_rows runs after the greedy picks)
    using Key = std::tuple<int64_t, int64_t, int64_t, int, int, int, bool>;
    Key key() const { return {n_tok, n_rows, n_argmax, n_splits, context_class, pick_vocab, sampled}; }
  };
  Shape upload_step(const StepBatch& batch, int32_t* h);
  // Device half: every kernel of the step, queued on the stream (or captured into a graph).
  void enqueue_step(const Shape& sh);
  void run_step(const Shape& sh);
  void attention_block(int l, const Shape& sh);
  void transfer_kv_block(int block, void* host, bool to_host);
  void dense_ffn(int l, int64_t n_tok);
  void moe_ffn(int l, int64_t n_tok);
  // Whether a step's expert products take the grouped path: integer products
  // for all three expert matrices, and at least kGroupedItemsPerExpert items per expert on average.
  bool grouped_experts(const DeviceLayer& L, int64_t n_items, const Int8Acts* xq) const;
  // The same for BF16 and F16 experts, on the tensor-core float products.
  bool float_grouped_experts(const DeviceLayer& L, int64_t n_items) const;
  // Items a tile of the grouped integer products takes (gemv.h): 8, or 32 and 64
  // where the experts have many items (prefill).
  // EMBER_CUDA_EXPERT_TILE=8|32|64 fixes it (A/B runs).
  int expert_tile_items(int64_t n_items) const;
  int expert_tile_ = 0;
  // Int8 activations (gemv_int8.cu) are made where one of the matrices about to
  // read an input has an integer product for the step, once per input, fused
  // with the kernel that makes the input where there is one, in the K style
  // where any such reader reads it, else in Q8_0's (int8_acts.h; a reader of
  // the other style reads the floats); else these return nullptr and the
  // products read floats.
  std::optional<Int8Style> int8_style(std::initializer_list<const DeviceMatrix*> readers, int64_t n) const;
  // Whether that is the K style: the kernels that round their input themselves round only in it.
  bool wants_k_int8(std::initializer_list<const DeviceMatrix*> readers, int64_t n) const {
    return int8_style(readers, n) == Int8Style::K;
  }
  // Steps of at least gemm_min_tokens() tokens multiply the dense matrices on the
  // tensor cores (gemm.h); smaller ones, and the experts, take the decode products.
  bool on_tensor_cores(const DeviceMatrix& W, int64_t n) const {
    return gemm_ && n >= gemm_min_tokens() && W.expert_stride == 0 && gemm_->fits(W, n);
  }
  // Y = W X (or Y += W X): the tensor cores or the decode products, by shape.
  void product(const DeviceMatrix& W, const float* X, int64_t ldx, int64_t n, float* Y, int64_t ldy,
               const Int8Acts* acts, bool add = false);
  // Several matrices reading the same input (q/k/v, gate/up): one launch when
  // they share a format and row length and take the decode path, with an
  // integer product or (BF16, F16) the tensor-core float product.
  void products(std::initializer_list<MatrixOut> outs, const float* X, int64_t ldx, int64_t n, const Int8Acts* acts);
  // xn_ = rmsnorm(x_ rows (rows ? rows[i] : i)) * w.
  const Int8Acts* norm(const int32_t* rows, int64_t n, const float* w, std::initializer_list<const DeviceMatrix*> readers);
  // g = act(g) * u, n rows of k.
  const Int8Acts* gate(float* g, const float* u, int64_t n, int64_t k, const DeviceMatrix& reader);
  // X (n rows of k floats) as it is.
  const Int8Acts* int8_acts(const float* X, int64_t n, int64_t k, const DeviceMatrix& reader);

  const Model& model_;
  StepLimits lim_;
  KvConfig kv_;
  cudaStream_t stream_ = nullptr;
  DeviceWeights w_;
  DeviceBuffer kv_store_;
  ScratchSizes sz_;
  DeviceBuffer scratch_, ints_, int8_scratch_;
  Int8Acts acts_;
  bool int8_products_ = true;  // EMBER_CUDA_FLOAT_PRODUCTS=1 turns them off (to measure what they gain)
  std::unique_ptr<TensorCoreGemm> gemm_;
  PinnedBuffer host_logits_;
  // Steps queued on the stream (Backend::submit): each has its own pinned
  // metadata (written while the step before may still be reading its own)
  // and picked ids, and an event the host sleeps on.
  struct Queued {
    PinnedBuffer ints, ids;
    cudaEvent_t done = nullptr;
  };
  Queued queued_[kMaxQueuedSteps];
  StepQueue queue_;
  const int32_t* waited_ids_ = nullptr;  // picked_ids(): the picks of the step waited for last
  DeviceBuffer device_ids_;  // the picked ids of LastPicked rows (a step's picked tokens read them)
  DeviceBuffer argmax_scratch_;  // the slices' bests per row (argmax.h)
  DeviceBuffer router_arrivals_;  // the one-token router's count of finished blocks (moe.h)
  // Attention of the step being run: sequences with more than kFlashRows tokens
  // in it take flash attention (flash_tiles_ tiles), the other tokens
  // (split_tokens_ of them, listed at split_list_) the split kernel.
  bool flash_ = false;  // F16/BF16 KV and EMBER_CUDA_FLASH not 0
  int flash_tiles_ = 0;
  int64_t split_tokens_ = 0;
  StepProfile prof_;
  // Captured steps by shape.
  std::map<Shape::Key, cudaGraphExec_t> graphs_;
  // Views into the scratch.
  float *x_, *xn_, *proj_, *q_, *attn_, *k_, *v_, *gate_, *up_, *logits_, *partial_, *router_, *moe_w_, *moe_gate_,
      *moe_up_, *moe_out_;
  int32_t *tokens_, *pos_, *seq_, *table_off_, *rows_, *split_list_, *flash_list_, *seq_start_, *tables_, *moe_ids_, *moe_order_,
      *moe_tiles_;
  DevicePick* picks_;  // each picked row's parameters and draw
  StepIndex ix_;
};

CudaBackend::CudaBackend(const Model& model, const StepLimits& limits, const KvConfig& kv)
    : model_(model), lim_(limits), kv_(kv) {
  const ModelDesc& d = model.desc();
  if (lim_.max_tokens <= 0 || lim_.max_logit_rows <= 0 || lim_.max_context <= 0)
    throw Error("CUDA backend: token, logit-row and context limits must be positive");
  if (kv_.n_blocks <= 0 || kv_.block_size <= 0) throw Error("CUDA backend: the KV pool needs at least one block");
  if (d.head_dim % 2 || d.head_dim > 256) throw Error("CUDA backend: head_dim must be even and at most 256");
  EMBER_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  w_ = upload_weights(model, stream_);

  kv_store_ = DeviceBuffer(size_t(kv_.n_blocks) * kv_block_bytes(d, kv_.block_size, kv_.type));
  EMBER_CUDA_CHECK(cudaMemsetAsync(kv_store_.get(), 0, kv_store_.bytes(), stream_));

  sz_ = scratch_sizes(d, lim_, kv_.block_size);
  scratch_ = DeviceBuffer(sz_.floats() * sizeof(float));
  float* f = scratch_.get<float>();
  auto take = [&](size_t n) { float* p = f; f += whole_float4s(n); return p; };
  x_ = take(sz_.x); xn_ = take(sz_.x); proj_ = take(sz_.x);
  q_ = take(sz_.q); attn_ = take(sz_.q);
  k_ = take(sz_.kv); v_ = take(sz_.kv);
  gate_ = take(sz_.ffn); up_ = take(sz_.ffn);
  logits_ = take(sz_.logits); partial_ = take(sz_.partial); router_ = take(sz_.router);
  moe_w_ = take(sz_.moe_items); moe_gate_ = take(sz_.moe_ffn); moe_up_ = take(sz_.moe_ffn); moe_out_ = take(sz_.moe_out);

  // Step metadata: the host writes it into pinned memory, one copy sends it.
  const size_t T = size_t(lim_.max_tokens);
  for (Queued& q : queued_) {
    q.ints = PinnedBuffer(sz_.meta_ints * sizeof(int32_t));
    q.ids = PinnedBuffer(size_t(lim_.max_logit_rows) * sizeof(int32_t));
    EMBER_CUDA_CHECK(cudaEventCreateWithFlags(&q.done, cudaEventBlockingSync | cudaEventDisableTiming));
  }
  waited_ids_ = queued_[0].ids.get<int32_t>();
  ints_ = DeviceBuffer(sz_.ints() * sizeof(int32_t));
  int32_t* ip = ints_.get<int32_t>();
  tokens_ = ip; pos_ = ip + T; seq_ = ip + 2 * T; rows_ = ip + 3 * T; table_off_ = ip + 4 * T;
  split_list_ = ip + 5 * T; flash_list_ = ip + 6 * T; seq_start_ = ip + 8 * T;
  picks_ = reinterpret_cast<DevicePick*>(ip + sz_.picks_at);
  tables_ = ip + sz_.tables_at;
  moe_ids_ = ip + sz_.meta_ints;
  moe_order_ = moe_ids_ + sz_.moe_items;
  moe_tiles_ = moe_order_ + sz_.moe_items;
  ix_ = {pos_, seq_, table_off_, tables_, seq_start_};
  host_logits_ = PinnedBuffer(sz_.logits * sizeof(float));
  device_ids_ = DeviceBuffer(size_t(lim_.max_logit_rows) * sizeof(int32_t));
  argmax_scratch_ = DeviceBuffer(argmax_scratch_bytes(lim_.max_logit_rows));
  EMBER_CUDA_CHECK(cudaMemsetAsync(argmax_scratch_.get(), 0, argmax_scratch_.bytes(), stream_));
  router_arrivals_ = DeviceBuffer(sizeof(unsigned));
  EMBER_CUDA_CHECK(cudaMemsetAsync(router_arrivals_.get(), 0, router_arrivals_.bytes(), stream_));
  const char* fl = std::getenv("EMBER_CUDA_FLASH");
  flash_ = flash_attention_fits(kv_.type, d.head_dim) && !(fl && std::strcmp(fl, "0") == 0);
  // Int8 activations: the widest input of a dense product, or the chosen experts' rows.
  const char* fp = std::getenv("EMBER_CUDA_FLOAT_PRODUCTS");
  int8_products_ = !(fp && std::strcmp(fp, "1") == 0);
  if (const char* et = std::getenv("EMBER_CUDA_EXPERT_TILE")) {
    expert_tile_ = std::strcmp(et, "8") == 0 ? 8 : std::strcmp(et, "32") == 0 ? 32 : std::strcmp(et, "64") == 0 ? 64 : -1;
    if (expert_tile_ < 0) throw Error(std::string("EMBER_CUDA_EXPERT_TILE: 8, 32 or 64, not '") + et + "'");
  }
  const ProductRoom room = product_room(model, lim_, sz_);
  int8_scratch_ = DeviceBuffer(room.int8_bytes);
  if (room.gemm_weights > 0) gemm_ = std::make_unique<TensorCoreGemm>(room.gemm_weights, room.gemm_rows, room.widest, stream_);
  EMBER_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

CudaBackend::~CudaBackend() {
  for (auto& [key, g] : graphs_) cudaGraphExecDestroy(g);
  if (stream_) {
    cudaStreamSynchronize(stream_);
    cudaStreamDestroy(stream_);
  }
  for (Queued& q : queued_)
    if (q.done) cudaEventDestroy(q.done);
}

KvLayer CudaBackend::kv_layer(int l) const {
  KvLayer k;
  k.base = kv_half(l, 0, 0);
  k.type = kv_.type;
  k.block_size = kv_.block_size;
  k.kv_dim = model_.desc().kv_dim();
  k.half_elems = int64_t(kv_.block_size) * k.kv_dim;
  return k;
}

// Steps of at most this many tokens replay graphs; longer ones (prefill) are
// long enough that launching their kernels one by one costs little.
constexpr int64_t kGraphMaxTokens = 64;
static_assert(kFlashRows >= kGraphMaxTokens, "a captured step must never hold flash attention");
constexpr size_t kMaxGraphs = 256;

const float* CudaBackend::forward(const StepBatch& batch) {
  if (queue_.queued() > 0) throw Error("CUDA backend: forward() while steps are queued (wait for them first)");
  submit(batch);
  return wait_step().logits;
}

// The step's metadata goes into its slot's pinned memory, its kernels and
// the copies of its results onto the stream behind the steps queued before,
// then an event the host waits on. Tokens picked by the step before are read
// on the device (gather_rows), from the ids that step left there.
void CudaBackend::submit(const StepBatch& batch) {
  const ModelDesc& d = model_.desc();
  const int slot = queue_.next_slot();
  check_step_batch(batch, lim_, kv_, d.vocab);
  check_picked_rows(batch, queue_.last_picked_rows());
  Queued& q = queued_[slot];
  const Shape sh = upload_step(batch, q.ints.get<int32_t>());
  run_step(sh);
  // A step that returns logit rows is never queued behind another (checked above), so one host buffer serves.
  EMBER_CUDA_CHECK(cudaMemcpyAsync(host_logits_.get<float>(), logits_, size_t(sh.n_rows) * size_t(d.vocab) * sizeof(float),
                                   cudaMemcpyDeviceToHost, stream_));
  if (sh.n_argmax > 0)
    EMBER_CUDA_CHECK(cudaMemcpyAsync(q.ids.get<int32_t>(), device_ids_.get<int32_t>(), size_t(sh.n_argmax) * sizeof(int32_t),
                                     cudaMemcpyDeviceToHost, stream_));
  EMBER_CUDA_CHECK(cudaEventRecord(q.done, stream_));
  queue_.push(slot, sh.n_rows, sh.n_argmax);
  prof_.end_step(stream_);  // profiling times each step alone: it waits here
}

StepOutput CudaBackend::wait_step() {
  Queued& q = queued_[queue_.pop()];
  EMBER_CUDA_CHECK(cudaEventSynchronize(q.done));  // sleeps: the device runs with cudaDeviceScheduleBlockingSync
  waited_ids_ = q.ids.get<int32_t>();
  return {host_logits_.get<float>(), waited_ids_};
}

CudaBackend::Shape CudaBackend::upload_step(const StepBatch& batch, int32_t* h) {
  const size_t T = size_t(lim_.max_tokens);
  int32_t *h_tok = h, *h_pos = h + T, *h_seq = h + 2 * T, *h_rows = h + 3 * T, *h_off = h + 4 * T;
  int32_t *h_split = h + 5 * T, *h_flash = h + 6 * T, *h_start = h + 8 * T;
  auto* h_picks = reinterpret_cast<DevicePick*>(h + sz_.picks_at);
  int32_t* h_tab = h + sz_.tables_at;
  Shape sh;
  int64_t t = 0, r = 0, tab = 0, n_split = 0;
  int longest = 0;  // positions of the longest context attention() takes
  int n_tiles = 0;
  const int64_t n_back = batch.logit_rows();
  int64_t ra = n_back;  // argmax rows follow the rows that come back
  for (size_t si = 0; si < batch.seqs.size(); ++si) {
    const SeqStep& s = batch.seqs[si];
    const int used = int((s.pos + s.n_tokens + kv_.block_size - 1) / kv_.block_size);  // blocks the step touches
    if (tab + used > sz_.max_table) throw Error("CUDA backend: the step's block tables exceed the backend's limit");
    h_off[si] = int32_t(tab);
    h_start[si] = int32_t(s.pos);
    std::memcpy(h_tab + tab, s.blocks, size_t(used) * sizeof(int32_t));
    tab += used;
    const bool flash = flash_ && s.n_tokens > kFlashRows;
    for (int i = 0; flash && i < s.n_tokens; i += kFlashRows, ++n_tiles) {
      h_flash[2 * n_tiles] = int32_t(t + i);
      h_flash[2 * n_tiles + 1] = std::min(kFlashRows, s.n_tokens - i);
    }
    for (int i = 0; i < s.n_tokens; ++i, ++t) {
      if (!flash) {
        h_split[n_split++] = int32_t(t);
        sh.n_splits = std::max(sh.n_splits, attention_splits(int(s.pos) + i + 1));
        longest = std::max(longest, int(s.pos) + i + 1);
      }
      h_tok[t] = s.picked_row >= 0 ? -1 - s.picked_row : s.tokens[i];  // negative: gather_rows reads the pick
      h_pos[t] = int32_t(s.pos + i);
      h_seq[t] = int32_t(si);
      if (s.returns_row(i)) h_rows[r++] = int32_t(t);
      if (s.picks_row(i)) {
        h_picks[ra - n_back] = device_pick(s.pick_of_row(i));
        sh.sampled |= !s.pick.greedy();
        h_rows[ra++] = int32_t(t);
      }
    }
  }
  prof_.mark("upload", stream_);
  EMBER_CUDA_CHECK(cudaMemcpyAsync(tokens_, h, (sz_.tables_at + size_t(tab)) * sizeof(int32_t), cudaMemcpyHostToDevice, stream_));
  sh.n_splits = attention_split_grid(sh.n_splits);
  sh.context_class = attention_context_class(longest);
  sh.n_tok = t;
  sh.n_rows = r;
  sh.n_argmax = ra - n_back;
  sh.pick_vocab = batch.pick_vocab > 0 ? batch.pick_vocab : model_.desc().vocab;
  flash_tiles_ = n_tiles;
  split_tokens_ = n_split;
  return sh;
}

void CudaBackend::run_step(const Shape& sh) {
  if (prof_.enabled() || sh.n_tok > kGraphMaxTokens) {
    enqueue_step(sh);
    return;
  }
  const auto key = sh.key();
  auto it = graphs_.find(key);
  if (it == graphs_.end()) {
    if (graphs_.size() >= kMaxGraphs) {
      for (auto& [k, g] : graphs_) cudaGraphExecDestroy(g);
      graphs_.clear();
    }
    cudaGraph_t graph = nullptr;
    EMBER_CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
    try {
      enqueue_step(sh);
    } catch (...) {
      cudaStreamEndCapture(stream_, &graph);
      if (graph) cudaGraphDestroy(graph);
      throw;
    }
    EMBER_CUDA_CHECK(cudaStreamEndCapture(stream_, &graph));
    cudaGraphExec_t exec = nullptr;
    const cudaError_t e = cudaGraphInstantiate(&exec, graph, 0);
    cudaGraphDestroy(graph);
    EMBER_CUDA_CHECK(e);
    it = graphs_.emplace(key, exec).first;
  }
  EMBER_CUDA_CHECK(cudaGraphLaunch(it->second, stream_));
}

void CudaBackend::enqueue_step(const Shape& sh) {
  const int64_t n_tok = sh.n_tok, n_rows = sh.n_rows + sh.n_argmax;  // every row the head computes
  const ModelDesc& d = model_.desc();
  prof_.mark("embed", stream_);
  gather_rows(w_.token_embd, w_.iq, tokens_, device_ids_.get<int32_t>(), n_tok, d.embed_scale, x_, stream_);
  for (int l = 0; l < d.n_layers; ++l) {
    attention_block(l, sh);
    if (d.layers[size_t(l)].moe) moe_ffn(l, n_tok);
    else dense_ffn(l, n_tok);
  }
  prof_.mark("norm", stream_);
  const Int8Acts* xq = norm(rows_, n_rows, w_.output_norm, {&w_.output});
  prof_.mark("output head", stream_);
  product(w_.output, xn_, d.hidden, n_rows, logits_, d.vocab, xq);
  if (d.final_softcap > 0) softcap(logits_, n_rows * d.vocab, d.final_softcap, stream_);
  prof_.mark("argmax", stream_);
  argmax_rows(logits_ + sh.n_rows * d.vocab, d.vocab, sh.n_argmax, sh.pick_vocab, device_ids_.get<int32_t>(),
              argmax_scratch_.get<int32_t>(), stream_);
  if (sh.sampled) {
    prof_.mark("sampling", stream_);
    sample_rows(logits_ + sh.n_rows * d.vocab, d.vocab, sh.n_argmax, sh.pick_vocab, picks_, device_ids_.get<int32_t>(), stream_);
  }
  prof_.mark("logits to host", stream_);
}

std::optional<Int8Style> CudaBackend::int8_style(std::initializer_list<const DeviceMatrix*> readers, int64_t n) const {
  if (!int8_products_) return std::nullopt;
  std::optional<Int8Style> style;
  for (const DeviceMatrix* m : readers)
    if (m->present() && int8_product_serves(*m) && !on_tensor_cores(*m, n))
      if (!style || int8_style_of(m->type) == Int8Style::K) style = int8_style_of(m->type);
  return style;
}

void CudaBackend::product(const DeviceMatrix& W, const float* X, int64_t ldx, int64_t n, float* Y, int64_t ldy,
                          const Int8Acts* acts, bool add) {
  if (on_tensor_cores(W, n)) gemm_->run(W, w_.iq, X, ldx, n, Y, ldy, add);
  else gemv(W, w_.iq, X, ldx, n, Y, ldy, stream_, acts, add);
}

void CudaBackend::products(std::initializer_list<MatrixOut> outs, const float* X, int64_t ldx, int64_t n, const Int8Acts* acts) {
  const DeviceMatrix& W0 = *outs.begin()->W;
  bool same = outs.size() > 1;
  for (const MatrixOut& o : outs) same = same && o.W->type == W0.type && o.W->k == W0.k && !on_tensor_cores(*o.W, n);
  if (same && acts != nullptr && int8_product_serves(W0) && acts->style == int8_style_of(W0.type))
    return gemv_int8_fused({outs.begin(), outs.size()}, *acts, stream_);
  bool floats = same && float_mma_reads(X, ldx);
  for (const MatrixOut& o : outs) floats = floats && float_mma_serves(*o.W, n);
  if (floats) return gemv_float_mma_fused({outs.begin(), outs.size()}, X, ldx, n, stream_);
  for (const MatrixOut& o : outs) product(*o.W, X, ldx, n, o.Y, o.ldy, acts);
}

const Int8Acts* CudaBackend::norm(const int32_t* rows, int64_t n, const float* w,
                                  std::initializer_list<const DeviceMatrix*> readers) {
  const ModelDesc& d = model_.desc();
  const std::optional<Int8Style> style = int8_style(readers, n);
  if (!style) {
    rmsnorm_rows(x_, rows, n, w, d.norm_eps, d.hidden, xn_, stream_);
    return nullptr;
  }
  acts_ = rmsnorm_int8_acts(x_, rows, n, w, d.norm_eps, d.hidden, xn_, int8_scratch_.get(), stream_, *style);
  return &acts_;
}

const Int8Acts* CudaBackend::gate(float* g, const float* u, int64_t n, int64_t k, const DeviceMatrix& reader) {
  const Activation a = model_.desc().activation;
  const std::optional<Int8Style> style = int8_style({&reader}, n);
  if (!style) {
    gated_activation(a, g, u, g, n * k, stream_);
    return nullptr;
  }
  acts_ = gated_int8_acts(a, g, u, g, n, k, int8_scratch_.get(), stream_, *style);
  return &acts_;
}

const Int8Acts* CudaBackend::int8_acts(const float* X, int64_t n, int64_t k, const DeviceMatrix& reader) {
  const std::optional<Int8Style> style = int8_style({&reader}, n);
  if (!style) return nullptr;
  acts_ = quantize_int8_acts(X, k, n, k, int8_scratch_.get(), stream_, *style);
  return &acts_;
}

void CudaBackend::attention_block(int l, const Shape& sh) {
  const int64_t n_tok = sh.n_tok;
  const ModelDesc& d = model_.desc();
  const DeviceLayer& L = w_.layers[size_t(l)];
  const int64_t H = d.hidden, QD = d.q_dim(), KVD = d.kv_dim();
  prof_.mark("norm", stream_);
  const Int8Acts* xq = norm(nullptr, n_tok, L.attn_norm, {&L.wq, &L.wk, &L.wv});
  prof_.mark("qkv", stream_);
  products({{&L.wq, q_, QD}, {&L.wk, k_, KVD}, {&L.wv, v_, KVD}}, xn_, H, n_tok, xq);

  const KvLayer kv = kv_layer(l);
  QkvArgs qa;
  qa.q = q_; qa.k = k_; qa.v = v_;
  qa.bq = L.bq; qa.bk = L.bk; qa.bv = L.bv;
  qa.q_norm = d.qk_norm ? L.q_norm : nullptr;
  qa.k_norm = d.qk_norm ? L.k_norm : nullptr;
  qa.eps = d.norm_eps;
  qa.inv_freq = L.inv_freq;
  qa.adjacent_pairs = d.rope_pairing == RopePairing::Adjacent;
  qa.n_heads = d.n_heads; qa.n_kv_heads = d.n_kv_heads; qa.head_dim = d.head_dim;
  prof_.mark("rope + kv store", stream_);
  qkv_post(qa, ix_, kv, n_tok, stream_);

  AttnArgs aa;
  aa.q = q_; aa.out = attn_; aa.partial = partial_;
  aa.n_heads = d.n_heads; aa.n_kv_heads = d.n_kv_heads; aa.head_dim = d.head_dim;
  aa.scale = d.attention_scale(); aa.softcap = d.attn_softcap;
  aa.sliding_window = d.layers[size_t(l)].sliding_window;
  aa.n_splits = sh.n_splits;
  aa.context_class = sh.context_class;
  prof_.mark("attention", stream_);
  if (flash_tiles_ > 0) {
    flash_attention(aa, ix_, kv, flash_list_, flash_tiles_, stream_);
    aa.tokens = split_list_;  // the tokens of the other sequences
  }
  // Where no token takes flash attention, the attention kernels round wo's input too.
  const bool rounded = flash_tiles_ == 0 && QD % kInt8Block == 0 && wants_k_int8({&L.wo}, n_tok);
  if (rounded) aa.round = acts_ = int8_acts_view(n_tok, QD, int8_scratch_.get());
  if (split_tokens_ > 0) attention(aa, ix_, kv, split_tokens_, stream_);

  prof_.mark("wo", stream_);
  // Without a post-norm the product adds itself onto the residual stream.
  const bool into_x = L.post_attn_norm == nullptr;
  product(L.wo, attn_, QD, n_tok, into_x ? x_ : proj_, H, rounded ? &acts_ : int8_acts(attn_, n_tok, QD, L.wo), into_x);
  prof_.mark("residual", stream_);
  if (!into_x) add_residual(x_, proj_, L.post_attn_norm, d.norm_eps, n_tok, H, stream_);
}

void CudaBackend::dense_ffn(int l, int64_t n_tok) {
  const ModelDesc& d = model_.desc();
  const DeviceLayer& L = w_.layers[size_t(l)];
  const int64_t H = d.hidden, F = d.ffn;
  prof_.mark("norm", stream_);
  const Int8Acts* xq = norm(nullptr, n_tok, L.ffn_norm, {&L.ffn_gate, &L.ffn_up});
  prof_.mark("gate + up", stream_);
  products({{&L.ffn_gate, gate_, F}, {&L.ffn_up, up_, F}}, xn_, H, n_tok, xq);
  prof_.mark("activation", stream_);
  const Int8Acts* hq = gate(gate_, up_, n_tok, F, L.ffn_down);
  prof_.mark("down", stream_);
  const bool into_x = L.post_ffn_norm == nullptr;
  product(L.ffn_down, gate_, F, n_tok, into_x ? x_ : proj_, H, hq, into_x);
  prof_.mark("residual", stream_);
  if (!into_x) add_residual(x_, proj_, L.post_ffn_norm, d.norm_eps, n_tok, H, stream_);
}

// Items per expert, on average, from which grouping pays: below it most tiles
// hold one item and the grouping kernel is pure cost.
constexpr int64_t kGroupedItemsPerExpert = 2;

bool CudaBackend::grouped_experts(const DeviceLayer& L, int64_t n_items, const Int8Acts* xq) const {
  const GgmlType t = L.gate_exps.type;
  // On the tensor cores: the formats with an integer product, each reading activations in its style.
  return xq && has_int8_product(t) && xq->style == int8_style_of(t) && L.up_exps.type == t && L.down_exps.type == t &&
         n_items >= kGroupedItemsPerExpert * model_.desc().n_experts && int8_style({&L.down_exps}, n_items) == xq->style;
}

int CudaBackend::expert_tile_items(int64_t n_items) const {
  if (expert_tile_ > 0) return expert_tile_;
  // A tile's weights are decoded once for all its items, and larger tiles
  // multiply them more items at a time, so they pay even half empty. Measured
  // on moe-30b-a3b prefill (bench/RESULTS.md, session 27): 8 items an expert on
  // average, tiles of 32 +23% and of 64 +19% over 8; 16 items, 32 and 64 both
  // +30%; 32 items, 64 +1% over 32.
  const int64_t per_expert = n_items / std::max(1, model_.desc().n_experts);
  return per_expert >= 32 ? kLargeExpertTile : per_expert >= 8 ? 32 : kExpertTile;
}

bool CudaBackend::float_grouped_experts(const DeviceLayer& L, int64_t n_items) const {
  return float_mma_experts_serve(L.gate_exps) && float_mma_experts_serve(L.up_exps) &&
         float_mma_experts_serve(L.down_exps) && n_items >= kGroupedItemsPerExpert * model_.desc().n_experts;
}

void CudaBackend::moe_ffn(int l, int64_t n_tok) {
  const ModelDesc& d = model_.desc();
  const DeviceLayer& L = w_.layers[size_t(l)];
  const int64_t H = d.hidden, E = d.n_experts, K = d.n_experts_used, EF = d.expert_ffn;
  const Int8Acts* xq = nullptr;
  if (n_tok == 1 && norms_in_router(L.router) && L.router.k == H) {
    // One token: the norm, the router product and the routing in one launch.
    prof_.mark("norm + router", stream_);
    RouterNorm rn;
    rn.x = x_; rn.w = L.ffn_norm; rn.eps = d.norm_eps; rn.y = xn_;
    // The router kernel rounds the row in the K style; experts of another style round it after.
    const std::optional<Int8Style> style = int8_style({&L.router, &L.gate_exps, &L.up_exps}, n_tok);
    if (style == Int8Style::K) {
      acts_ = rn.acts = int8_acts_view(n_tok, H, int8_scratch_.get());
      xq = &acts_;
    }
    norm_and_route_one_token(d, rn, L.router, w_.iq, router_, moe_ids_, moe_w_, router_arrivals_.get<unsigned>(), stream_);
    if (style && style != Int8Style::K) xq = int8_acts(xn_, n_tok, H, L.gate_exps);
  } else {
    prof_.mark("norm", stream_);
    xq = norm(nullptr, n_tok, L.ffn_norm, {&L.router, &L.gate_exps, &L.up_exps});
    prof_.mark("router", stream_);
    if (n_tok == 1 && routes_in_one_launch(L.router)) {
      route_one_token(d, L.router, w_.iq, xn_, router_, moe_ids_, moe_w_, router_arrivals_.get<unsigned>(), stream_);
    } else {
      // A router without an integer product keeps the float products at every size: the one-token router's bits (moe.h).
      if (has_int8_product(L.router.type)) gemv(L.router, w_.iq, xn_, H, n_tok, router_, E, stream_, xq);
      else gemv_float(L.router, w_.iq, xn_, H, n_tok, router_, E, stream_);
      route(d, router_, n_tok, moe_ids_, moe_w_, stream_);
    }
  }
  prof_.mark("experts", stream_);
  // Only the chosen experts' weights are read: item t * K + j is token t's j-th expert.
  const int64_t n_items = n_tok * K;
  // Many items per expert (prefill, large batches): grouped by expert, each
  // expert's rows read once per tile of items, with the same bits per item.
  const bool grouped = grouped_experts(L, n_items, xq);
  // BF16 and F16 experts likewise, on the tensor-core float products.
  const bool float_grouped = !grouped && float_grouped_experts(L, n_items);
  const int tile_items = grouped ? expert_tile_items(n_items) : kExpertTile;
  const int64_t tiles = grouped || float_grouped ? max_expert_tiles(n_items, int(E), tile_items) : 0;
  // Gate and up read the same items: one launch for both where the int8 product serves them.
  const MatrixOut gate_up[2] = {{&L.gate_exps, moe_gate_, EF}, {&L.up_exps, moe_up_, EF}};
  const bool paired = xq && int8_product_serves(L.gate_exps) && xq->style == int8_style_of(L.gate_exps.type) &&
                      L.up_exps.type == L.gate_exps.type;
  if (grouped) {
    group_by_expert(moe_ids_, n_items, int(E), moe_order_, moe_tiles_, stream_, tile_items);
    gemv_int8_experts_grouped(gate_up, moe_order_, moe_tiles_, tiles, *xq, int(K), stream_, tile_items);
  } else if (float_grouped) {
    group_by_expert(moe_ids_, n_items, int(E), moe_order_, moe_tiles_, stream_);
    gemv_float_mma_experts(L.gate_exps, nullptr, moe_order_, moe_tiles_, tiles, xn_, H, int(K), moe_gate_, EF, stream_);
    gemv_float_mma_experts(L.up_exps, nullptr, moe_order_, moe_tiles_, tiles, xn_, H, int(K), moe_up_, EF, stream_);
  } else if (paired) {
    gemv_int8_experts(gate_up, moe_ids_, *xq, int(K), n_items, stream_);
  } else {
    gemv_experts(L.gate_exps, w_.iq, moe_ids_, xn_, H, int(K), n_items, moe_gate_, EF, stream_, xq);
    gemv_experts(L.up_exps, w_.iq, moe_ids_, xn_, H, int(K), n_items, moe_up_, EF, stream_, xq);
  }
  // Without a post-norm the weighted sum adds itself onto the residual stream.
  const bool into_x = L.post_ffn_norm == nullptr;
  float* sum_out = into_x ? x_ : proj_;
  prof_.mark("down", stream_);
  if (n_tok == 1 && wants_k_int8({&L.down_exps}, n_items) && moe_down_fits(L.down_exps, int(K))) {
    // One token: the gated activation, the down product and the weighted sum in one launch.
    moe_down_one_token(d.activation, L.down_exps, moe_ids_, moe_w_, moe_gate_, moe_up_, int(K), sum_out, into_x, stream_);
  } else {
    const Int8Acts* hq = gate(moe_gate_, moe_up_, n_items, EF, L.down_exps);
    // The ids were written before gate/up, which ran before the gated activation: down's blocks may
    // load their experts' first weights before that activation is ready.
    if (grouped)
      gemv_int8_experts_grouped(L.down_exps, moe_order_, moe_tiles_, tiles, *hq, 1, moe_out_, H, stream_, tile_items);
    else if (float_grouped)
      gemv_float_mma_experts(L.down_exps, nullptr, moe_order_, moe_tiles_, tiles, moe_gate_, EF, 1, moe_out_, H, stream_);
    else gemv_experts(L.down_exps, w_.iq, moe_ids_, moe_gate_, EF, 1, n_items, moe_out_, H, stream_, hq, /*ids_early=*/true);
    combine_experts(moe_out_, moe_w_, int(K), n_tok, H, sum_out, stream_, into_x);
  }
  prof_.mark("residual", stream_);
  if (!into_x) add_residual(x_, proj_, L.post_ffn_norm, d.norm_eps, n_tok, H, stream_);
}

void CudaBackend::copy_kv_block(int src, int dst, int n_positions) {
  if (src < 0 || dst < 0 || src >= kv_.n_blocks || dst >= kv_.n_blocks || n_positions < 0 || n_positions > kv_.block_size)
    throw Error("CUDA backend: KV block copy out of range");
  const size_t n = size_t(n_positions) * size_t(model_.desc().kv_dim()) * kv_type_bytes(kv_.type);
  for (int l = 0; l < model_.desc().n_layers; ++l)
    for (int s = 0; s < 2; ++s)
      EMBER_CUDA_CHECK(cudaMemcpyAsync(kv_half(l, dst, s), kv_half(l, src, s), n, cudaMemcpyDeviceToDevice, stream_));
}

// One block's keys and values of every layer between device and host, [layer][keys, values].
void CudaBackend::transfer_kv_block(int block, void* host, bool to_host) {
  if (block < 0 || block >= kv_.n_blocks) throw Error("CUDA backend: KV block out of range");
  const size_t n = 2 * kv_half_bytes();
  for (int l = 0; l < model_.desc().n_layers; ++l) {
    uint8_t* h = static_cast<uint8_t*>(host) + size_t(l) * n;
    uint8_t* d = kv_half(l, block, 0);
    EMBER_CUDA_CHECK(to_host ? cudaMemcpyAsync(h, d, n, cudaMemcpyDeviceToHost, stream_)
                             : cudaMemcpyAsync(d, h, n, cudaMemcpyHostToDevice, stream_));
  }
  EMBER_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

void CudaBackend::read_kv_block(int block, void* host) { transfer_kv_block(block, host, true); }
void CudaBackend::write_kv_block(int block, const void* host) { transfer_kv_block(block, const_cast<void*>(host), false); }

// Waiting threads sleep instead of spinning; set before the first call creates the context.
void init_device() {
  static const bool once = [] {
    int n = 0;
    EMBER_CUDA_CHECK(cudaGetDeviceCount(&n));
    if (n == 0) throw Error("no CUDA device is present");
    EMBER_CUDA_CHECK(cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync));
    return true;
  }();
  (void)once;
}

}  // namespace

bool cuda_device_available() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

uint64_t cuda_kv_budget(const Model& model, const StepLimits& limits) {
  init_device();
  size_t free_b = 0, total_b = 0;
  EMBER_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
  const ScratchSizes s = scratch_sizes(model.desc(), limits, 16);
  const uint64_t need =
      device_weight_bytes(model) + (s.floats() + s.ints()) * 4 + product_room(model, limits, s).bytes() + (uint64_t(1) << 30);
  // Keep a tenth of the card free for the runtime and other programs.
  const uint64_t usable = uint64_t(double(free_b) * 0.9);
  return usable > need ? usable - need : 0;
}

std::unique_ptr<Backend> make_cuda_backend(const Model& model, const StepLimits& limits, const KvConfig& kv) {
  init_device();
  return std::make_unique<CudaBackend>(model, limits, kv);
}

}  // namespace ember
