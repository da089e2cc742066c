// The interface every backend (CPU, CUDA) implements; the engine talks only to this.
//
// A backend owns the kernels, the device memory and the storage of the KV
// blocks. The engine owns everything about *which* block holds what (ids,
// reference counts, block tables, the prefix cache: engine/block_allocator.h,
// engine/prefix_cache.h) and hands the backend one StepBatch per step.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/pick.h"
#include "engine/step_batch.h"
#include "model/descriptor.h"

namespace ember {

class Model;

// Element type of the stored keys and values.
enum class KvType : uint8_t { F16, BF16, F32 };
const char* kv_type_name(KvType t);
KvType parse_kv_type(const std::string& name);  // "f16", "bf16", "f32"; throws on anything else
size_t kv_type_bytes(KvType t);

// How the KV block storage is laid out: n_blocks blocks of block_size positions,
// each holding keys and values of every layer.
struct KvConfig {
  int n_blocks = 0;
  int block_size = 16;
  KvType type = KvType::F16;
};

// Bytes one block takes across all layers, keys and values.
size_t kv_block_bytes(const ModelDesc& d, int block_size, KvType type);

// The largest step the engine may form; the backend sizes its scratch for it at load.
struct StepLimits {
  int max_tokens = 256;      // new tokens in one step, all sequences together
  int max_logit_rows = 64;   // logit rows one step may ask for
  int max_context = 4096;    // longest sequence
};

// The checks that keep a malformed step from reading or writing out of bounds:
// token, row and context limits, block tables that cover their positions and
// name blocks of the pool, token ids inside the vocabulary. Throws ember::Error.
void check_step_batch(const StepBatch& batch, const StepLimits& lim, const KvConfig& kv, int vocab);

// What a step returns: its logit rows and its picked ids (forward(), picked_ids()).
struct StepOutput {
  const float* logits = nullptr;
  const int32_t* picked_ids = nullptr;
};

// The bookkeeping of steps queued on a backend (Backend::submit): which of
// its kMaxQueuedSteps slots hold queued steps, oldest first, and the rules of
// queueing. Shared by the default submit() and the backends that queue for real.
class StepQueue {
 public:
  static constexpr int kSlots = 2;
  // The slot the next submitted step takes. Throws when every slot is queued, or
  // when the step submitted last returns logit rows and is still queued.
  int next_slot() const;
  // That step is queued now.
  void push(int slot, int64_t logit_rows, int64_t picked_rows);
  // The oldest queued step's slot, no longer queued. Throws when none is.
  int pop();
  int queued() const { return n_; }
  // The slot and picked rows of the step submitted last (-1 and 0 before any): what picked rows read.
  int last() const { return last_; }
  int64_t last_picked_rows() const { return last_ < 0 ? 0 : picked_rows_[last_]; }

 private:
  int head_ = 0, n_ = 0, last_ = -1;
  int64_t logit_rows_[kSlots] = {}, picked_rows_[kSlots] = {};
};

class Backend {
 public:
  virtual ~Backend() = default;

  virtual const char* name() const = 0;
  virtual const Model& model() const = 0;
  virtual const StepLimits& limits() const = 0;
  virtual const KvConfig& kv_config() const = 0;

  // Runs one forward step and returns the logit rows it asked for (vocab
  // floats each) in batch order: for each sequence none, its last token's, or
  // all of its tokens'. Valid until the next call. Reads earlier positions'
  // keys/values and writes the new ones through each sequence's block table.
  virtual const float* forward(const StepBatch& batch) = 0;

  // After forward(): for each sequence that asked for LogitsWanted::LastPicked,
  // in batch order, the id picked from its last token's logits among the ids
  // below batch.pick_vocab by the rules of engine/pick.h (SeqStep::pick); for
  // one that asked for AllPicked, the id picked from each of its tokens' logits
  // (SeqStep::pick_of_row).
  // Valid until the next call.
  virtual const int32_t* picked_ids() const = 0;

  // Steps queued ahead, so that the device never waits for the host between
  // steps. submit() queues a step behind those already queued and may return
  // before it has run; wait_step() waits for the oldest queued step and returns
  // its results, valid until the next submit() or forward(). At most
  // kMaxQueuedSteps are queued, and a step may be queued behind another only
  // when that one returns no logit rows (picked ids alone). A sequence with
  // SeqStep::picked_row set feeds the id picked for that row by the step
  // submitted just before: the engine queues step t + 1 before it has read
  // step t's ids. A pick that is not a token (kPickNonFinite, ...) feeds
  // token 0; the engine ends that sequence when it reads the pick, so what
  // the step computes for it is never used.
  // These defaults run the step at submit(), through forward().
  static constexpr int kMaxQueuedSteps = StepQueue::kSlots;
  virtual void submit(const StepBatch& batch);
  virtual StepOutput wait_step();

  // Copies the first n_positions positions of block `src` into block `dst`, in
  // every layer: copy-on-write of a partly filled block shared through the prefix cache.
  virtual void copy_kv_block(int src, int dst, int n_positions) = 0;

  // One block's keys and values of every layer to or from host memory of
  // kv_block_bytes() bytes: preemption by swapping, and the host tier of the prefix cache.
  virtual void read_kv_block(int block, void* host) = 0;
  virtual void write_kv_block(int block, const void* host) = 0;
  size_t block_bytes() const;

 private:
  // The default submit()'s queue: each queued step's ids (copied: the next
  // forward() replaces the backend's own) and logits.
  struct Queued {
    std::vector<int32_t> ids;
    const float* logits = nullptr;
  };
  Queued queued_[kMaxQueuedSteps];
  StepQueue queue_;
  StepBatch resolved_;  // a batch with its picked tokens filled in
  std::vector<int32_t> picked_tokens_;
};

// The checks submit() makes of picked rows (SeqStep::picked_row): one token
// each, a row the step before had (its picked_rows). Throws ember::Error.
void check_picked_rows(const StepBatch& batch, int64_t previous_picked_rows);

}  // namespace ember
