// `ember batch`: offline batched generation from a JSONL file.
//
// Every line is a request, {"id": ..., "prompt": "text"} or {"id": ..., "ids": [...]},
// with optional max_tokens, temperature, top_k, top_p, min_p, seed and stop.
// All requests go to the engine at once and run up to --parallel at a time;
// each result is written as one JSON line when it completes its turn in the
// file order (the engine runs ahead meanwhile). A malformed line gets an error
// object and the rest still run.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/engine_flags.h"
#include "cli/flag_checks.h"
#include "cli/model_sampling_flags.h"
#include "engine/sampling_validation.h"
#include "util/error.h"

namespace ember::cli {

namespace {

using json = nlohmann::json;

struct BatchOptions {
  EngineFlags engine;
  std::string in, out;
  int max_tokens = 128;
  SamplingParams sp;
};

// One input line as a request; throws ember::Error naming what is wrong.
GenerationRequest parse_line(const json& j, const BatchOptions& o, const LoadedEngine& e) {
  if (!j.is_object()) throw Error("a line must be a JSON object");
  GenerationRequest r;
  r.max_tokens = o.max_tokens;
  r.sampling = o.sp;
  const bool has_prompt = j.contains("prompt"), has_ids = j.contains("ids");
  if (has_prompt == has_ids) throw Error("give exactly one of \"prompt\" (text) and \"ids\" (token ids)");
  if (has_ids) {
    const json& ids = j["ids"];
    if (!ids.is_array()) throw Error("\"ids\" must be an array of token ids");
    for (const json& v : ids) {
      if (!v.is_number_integer()) throw Error("\"ids\" must hold integers");
      const int64_t id = v.get<int64_t>();
      if (id < 0 || id > INT32_MAX) throw Error("token id " + std::to_string(id) + " is out of range");
      r.prompt.push_back(int32_t(id));
    }
  } else {
    if (!j["prompt"].is_string()) throw Error("\"prompt\" must be a string");
    if (!e.tok) throw Error("the model carries no tokenizer: give \"ids\"");
    r.prompt = e.tok->encode(j["prompt"].get<std::string>(), /*add_special=*/true, /*parse_special=*/true);
  }
  auto number = [&](const char* key, auto& dst) {
    if (!j.contains(key)) return;
    if (!j[key].is_number()) throw Error(std::string("\"") + key + "\" must be a number");
    dst = j[key].get<std::remove_reference_t<decltype(dst)>>();
  };
  number("max_tokens", r.max_tokens);
  check_integer("max_tokens", r.max_tokens, 1, INT32_MAX);
  number("temperature", r.sampling.temperature);
  number("top_k", r.sampling.top_k);
  number("top_p", r.sampling.top_p);
  number("min_p", r.sampling.min_p);
  if (j.contains("seed")) {
    if (!j["seed"].is_number_integer()) throw Error("\"seed\" must be an integer");
    r.sampling.seed = j["seed"].get<uint64_t>();
  }
  if (j.contains("stop")) {
    const json& s = j["stop"];
    if (s.is_string()) {
      r.stop.push_back(s.get<std::string>());
    } else if (s.is_array()) {
      for (const json& v : s) {
        if (!v.is_string()) throw Error("\"stop\" must be a string or an array of strings");
        r.stop.push_back(v.get<std::string>());
      }
    } else {
      throw Error("\"stop\" must be a string or an array of strings");
    }
  }
  validate_sampling(r.sampling);
  return r;
}

void batch(BatchOptions o, const CLI::App& cmd) {
  std::ifstream in(o.in);
  if (!in) throw Error("cannot open " + o.in);
  std::FILE* out = o.out == "-" ? stdout : std::fopen(o.out.c_str(), "w");
  if (!out) throw Error("cannot write " + o.out);
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> closer(out == stdout ? nullptr : out, std::fclose);
  LoadedEngine e = load_engine(o.engine, /*default_kv_contexts=*/0);
  apply_model_sampling(cmd, *e.model, o.sp);  // a line's own fields still win

  struct Item {
    json id;
    std::shared_ptr<RequestStream> stream;
    std::string error;
  };
  std::vector<Item> items;
  std::string line;
  int64_t line_no = 0, n_failed = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    Item it;
    it.id = line_no;  // stands in for a missing id
    try {
      const json j = json::parse(line);
      if (j.is_object() && j.contains("id")) it.id = j["id"];
      it.stream = e.engine->submit(parse_line(j, o, e));
    } catch (const std::exception& ex) {
      it.error = "line " + std::to_string(line_no) + ": " + std::string(ex.what()).substr(0, 300);
    }
    items.push_back(std::move(it));
  }

  RequestUpdate u;
  for (Item& it : items) {
    json r = {{"id", it.id}};
    if (it.stream) {
      std::vector<int32_t> ids;
      std::string text;
      while (it.stream->next(u)) {
        ids.insert(ids.end(), u.tokens.begin(), u.tokens.end());
        text += u.text;
        if (u.finished) {
          r["ids"] = ids;
          r["text"] = text;
          r["prompt_tokens"] = u.prompt_tokens;
          r["cached_tokens"] = u.cached_tokens;
          r["finish_reason"] = finish_reason_name(u.reason);
          if (u.reason == FinishReason::Error) it.error = u.error;
        }
      }
    }
    if (!it.error.empty()) {
      r["error"] = it.error;
      ++n_failed;
    }
    const std::string s = r.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
    std::fwrite(s.data(), 1, s.size(), out);
    std::fflush(out);
  }
  std::fprintf(stderr, "[%zu requests, %lld failed]\n", items.size(), (long long)n_failed);
}

}  // namespace

void add_batch(CLI::App& app) {
  auto* cmd = app.add_subcommand("batch", "Generate for every request of a JSONL file, many at once");
  static BatchOptions o;
  o.engine.parallel = 8;
  add_engine_flags(cmd, o.engine);
  cmd->add_option("--in", o.in, "Input JSONL: {\"id\", \"prompt\" | \"ids\", max_tokens?, temperature?, top_k?, top_p?, min_p?, seed?, stop?}")->required();
  cmd->add_option("--out", o.out, "Output JSONL ('-': standard output)")->required();
  cmd->add_option("--parallel", o.engine.parallel, "Requests running at once (1: one at a time, in file order)");
  cmd->add_option("-n,--max-tokens", o.max_tokens, "Default max_tokens for lines without one")
      ->check(integer_in("max tokens", 1, INT32_MAX));
  add_sampling_flags(cmd, o.sp);
  cmd->callback([cmd] { batch(o, *cmd); });
}

}  // namespace ember::cli
