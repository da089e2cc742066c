// The model as plain data.
//
// Everything that distinguishes one architecture from another (norm placement,
// activation, RoPE pairing and bases, q/k norms, biases, sliding windows,
// soft-caps, embedding scale, MoE layout and routing order) is a field here.
// The forward passes read these fields; they never look at the architecture's
// name, which is kept only for messages.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace ember {

enum class Activation { SiLU, GeluTanh };

// How RoPE pairs the dimensions of a head.
enum class RopePairing {
  Adjacent,    // (x[2i], x[2i+1]): GGUF `llama` files, whose Q/K rows are permuted for it
  SplitHalves  // (x[i], x[i + d/2]): Hugging Face code, GGUF qwen*/gemma* files
};

// How router logits become expert weights.
enum class Routing {
  SoftmaxTopK,  // softmax over all experts, keep the top k (optionally renormalise them): Qwen-MoE, Mixtral-style order variants
  TopKSoftmax,  // keep the top k logits, softmax over those k
  SigmoidTopK,  // sigmoid per expert, keep the top k (optionally renormalise)
};

struct LayerDesc {
  bool moe = false;         // FFN is a mixture of experts (else dense)
  int sliding_window = 0;   // attend to at most this many most recent positions (self included); 0: all
  float rope_base = 10000;  // θ of this layer's RoPE
};

struct ModelDesc {
  std::string arch;  // architecture name as in GGUF ("llama", "qwen3moe", ...): messages only

  int n_layers = 0;
  int hidden = 0;
  int n_heads = 0;
  int n_kv_heads = 0;
  int head_dim = 0;
  int ffn = 0;  // dense FFN width
  int vocab = 0;
  int max_context = 4096;

  float norm_eps = 1e-5f;
  Activation activation = Activation::SiLU;
  RopePairing rope_pairing = RopePairing::SplitHalves;
  std::vector<float> rope_freq_factors;  // per frequency divisor (Llama 3 long-context scaling); empty: none

  bool qkv_bias = false;
  bool qk_norm = false;         // RMSNorm over each q and k head (Qwen3, Gemma 3)
  bool post_attn_norm = false;  // RMSNorm on the attention output before the residual add (Gemma 2/3)
  bool post_ffn_norm = false;   // same for the FFN output

  float embed_scale = 1.0f;     // token embeddings are multiplied by this (Gemma: sqrt(hidden))
  float attn_scale = 0.0f;      // q·k multiplier; 0: 1/sqrt(head_dim)
  float attn_softcap = 0.0f;    // attention logits -> c*tanh(x/c); 0: off
  float final_softcap = 0.0f;   // output logits likewise
  bool tied_embeddings = false; // output head is the token embedding matrix

  // Mixture of experts (layers with LayerDesc::moe).
  int n_experts = 0;
  int n_experts_used = 0;
  int expert_ffn = 0;
  Routing routing = Routing::SoftmaxTopK;
  bool norm_topk = false;  // renormalise the k kept weights to sum to 1

  std::vector<LayerDesc> layers;

  int q_dim() const { return n_heads * head_dim; }
  int kv_dim() const { return n_kv_heads * head_dim; }
  float attention_scale() const;
  // RoPE inverse frequencies of `layer`, head_dim / 2 of them: base^(-2i/head_dim),
  // divided by the per-frequency factors where the model has them. Every backend uses these.
  std::vector<double> rope_inverse_frequencies(int layer) const;
  void validate() const;  // throws ember::Error on inconsistent shapes
};

}  // namespace ember
