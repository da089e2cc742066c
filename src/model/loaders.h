// Turning files into (descriptor, tensors under GGUF names).
#pragma once
#include <memory>
#include <string>

#include "model/descriptor.h"
#include "model/tensor_source.h"

namespace ember {

struct ArchSpec;
namespace gguf { class Reader; }

struct LoadedFiles {
  ModelDesc desc;
  std::shared_ptr<const gguf::Reader> gguf;  // set when loaded from a GGUF file
  std::unique_ptr<TensorSource> source;
  const ArchSpec* spec = nullptr;
};

struct Weights;

LoadedFiles load_gguf_files(const std::string& path);
// Same for a parsed file (one in memory, for the fuzzer); `reader` is kept alive by the result.
LoadedFiles load_gguf_reader(std::shared_ptr<const gguf::Reader> reader);
// Also checks, as Model::load does, that the tensors have the shapes the
// config describes, so `convert` never writes a file that cannot load.
LoadedFiles load_hf_folder(const std::string& dir);

// Binds the tensors of `src` to the roles of the forward pass, checking every
// shape against `d`; fills d.vocab, d.rope_freq_factors and d.tied_embeddings
// and validates d. Throws ember::Error naming `path` and the tensor.
Weights bind_weights(ModelDesc& d, const TensorSource& src, const std::string& path);

}  // namespace ember
