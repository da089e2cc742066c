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

LoadedFiles load_gguf_files(const std::string& path);
LoadedFiles load_hf_folder(const std::string& dir);

}  // namespace ember
