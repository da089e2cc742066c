#include "model/loaders.h"

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "gguf/gguf.h"
#include "model/architectures.h"
#include "model/hf_names.h"
#include "model/weights.h"
#include "quant/quant.h"
#include "safetensors/safetensors.h"
#include "util/error.h"
#include "util/fp16.h"
#include "util/json_bounded.h"
#include "util/limits.h"
#include "util/text_file.h"

namespace ember {

LoadedFiles load_gguf_files(const std::string& path) {
  return load_gguf_reader(std::make_shared<gguf::Reader>(gguf::Reader::open(path)));
}

LoadedFiles load_gguf_reader(std::shared_ptr<const gguf::Reader> reader) {
  const std::string& path = reader->path();
  LoadedFiles out;
  out.desc = desc_from_gguf(*reader);
  out.spec = &arch_by_name(out.desc.arch);
  out.source = std::make_unique<TensorSource>();
  for (const auto& t : reader->tensors()) {
    SourceTensor s;
    s.name = t.name;
    s.type = t.type;
    s.ne = t.ne;
    if (t.ne.size() == 3) {  // stacked experts: one part per expert
      // One pointer per expert is made here: bound the count first, so dimensions
      // such as [0, 1, 2^40] (zero bytes of data) cannot ask for 2^40 of them.
      if (t.ne[2] > limits::kMaxExperts)
        throw Error(path + ": tensor '" + t.name + "' stacks " + std::to_string(t.ne[2]) + " experts, more than the limit of " +
                    std::to_string(limits::kMaxExperts));
      s.part_bytes = t.nbytes / size_t(t.ne[2] > 0 ? t.ne[2] : 1);
      for (int64_t e = 0; e < t.ne[2]; ++e) s.parts.push_back(t.data + size_t(e) * s.part_bytes);
    } else {
      s.part_bytes = t.nbytes;
      s.parts.push_back(t.data);
    }
    out.source->add(std::move(s));
  }
  out.source->keep_alive(reader);
  out.gguf = reader;
  return out;
}

namespace {

GgmlType type_for_dtype(const std::string& dtype, const std::string& tensor) {
  if (dtype == "F32") return GgmlType::F32;
  if (dtype == "F16") return GgmlType::F16;
  if (dtype == "BF16") return GgmlType::BF16;
  throw Error("safetensors tensor '" + tensor + "': dtype " + dtype + " is not supported (F32, F16, BF16 are)");
}

}  // namespace

LoadedFiles load_hf_folder(const std::string& dir) {
  namespace fs = std::filesystem;
  const fs::path config_path = fs::path(dir) / "config.json";
  const nlohmann::json config =
      parse_json(read_text_file(config_path.string(), limits::kMaxJsonFileBytes), config_path.string());
  LoadedFiles out;
  out.desc = desc_from_hf_config(config, &out.spec);
  const ArchSpec& spec = *out.spec;

  auto folder = std::make_shared<safetensors::Folder>(safetensors::Folder::open(dir));
  out.source = std::make_unique<TensorSource>();
  // Experts arrive one tensor each; gather them into one 3-D tensor per projection.
  std::map<std::string, std::map<int, const safetensors::Tensor*>> experts;
  for (const auto& t : folder->tensors()) {
    auto g = gguf_name_for_hf(t.name, spec);
    if (!g) continue;
    if (t.shape.empty() || t.shape.size() > 2)
      throw Error(dir + ": tensor '" + t.name + "' has " + std::to_string(t.shape.size()) + " dimensions, expected 1 or 2");
    if (g->expert >= 0) {
      if (t.shape.size() != 2)
        throw Error(dir + ": expert tensor '" + t.name + "' has " + std::to_string(t.shape.size()) +
                    " dimensions, expected 2");
      if (g->expert >= limits::kMaxExperts)
        throw Error(dir + ": tensor '" + t.name + "' is expert " + std::to_string(g->expert) +
                    ", beyond the limit of " + std::to_string(limits::kMaxExperts) + " experts");
      experts[g->name][g->expert] = &t;
      continue;
    }
    SourceTensor s;
    s.name = g->name;
    s.type = type_for_dtype(t.dtype, t.name);
    s.ne.assign(t.shape.rbegin(), t.shape.rend());
    s.part_bytes = t.nbytes;
    const bool is_norm = g->name.size() >= 11 && g->name.compare(g->name.size() - 11, 11, "norm.weight") == 0;
    if (is_norm && spec.hf_norm_plus_one) {
      // Stored as w, applied as (1 + w): keep 1 + w in float, as GGUF files do.
      const int64_t n = t.nbytes / type_info(s.type).block_bytes;
      std::vector<float> tmp(static_cast<size_t>(n));
      quant::dequantize_row(s.type, t.data, tmp.data(), n);
      auto* dst = reinterpret_cast<float*>(out.source->make_owned(size_t(n) * 4));
      for (int64_t i = 0; i < n; ++i) dst[i] = 1.0f + tmp[size_t(i)];
      s.type = GgmlType::F32;
      s.part_bytes = size_t(n) * 4;
      s.parts.push_back(reinterpret_cast<const uint8_t*>(dst));
    } else {
      s.parts.push_back(t.data);
    }
    out.source->add(std::move(s));
  }
  for (auto& [name, by_index] : experts) {
    const safetensors::Tensor* first = by_index.begin()->second;
    SourceTensor s;
    s.name = name;
    s.type = type_for_dtype(first->dtype, first->name);
    s.ne = {first->shape[1], first->shape[0], int64_t(by_index.size())};
    s.part_bytes = first->nbytes;
    int expect = 0;
    for (auto& [idx, t] : by_index) {
      if (idx != expect++) throw Error(dir + ": expert " + std::to_string(expect - 1) + " of " + name + " is missing");
      if (t->shape != first->shape || t->dtype != first->dtype)
        throw Error(dir + ": tensor '" + t->name + "' differs in shape or dtype from expert 0");
      s.parts.push_back(t->data);
    }
    out.source->add(std::move(s));
  }
  out.source->keep_alive(folder);
  // Tied embeddings: no separate output head in the folder.
  if (!out.source->find("output.weight")) out.desc.tied_embeddings = true;
  ModelDesc check = out.desc;  // the config must describe these tensors (convert relies on it)
  bind_weights(check, *out.source, dir);
  return out;
}

}  // namespace ember
