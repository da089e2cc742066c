// Named weight tensors, whatever file they came from.
//
// Both loaders (GGUF and Hugging Face safetensors) present their tensors under
// the GGUF names (`blk.3.attn_q.weight`), in GGUF dimension order (fastest
// first). A 3-D expert tensor has one part per expert: GGUF stores them
// stacked, Hugging Face as separate tensors, and the binder need not care.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "quant/types.h"

namespace ember {

struct SourceTensor {
  std::string name;
  GgmlType type = GgmlType::F32;
  std::vector<int64_t> ne;               // dimensions, fastest first
  std::vector<const uint8_t*> parts;     // one, or one per expert (ne[2] of them)
  size_t part_bytes = 0;                 // bytes of each part
  int64_t n_elements() const;
  size_t nbytes() const { return part_bytes * parts.size(); }
};

class TensorSource {
 public:
  void add(SourceTensor t);  // throws on a duplicate name
  const SourceTensor* find(std::string_view name) const;
  const std::vector<SourceTensor>& tensors() const { return tensors_; }
  // Memory the tensors point into (mappings, converted copies) stays alive with the source.
  void keep_alive(std::shared_ptr<const void> p) { keep_.push_back(std::move(p)); }
  // Storage for data the loader had to transform (e.g. a norm stored as w instead of 1 + w).
  uint8_t* make_owned(size_t nbytes);

 private:
  std::vector<SourceTensor> tensors_;
  std::unordered_map<std::string, size_t> index_;
  std::vector<std::shared_ptr<const void>> keep_;
  std::vector<std::unique_ptr<uint8_t[]>> owned_;
};

}  // namespace ember
