// Which tensor type each weight gets when ember writes a GGUF file.
#pragma once
#include <string>
#include <vector>

#include "quant/types.h"

namespace ember {

enum class TensorRole { Embedding, Output, Linear, Expert, Norm, Router, Bias, RopeFreqs };

struct QuantMix {
  std::string name;
  GgmlType linear, output, embedding, expert;
};

const std::vector<QuantMix>& quant_mixes();  // F32 F16 BF16 Q8_0 Q6_K Q5_K Q4_K IQ4_XS Q3_K IQ3_XXS Q6K-IQ3XXS
const QuantMix& quant_mix(const std::string& name);  // throws listing the mixes
// With tied embeddings, token_embd.weight is also the output head, read in full
// for every token, so it takes the head's type (as other GGUF quantisers do).
TensorRole tensor_role(const std::string& gguf_name, bool tied_embeddings);
// The type for a tensor of this role and row length; a quantised type whose
// block does not divide the row falls back to Q8_0, then F16 (as tiny test
// models with 64-wide rows need).
GgmlType tensor_type(const QuantMix& mix, TensorRole role, int64_t row_length);

}  // namespace ember
