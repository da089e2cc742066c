// What each scenario of ../shared/bench.md sends: prompt lengths, tokens to
// generate, client counts, rounds; the full sizes, or --quick's reduced ones,
// capped so every request fits the target's context.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace ember::bench {

inline const std::vector<std::string> kAllScenarios = {"S1", "S2", "S3", "S4", "S5", "S6", "S7", "S8", "S9"};
// What runs unless --scenarios says: S9 compares two servers (with and
// without speculative decoding), so it is asked for by name.
inline const std::vector<std::string> kDefaultScenarios = {"S1", "S2", "S3", "S4", "S5", "S6", "S7", "S8"};

struct PlanRequest {
  std::vector<std::string> scenarios = kDefaultScenarios;
  int rounds = 0;            // 0: 3, or 1 with quick
  std::vector<int> clients;  // empty: 1..64, or 1,2,4 with quick
  bool quick = false;
};

struct Plan {
  std::vector<std::string> scenarios;  // as asked, in S1..S9 order
  std::vector<std::string> run;        // the ones that send requests (S6 and S7 ride on others)
  int rounds = 3;
  int64_t context = 0;  // the target's context (the smallest of the targets')
  // S1 (and S6): one stream, a short prompt, greedy.
  int64_t short_prompt = 44;
  int decode_tokens = 256;
  // S2: clients at once, each its own prompt.
  std::vector<int> clients;
  int s2_tokens = 256;
  // S3: cold prefill (one token generated).
  std::vector<int64_t> s3_lengths;
  // S4, S5: documents, a question, tokens generated per turn.
  int64_t doc_tokens = 8022;
  int64_t question_tokens = 40;
  int session_tokens = 32;
  // S8: decode after a long context.
  std::vector<int64_t> s8_contexts;
  int s8_tokens = 64;
  // S9: a code-editing prompt (a file of this many tokens to repeat with a change) and S1's prompt.
  int64_t s9_file_tokens = 400;
  std::vector<std::string> notes;  // what capping changed

  bool has(const std::string& s) const;     // asked for
  bool runs(const std::string& s) const;    // sends requests for it
};

// The sizes for a target whose context is `context` tokens (prompt + generated).
Plan make_plan(const PlanRequest& req, int64_t context);

// The context a server needs for every request of the uncapped plan.
int64_t context_needed(const PlanRequest& req);

// "S1,s3" -> {"S1", "S3"}; throws ember::Error for an unknown id.
std::vector<std::string> parse_scenarios(const std::string& list);

}  // namespace ember::bench
