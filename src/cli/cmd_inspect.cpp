// `ember inspect FILE`: metadata, tensors, and the weight bytes a decoded token reads.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <map>

#include "cli/commands.h"
#include "gguf/gguf.h"
#include "model/model.h"

namespace ember::cli {

void add_inspect(CLI::App& app) {
  auto* cmd = app.add_subcommand("inspect", "Show a model file's metadata, tensors and bytes per token");
  static std::string path;
  static bool all_tensors = false;
  cmd->add_option("file", path, "GGUF file or Hugging Face folder")->required();
  cmd->add_flag("--tensors", all_tensors, "List every tensor (default: the first 20)");
  cmd->callback([] {
    auto model = Model::load(path);
    const ModelDesc& d = model->desc();
    if (const gguf::Reader* r = model->gguf()) {
      std::printf("file: %s (GGUF v%u, %zu bytes, alignment %llu)\n", path.c_str(), r->version(), r->file_size(),
                  (unsigned long long)r->alignment());
      std::printf("metadata (%zu keys):\n", r->metadata().size());
      for (const auto& [k, v] : r->metadata()) std::printf("  %-44s %s\n", k.c_str(), v.to_display(6).c_str());
    } else {
      std::printf("folder: %s (Hugging Face safetensors)\n", path.c_str());
    }
    std::printf("model: %s, %d layers, hidden %d, heads %d/%d x %d, ffn %d, vocab %d", d.arch.c_str(), d.n_layers,
                d.hidden, d.n_heads, d.n_kv_heads, d.head_dim, d.ffn, d.vocab);
    if (d.n_experts) std::printf(", experts %d (top-%d) x %d", d.n_experts, d.n_experts_used, d.expert_ffn);
    std::printf("%s\n", d.tied_embeddings ? ", tied embeddings" : "");
    const auto& ts = model->source().tensors();
    std::map<std::string, std::pair<int, uint64_t>> by_type;
    std::printf("tensors (%zu):\n", ts.size());
    size_t shown = 0;
    for (const auto& t : ts) {
      auto& bt = by_type[type_name(t.type)];
      bt.first++;
      bt.second += t.nbytes();
      if (!all_tensors && shown >= 20) continue;
      ++shown;
      std::string shape;
      for (size_t i = 0; i < t.ne.size(); ++i) shape += (i ? " x " : "") + std::to_string(t.ne[i]);
      std::printf("  %-36s %-8s %-22s %12zu bytes\n", t.name.c_str(), type_name(t.type), shape.c_str(), t.nbytes());
    }
    if (shown < ts.size()) std::printf("  ... %zu more (--tensors lists all)\n", ts.size() - shown);
    std::printf("by type:\n");
    for (const auto& [name, v] : by_type)
      std::printf("  %-8s %5d tensors %14llu bytes\n", name.c_str(), v.first, (unsigned long long)v.second);
    std::printf("total weight bytes:       %llu (%.3f GB)\n", (unsigned long long)model->total_weight_bytes(),
                model->total_weight_bytes() / 1e9);
    std::printf("weight bytes per token:   %llu (%.3f GB; batch-1 decode, KV cache not included)\n",
                (unsigned long long)model->weight_bytes_per_token(), model->weight_bytes_per_token() / 1e9);
  });
}

}  // namespace ember::cli
