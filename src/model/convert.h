// `ember convert`: a Hugging Face model folder -> a standard GGUF file
// (same architecture names, keys and tensor names other GGUF engines use).
#pragma once
#include <string>

#include "util/thread_pool.h"

namespace ember {

void convert_hf_to_gguf(const std::string& dir, const std::string& out_path, const std::string& mix,
                        ThreadPool& pool, bool progress);

}  // namespace ember
