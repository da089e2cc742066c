// `ember convert`: a Hugging Face model folder, or a GGUF file (requantising, e.g.
// F16 -> Q4_K) -> a standard GGUF file (same architecture names, keys and tensor
// names other GGUF engines use).
#pragma once
#include <string>

#include "util/thread_pool.h"

namespace ember {

void convert_hf_to_gguf(const std::string& dir, const std::string& out_path, const std::string& mix,
                        ThreadPool& pool, bool progress);
// Every tensor of a GGUF file dequantised and written again in `mix` (the
// tokenizer and the model's metadata carried over).
void convert_gguf_to_gguf(const std::string& in_path, const std::string& out_path, const std::string& mix,
                          ThreadPool& pool, bool progress);
// A folder goes to convert_hf_to_gguf, a file to convert_gguf_to_gguf.
void convert_to_gguf(const std::string& input, const std::string& out_path, const std::string& mix,
                     ThreadPool& pool, bool progress);

}  // namespace ember
