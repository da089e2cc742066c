// StreamDecoder: decodes a window of ids with the full decoder chain and returns
// only the part of the text that later ids cannot change:
//  - a trailing U+FFFD that stands for an incomplete UTF-8 sequence is held back;
//  - with clean_up_tokenization_spaces, text is cut only where no space lies in
//    the 3 bytes before the cut: every clean-up rule is a space followed by at
//    most 3 bytes, so no rule can match across such a cut and cleaning the pieces
//    separately equals cleaning the whole.
// When everything decoded so far has been returned, the window restarts; the
// decoders that act only at the very start (Strip after Fuse, Metaspace) are told
// the new window is a continuation.
#include "tokenizer/impl.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace ember {

StreamDecoder::StreamDecoder(const Tokenizer& tok, bool skip_special) : tok_(&tok), skip_special_(skip_special) {}

void StreamDecoder::reset() {
  run_.clear();
  run_text_.clear();
  emitted_ = 0;
  first_ = true;
}

std::string StreamDecoder::feed(int32_t id) {
  if (id < 0 || id >= tok_->vocab_size())
    throw Error("StreamDecoder: token id " + std::to_string(id) + " is outside the vocabulary");
  if (skip_special_ && tok_->is_special(id)) return "";
  run_.push_back(id);
  return take_ready(false);
}

std::string StreamDecoder::finish() {
  std::string out = take_ready(true);
  reset();
  return out;
}

std::string StreamDecoder::take_ready(bool at_end) {
  const Tokenizer::Impl& im = tok_->impl();
  const bool clean = im.spec.clean_up_spaces;
  DecodeResult r = im.decode_raw(run_, !first_);
  // run_text_ holds up to 3 bytes of text from before this window (clean-up context).
  const size_t ctx = run_text_.size();
  std::string all = run_text_ + r.text;
  size_t cut = all.size();
  if (!at_end) {
    if (r.pending_tail) cut -= 3;  // the U+FFFD of an unfinished sequence
    size_t floor = ctx + emitted_;
    auto safe = [&](size_t p) {
      if (p < all.size() && (uint8_t(all[p]) & 0xC0) == 0x80) return false;  // inside a character
      if (!clean) return true;
      for (size_t k = 1; k <= 3 && k <= p; ++k)
        if (all[p - k] == ' ') return false;
      return true;
    };
    while (cut > floor && !safe(cut)) --cut;
    if (cut < floor) cut = floor;
  }
  std::string chunk = all.substr(ctx + emitted_, cut - (ctx + emitted_));
  if (clean) chunk = clean_up_tokenization(std::move(chunk));
  emitted_ = cut - ctx;
  if (emitted_ == r.text.size() && !r.pending_tail && !run_.empty()) {
    // Everything so far is final: start a new window, keeping clean-up context.
    run_text_ = all.size() > 3 ? all.substr(all.size() - 3) : all;
    run_.clear();
    emitted_ = 0;
    first_ = false;
  }
  return chunk;
}

}  // namespace ember
