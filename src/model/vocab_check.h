// The model's embedding and its tokenizer must agree on the vocabulary.
#pragma once
#include "model/descriptor.h"
#include "tokenizer/tokenizer.h"

namespace ember {

// The number of ids the sampler may choose (Sampler's valid_vocab): the
// tokenizer's size. An embedding with more rows than the tokenizer has tokens
// is normal (Qwen checkpoints pad to a multiple of 128) and those rows are
// masked; a tokenizer with more tokens than the embedding has rows would feed
// ids the model cannot embed, so it is refused (ember::Error naming both sizes).
int sampling_vocab(const ModelDesc& d, const Tokenizer& tok);

}  // namespace ember
