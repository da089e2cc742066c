// Hugging Face safetensors: a hardened reader for single files and sharded
// model folders (model.safetensors.index.json + its weight_map), with the
// tensor data read straight from memory mappings.
//
// A safetensors file is: uint64 header length N (little-endian), N bytes of
// JSON mapping each tensor name to {dtype, shape, data_offsets: [begin, end]}
// (plus an optional "__metadata__" object of strings), then the data section;
// offsets are relative to the start of the data section.
//
// Every length, offset, shape and dtype is checked against the file; a corrupt
// file yields an ember::Error naming the file, the tensor and the problem.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "util/mapped_file.h"

namespace ember::safetensors {

struct Tensor {
  std::string name;
  std::string dtype;           // "F32", "F16", "BF16", "F64", "I32", "I64", "U8", "BOOL", ...
  std::vector<int64_t> shape;  // as stored: slowest-varying first (the HF [out, in] for a matrix)
  const uint8_t* data = nullptr;  // into the mapping (or the caller's buffer)
  size_t nbytes = 0;
  std::string file;            // the file that holds it (for error messages)
  int64_t n_elements() const;
};

// Bytes per element of a dtype name, or 0 when the dtype is unknown.
size_t dtype_size(std::string_view dtype);

class Folder {
 public:
  // A directory (model.safetensors.index.json, else model.safetensors), a
  // .safetensors file, or an .index.json file. Throws ember::Error.
  static Folder open(const std::string& dir_or_file);
  // Parses one safetensors file held in memory that the caller keeps alive
  // (used by the fuzzer and tests).
  static Folder from_memory(const uint8_t* data, size_t size, std::string name);

  const Tensor* find(std::string_view name) const;
  const std::vector<Tensor>& tensors() const { return tensors_; }
  // "__metadata__" entries of all files (e.g. {"format": "pt"}).
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

 private:
  void add_file(const uint8_t* data, size_t size, const std::string& name);
  std::vector<std::shared_ptr<MappedFile>> files_;
  std::vector<Tensor> tensors_;
  std::unordered_map<std::string, size_t> index_;
  std::map<std::string, std::string> metadata_;
};

}  // namespace ember::safetensors
