// Drafts from a request's predicted output (GenerationRequest::prediction,
// OpenAI's `prediction`): the client says what it expects the answer to be,
// typically a file an edit returns mostly unchanged. The answer is followed
// along the prediction; while the two agree, the prediction's next tokens
// are the draft. Where the answer leaves it (the edit itself), the last few
// tokens of the sequence are looked up in the prediction to find where the
// answer has come back to it, nearest after where it left first (within 4,096
// tokens either way). A draft is
// at most as long as the run of answer tokens that followed the prediction
// since it was last found (at least 2): an exact prediction soon drafts in
// full, while a match found by chance in an unrelated one costs a few tokens.
//
// The engine verifies these drafts like any other (engine/drafter.h), so the
// answer is the model's own, bit for bit; a good prediction only makes it come
// faster.
#pragma once
#include <cstdint>
#include <span>

namespace ember {

// Where a sequence's answer stands along its prediction.
struct PredictionCursor {
  int64_t next = 0;  // the prediction's position the answer is expected to take next; -1: lost
  int64_t last = 0;  // where it was last known to stand (a lost answer is looked for from here on)
  int64_t seen = 0;  // the sequence's tokens already followed
  int64_t run = 0;   // answer tokens on the prediction in a row (the match that found it counted)
};

// Follows the sequence's tokens added since the last call (answer tokens only:
// those from n_prompt on) along the prediction, finds the answer again where it
// was lost, and writes the draft (at most max_tokens of the prediction's next
// tokens) to out. Returns its length, 0 when the answer is not on the prediction.
int draft_from_prediction(std::span<const int32_t> prediction, std::span<const int32_t> tokens, int64_t n_prompt,
                          PredictionCursor& c, int max_tokens, int32_t* out);

}  // namespace ember
