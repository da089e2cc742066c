#include "model/vocab_check.h"

#include <string>

#include "util/error.h"

namespace ember {

int sampling_vocab(const ModelDesc& d, const Tokenizer& tok) {
  if (tok.vocab_size() > d.vocab)
    throw Error("the tokenizer has " + std::to_string(tok.vocab_size()) + " tokens but the model's embedding only " +
                std::to_string(d.vocab) + " rows: they do not belong together");
  return tok.vocab_size();
}

}  // namespace ember
