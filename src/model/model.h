// A loaded model: its descriptor, its weights, and the files they live in.
//
// Model::load accepts a GGUF file or a Hugging Face model folder
// (config.json + model.safetensors, or sharded with model.safetensors.index.json).
#pragma once
#include <memory>
#include <string>

#include "model/descriptor.h"
#include "model/tensor_source.h"
#include "model/weights.h"

namespace ember {

namespace gguf { class Reader; }
struct LoadedFiles;

class Model {
 public:
  static std::unique_ptr<Model> load(const std::string& path);
  // A model from files already read (load_gguf_reader: a GGUF in memory, for
  // the fuzzers); `path` names it in error messages.
  static std::unique_ptr<Model> from_files(LoadedFiles files, const std::string& path);

  const ModelDesc& desc() const { return desc_; }
  const Weights& weights() const { return weights_; }
  // The tensors by their GGUF names (kept alive for the model's lifetime).
  const TensorSource& source() const { return *source_; }
  const std::string& path() const { return path_; }
  // The GGUF file's metadata (tokenizer, chat template); null for a Hugging Face folder.
  const gguf::Reader* gguf() const { return gguf_.get(); }

  // Bytes a batch-1 decode step reads from weights (see shared/models.md):
  // all attention and dense matrices, the k active experts, router, output head,
  // one embedding row; KV cache not included.
  uint64_t weight_bytes_per_token() const;
  uint64_t total_weight_bytes() const;

 private:
  Model() = default;
  std::string path_;
  ModelDesc desc_;
  Weights weights_;
  std::unique_ptr<TensorSource> source_;
  std::shared_ptr<const gguf::Reader> gguf_;
};

}  // namespace ember
