// Hugging Face tensor names -> GGUF tensor names.
#pragma once
#include <optional>
#include <string>

namespace ember {

struct ArchSpec;

struct GgufName {
  std::string name;  // e.g. "blk.3.attn_q.weight", or "blk.3.ffn_gate_exps.weight" for an expert
  int expert = -1;   // expert index for per-expert HF tensors
};

// nullopt for tensors ember does not use (e.g. rotary caches some checkpoints carry).
std::optional<GgufName> gguf_name_for_hf(const std::string& hf_name, const ArchSpec& spec);

}  // namespace ember
