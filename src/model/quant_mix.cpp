#include "model/quant_mix.h"

#include "quant/quant.h"
#include "util/error.h"
#include "util/find_named.h"

namespace ember {

const std::vector<QuantMix>& quant_mixes() {
  using T = GgmlType;
  static const std::vector<QuantMix> mixes = {
      {"F32", T::F32, T::F32, T::F32, T::F32},
      {"F16", T::F16, T::F16, T::F16, T::F16},
      {"BF16", T::BF16, T::BF16, T::BF16, T::BF16},
      {"Q8_0", T::Q8_0, T::Q8_0, T::Q8_0, T::Q8_0},
      // The K and IQ mixes keep the output head (the embedding too, when tied) at
      // Q6_K, as other GGUF quantisers' medium mixes do.
      {"Q6_K", T::Q6_K, T::Q6_K, T::Q6_K, T::Q6_K},
      {"Q5_K", T::Q5_K, T::Q6_K, T::Q5_K, T::Q5_K},
      {"Q4_K", T::Q4_K, T::Q6_K, T::Q4_K, T::Q4_K},
      {"IQ4_XS", T::IQ4_XS, T::Q6_K, T::IQ4_XS, T::IQ4_XS},
      {"Q3_K", T::Q3_K, T::Q6_K, T::Q3_K, T::Q3_K},
      {"IQ3_XXS", T::IQ3_XXS, T::Q6_K, T::IQ3_XXS, T::IQ3_XXS},
      {"Q6K-IQ3XXS", T::Q6_K, T::Q6_K, T::Q6_K, T::IQ3_XXS},
  };
  return mixes;
}

const QuantMix& quant_mix(const std::string& name) { return find_named(quant_mixes(), name, "quant mix"); }

static bool ends_with(const std::string& s, const char* suffix) {
  const std::string x(suffix);
  return s.size() >= x.size() && s.compare(s.size() - x.size(), x.size(), x) == 0;
}

TensorRole tensor_role(const std::string& n, bool tied_embeddings) {
  if (n == "token_embd.weight") return tied_embeddings ? TensorRole::Output : TensorRole::Embedding;
  if (n == "output.weight") return TensorRole::Output;
  if (n == "rope_freqs.weight") return TensorRole::RopeFreqs;
  if (ends_with(n, "norm.weight")) return TensorRole::Norm;
  if (ends_with(n, ".bias")) return TensorRole::Bias;
  if (ends_with(n, "ffn_gate_inp.weight")) return TensorRole::Router;
  if (ends_with(n, "_exps.weight")) return TensorRole::Expert;
  return TensorRole::Linear;
}

GgmlType tensor_type(const QuantMix& mix, TensorRole role, int64_t row_length) {
  GgmlType t = GgmlType::F32;
  switch (role) {
    case TensorRole::Embedding: t = mix.embedding; break;
    case TensorRole::Output: t = mix.output; break;
    case TensorRole::Linear: t = mix.linear; break;
    case TensorRole::Expert: t = mix.expert; break;
    case TensorRole::Norm: case TensorRole::Router: case TensorRole::Bias: case TensorRole::RopeFreqs:
      return GgmlType::F32;
  }
  for (GgmlType c : {t, GgmlType::Q8_0, GgmlType::F16}) {
    if (row_length % type_info(c).block_elems != 0) continue;
    if (c != GgmlType::F32 && !quant::can_quantize(c))
      throw Error(std::string("mix ") + mix.name + ": ember reads " + type_name(c) +
                  " but cannot write it yet (no quantiser for it)");
    return c;
  }
  return GgmlType::F32;
}

}  // namespace ember
