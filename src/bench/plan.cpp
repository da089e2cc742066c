#include "bench/plan.h"

#include <algorithm>
#include <sstream>

#include "util/error.h"

namespace ember::bench {

bool Plan::has(const std::string& s) const { return std::find(scenarios.begin(), scenarios.end(), s) != scenarios.end(); }
bool Plan::runs(const std::string& s) const { return std::find(run.begin(), run.end(), s) != run.end(); }

std::vector<std::string> parse_scenarios(const std::string& list) {
  std::vector<std::string> out;
  std::stringstream ss(list);
  std::string item;
  while (std::getline(ss, item, ',')) {
    for (char& c : item) c = char(std::toupper(static_cast<unsigned char>(c)));
    if (item.empty()) continue;
    if (std::find(kAllScenarios.begin(), kAllScenarios.end(), item) == kAllScenarios.end())
      throw Error("bench: unknown scenario '" + item + "' (S1..S9)");
    if (std::find(out.begin(), out.end(), item) == out.end()) out.push_back(item);
  }
  std::sort(out.begin(), out.end());
  if (out.empty()) throw Error("bench: --scenarios names none");
  return out;
}

namespace {

// Tokens of an S9 prompt around its file (the request to rewrite it, the
// answer's start) and a function's worth of overshoot: PromptMaker::edit.
constexpr int64_t kEditFraming = 120;

// Keeps the lengths that fit under `cap`; when some do not, `cap` itself ends the list.
std::vector<int64_t> cap_lengths(std::vector<int64_t> v, int64_t cap, const std::string& what, std::vector<std::string>& notes) {
  std::vector<int64_t> kept;
  bool dropped = false;
  for (int64_t x : v) (x <= cap ? kept.push_back(x) : void(dropped = true));
  if (dropped && cap > 0 && (kept.empty() || kept.back() < cap)) kept.push_back(cap);
  if (dropped) notes.push_back(what + " capped at " + std::to_string(cap) + " tokens by the context");
  return kept;
}

Plan base_plan(const PlanRequest& req) {
  Plan p;
  p.scenarios = req.scenarios;
  std::sort(p.scenarios.begin(), p.scenarios.end());
  for (const std::string& s : p.scenarios)
    if (s != "S6" && s != "S7") p.run.push_back(s);
  // S6 is measured during S1's decoding; S7 during whatever runs (S1 when nothing else does).
  if ((p.has("S6") || p.run.empty()) && !p.runs("S1")) p.run.insert(p.run.begin(), "S1");
  p.rounds = req.rounds > 0 ? req.rounds : (req.quick ? 1 : 3);
  p.clients = !req.clients.empty() ? req.clients : (req.quick ? std::vector<int>{1, 2, 4} : std::vector<int>{1, 2, 4, 8, 16, 32, 64});
  p.s3_lengths = {562, 1971, 8022, 9289, 32768, 131072};
  p.s8_contexts = {8192, 32768, 65536, 131072};
  if (req.quick) {
    // Everything an eighth (prompts) or less (tokens), at most 2048 tokens of context:
    // the `tiny` preset runs all scenarios on a CPU in seconds.
    p.decode_tokens = 32;
    p.s2_tokens = 16;
    for (auto& l : p.s3_lengths) l /= 8;
    for (auto& l : p.s8_contexts) l /= 8;
    p.doc_tokens = 8022 / 8;
    p.session_tokens = 8;
    p.s8_tokens = 16;
    p.s9_file_tokens = 100;
  }
  return p;
}

}  // namespace

int64_t context_needed(const PlanRequest& req) {
  const Plan p = base_plan(req);
  int64_t need = 0;
  if (p.runs("S1")) need = std::max(need, p.short_prompt + p.decode_tokens);
  if (p.runs("S2")) need = std::max(need, p.short_prompt + p.s2_tokens);
  if (p.runs("S3")) need = std::max(need, (req.quick ? 2048 : p.s3_lengths.back()) + 1);
  if (p.runs("S4") || p.runs("S5")) need = std::max(need, p.doc_tokens + p.question_tokens + p.session_tokens);
  if (p.runs("S8")) need = std::max(need, (req.quick ? 2048 : p.s8_contexts.back()) + p.s8_tokens);
  if (p.runs("S9")) need = std::max(need, p.s9_file_tokens + kEditFraming + p.decode_tokens);
  return need;
}

Plan make_plan(const PlanRequest& req, int64_t context) {
  Plan p = base_plan(req);
  p.context = context;
  const int64_t limit = req.quick ? std::min<int64_t>(context, 2048 + 64) : context;
  if (p.short_prompt + std::max(p.decode_tokens, p.s2_tokens) > context)
    throw Error("bench: the target's context (" + std::to_string(context) + " tokens) is too small for the scenarios");
  p.s3_lengths = cap_lengths(p.s3_lengths, std::min<int64_t>(limit - 1, req.quick ? 2048 : limit), "S3 prompts", p.notes);
  p.s8_contexts = cap_lengths(p.s8_contexts, std::min<int64_t>(limit - p.s8_tokens, req.quick ? 2048 : limit), "S8 contexts", p.notes);
  if (p.runs("S9") && p.s9_file_tokens + kEditFraming + p.decode_tokens > limit) {
    p.s9_file_tokens = std::max<int64_t>(16, limit - kEditFraming - p.decode_tokens);
    p.notes.push_back("S9's file cut to " + std::to_string(p.s9_file_tokens) + " tokens by the context");
  }
  if (p.doc_tokens + p.question_tokens + p.session_tokens > limit) {
    p.doc_tokens = limit - p.question_tokens - p.session_tokens;
    p.notes.push_back("S4/S5 documents cut to " + std::to_string(p.doc_tokens) + " tokens by the context");
  }
  return p;
}

}  // namespace ember::bench
