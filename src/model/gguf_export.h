// Writing a model as a standard GGUF file, tensor by tensor, quantising rows
// in parallel and streaming each tensor to disk (used by convert and gen-model).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "model/descriptor.h"
#include "quant/types.h"
#include "util/thread_pool.h"

namespace ember {
namespace gguf { class Writer; }

struct ExportTensor {
  std::string name;
  std::vector<int64_t> ne;  // GGUF order
  GgmlType type;            // type written to the file
  // Produces rows [r0, r1) as floats (rows of ne[0]; all higher dimensions
  // flattened). Called concurrently for disjoint ranges.
  std::function<void(int64_t r0, int64_t r1, float* dst)> rows;
};

struct ExportOptions {
  std::string name;  // general.name
  bool progress = false;  // progress bar on stderr
  std::function<void(gguf::Writer&)> extra_metadata;  // e.g. the tokenizer
};

void export_gguf(const std::string& path, const ModelDesc& desc, const std::vector<ExportTensor>& tensors,
                 const ExportOptions& opt, ThreadPool& pool);

}  // namespace ember
