#include "model/hf_names.h"

#include <regex>

#include "model/architectures.h"

namespace ember {

std::optional<GgufName> gguf_name_for_hf(const std::string& n, const ArchSpec& spec) {
  if (n == "model.embed_tokens.weight") return GgufName{"token_embd.weight"};
  if (n == "model.norm.weight") return GgufName{"output_norm.weight"};
  if (n == "lm_head.weight") return GgufName{"output.weight"};

  // std::regex matches recursively (stack depth grows with the input): names
  // longer than any real tensor's are not ours, so they never reach it.
  if (n.size() > 200) return std::nullopt;
  static const std::regex layer_re(R"(model\.layers\.(\d+)\.(.+))");
  std::smatch m;
  if (!std::regex_match(n, m, layer_re)) return std::nullopt;
  const std::string blk = "blk." + m[1].str() + ".";
  const std::string rest = m[2].str();

  static const std::regex expert_re(R"(mlp\.experts\.(\d+)\.(gate|up|down)_proj\.weight)");
  std::smatch e;
  if (std::regex_match(rest, e, expert_re))
    // At most 9 digits (the name length bound above leaves room for more): fits an int.
    return e[1].length() > 9 ? std::nullopt
                             : std::optional<GgufName>(GgufName{blk + "ffn_" + e[2].str() + "_exps.weight",
                                                                std::stoi(e[1].str())});

  struct Pair { const char* hf; const char* gguf; };
  static const Pair common[] = {
      {"input_layernorm.weight", "attn_norm.weight"},
      {"self_attn.q_proj.weight", "attn_q.weight"},
      {"self_attn.k_proj.weight", "attn_k.weight"},
      {"self_attn.v_proj.weight", "attn_v.weight"},
      {"self_attn.o_proj.weight", "attn_output.weight"},
      {"self_attn.q_proj.bias", "attn_q.bias"},
      {"self_attn.k_proj.bias", "attn_k.bias"},
      {"self_attn.v_proj.bias", "attn_v.bias"},
      {"self_attn.q_norm.weight", "attn_q_norm.weight"},
      {"self_attn.k_norm.weight", "attn_k_norm.weight"},
      {"mlp.gate_proj.weight", "ffn_gate.weight"},
      {"mlp.up_proj.weight", "ffn_up.weight"},
      {"mlp.down_proj.weight", "ffn_down.weight"},
      {"mlp.gate.weight", "ffn_gate_inp.weight"},
      {"pre_feedforward_layernorm.weight", "ffn_norm.weight"},
      {"post_feedforward_layernorm.weight", "post_ffw_norm.weight"},
  };
  for (const auto& p : common)
    if (rest == p.hf) return GgufName{blk + p.gguf};
  // With post-norms (Gemma) this norm follows attention; otherwise it precedes the FFN.
  if (rest == "post_attention_layernorm.weight")
    return GgufName{blk + (spec.post_norms ? "post_attention_norm.weight" : "ffn_norm.weight")};
  return std::nullopt;
}

}  // namespace ember
