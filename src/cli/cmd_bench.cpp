// `ember bench`: the scenarios of ../shared/bench.md over HTTP (docs/bench.md),
// against an `ember serve` child it starts (--model) or any OpenAI-compatible
// server (--url), side by side with a second one (--interleave). The work is
// in src/bench/; this file turns flags into a plan, targets and outputs.
// `ember bench roofline` prints the memory bandwidth the percentages use.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <unistd.h>

#include "backend/backend_factory.h"
#include "cli/flag_checks.h"
#include "bench/nvml.h"
#include "bench/plan.h"
#include "bench/plots.h"
#include "bench/proc_stats.h"
#include "bench/prompts.h"
#include "bench/report.h"
#include "bench/roofline.h"
#include "bench/scenarios.h"
#include "bench/server_child.h"
#include "bench_util.h"
#include "cli/commands.h"
#include "cli/engine_flags.h"
#include "gguf/gguf.h"
#include "model/model.h"
#include "util/error.h"

namespace ember::cli {

namespace {

using namespace ember::bench;
using json = nlohmann::json;

struct BenchFlags {
  std::string model, url, tokenizer, backend = "auto", serve_args, interleave, json_path, plot_dir, server_log;
  std::string draft_args = "--draft-tokens 4";  // S9's second server: the first's arguments and these
  std::string scenarios = "S1,S2,S3,S4,S5,S6,S7,S8", clients, api_key, name, interleave_name;  // S9 by name only
  std::string roofline = "auto";
  double bandwidth = 0, time_limit = 0;
  int rounds = 0;
  int64_t ctx = 0;
  int server_pid = 0;
  uint64_t seed = 0;
  bool quick = false, no_progress = false;
};

struct RooflineFlags {
  std::string device = "auto", model;
  int mib = 1024;
};

// What the bench knows of the model from its file, and its tokenizer.
struct LocalModel {
  ModelFacts facts;
  std::unique_ptr<Tokenizer> tok;
  int64_t max_context = 0;
};

// The values a flag is given in --serve-args, as "--flag VALUE" or
// "--flag=VALUE", in order ("" for a flag last with no value).
std::vector<std::string> serve_arg_values(const std::vector<std::string>& serve_args, const std::string& flag) {
  std::vector<std::string> v;
  for (size_t i = 0; i < serve_args.size(); ++i) {
    if (serve_args[i] == flag) v.push_back(i + 1 < serve_args.size() ? serve_args[i + 1] : "");
    else if (serve_args[i].rfind(flag + "=", 0) == 0) v.push_back(serve_args[i].substr(flag.size() + 1));
  }
  return v;
}

std::string kv_type_of(const std::vector<std::string>& serve_args) {
  const std::vector<std::string> v = serve_arg_values(serve_args, "--kv-type");
  return v.empty() ? "f16" : v.back();  // ember serve refuses it given twice
}

LocalModel load_local(const std::string& path, const std::string& kv_type) {
  LocalModel lm;
  auto model = Model::load(path);
  const ModelDesc& d = model->desc();
  lm.facts.file = path;
  lm.facts.name = std::filesystem::path(path).stem().string();
  if (const gguf::Reader* r = model->gguf()) lm.facts.name = r->get_string("general.name", lm.facts.name);
  std::map<std::string, uint64_t> by_type;
  for (const auto& t : model->source().tensors()) by_type[type_name(t.type)] += t.nbytes();
  std::string types;
  for (const auto& [name, bytes] : by_type) types += (types.empty() ? "" : " + ") + name;
  lm.facts.summary = d.arch + ", " + std::to_string(d.n_layers) + " layers, hidden " + std::to_string(d.hidden) +
                     (d.n_experts ? ", " + std::to_string(d.n_experts) + " experts (top-" + std::to_string(d.n_experts_used) + ")" : "") +
                     ", weights " + types + ", KV " + kv_type;
  lm.facts.weight_bytes_per_token = model->weight_bytes_per_token();
  lm.facts.kv_bytes_per_position = double(kv_block_bytes(d, 16, parse_kv_type(kv_type))) / 16.0;
  lm.max_context = d.max_context;
  if (auto t = tokenizer_of(*model)) lm.tok = std::make_unique<Tokenizer>(std::move(*t));
  return lm;
}

std::unique_ptr<Tokenizer> load_tokenizer(const std::string& path) {
  if (std::filesystem::path(path).extension() == ".gguf") {
    auto model = Model::load(path);
    if (auto t = tokenizer_of(*model)) return std::make_unique<Tokenizer>(std::move(*t));
    throw Error("bench: " + path + " carries no tokenizer");
  }
  return std::make_unique<Tokenizer>(Tokenizer::from_hf_path(path));
}

// The served model's name and context from GET /v1/models (vLLM: max_model_len;
// llama.cpp: meta.n_ctx_train; others: context_length).
void describe_server(Target& t, int64_t ctx_flag, int64_t fallback_ctx, Progress& progress) {
  const auto body = http_get(t.ep, "/v1/models");
  if (!body) throw Error("bench: " + t.ep.url + "/v1/models does not answer (is the server up? --api-key?)");
  const json j = json::parse(*body, nullptr, false);
  int64_t ctx = 0;
  if (j.is_object() && j.contains("data") && j["data"].is_array() && !j["data"].empty() && j["data"][0].is_object()) {
    const json& m = j["data"][0];
    if (t.ep.model.empty() && m.contains("id") && m["id"].is_string()) t.ep.model = m["id"].get<std::string>();
    for (const char* key : {"max_model_len", "context_length", "context_window"})
      if (m.contains(key) && m[key].is_number_integer()) ctx = m[key].get<int64_t>();
    if (!ctx && m.contains("meta") && m["meta"].is_object() && m["meta"].contains("n_ctx_train") &&
        m["meta"]["n_ctx_train"].is_number_integer())
      ctx = m["meta"]["n_ctx_train"].get<int64_t>();
  }
  if (ctx_flag > 0) ctx = ctx_flag;
  if (!ctx) {
    ctx = fallback_ctx > 0 ? fallback_ctx : 4096;
    progress.line(t.name + ": the server does not say its context; assuming " + std::to_string(ctx) + " tokens (--ctx sets it)");
  }
  t.context = ctx;
}

Target url_target(const std::string& url, const std::string& name, const BenchFlags& f, int64_t fallback_ctx, Progress& progress) {
  Target t;
  t.ep = {base_url(url), f.api_key, ""};
  t.name = name;
  if (t.name.empty()) {
    t.name = t.ep.url;
    if (const size_t s = t.name.find("://"); s != std::string::npos) t.name = t.name.substr(s + 3);
  }
  describe_server(t, f.ctx, fallback_ctx, progress);
  return t;
}

std::optional<Bandwidth> measure_roofline(const std::string& device, bool quick, Progress& progress, int mib = 0) {
  if (device == "off") return std::nullopt;
  const size_t bytes = size_t(mib > 0 ? mib : (quick ? 64 : 1024)) << 20;
  if (device == "cuda") {
    progress.status("roofline: device-to-device copy bandwidth");
    std::string why;
    if (auto b = gpu_copy_bandwidth(why, bytes)) return b;
    progress.line("roofline: no GPU bandwidth (" + why + "); using the CPU's");
  }
  progress.status("roofline: memcpy bandwidth on all cores");
  return cpu_copy_bandwidth(bytes, quick ? 3 : 7);
}

// This process's arguments, for the JSON.
std::vector<std::string> command_line() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::vector<std::string> args;
  std::string a;
  while (std::getline(in, a, '\0')) args.push_back(a);
  return args;
}

void run_bench(const BenchFlags& f, const std::vector<std::string>& argv) {
  if (f.model.empty() && f.url.empty()) throw Error("bench: --model FILE (ember serves it) or --url URL (a running server)");
  Progress progress(!f.no_progress);
  const std::vector<std::string> serve_args = split_args(f.serve_args);

  PlanRequest req;
  req.scenarios = parse_scenarios(f.scenarios);
  req.rounds = f.rounds;
  req.quick = f.quick;
  if (!f.clients.empty()) {
    try {
      req.clients = parse_list(f.clients);
    } catch (const std::exception&) {
      throw Error("bench: --clients takes counts like 1,2,4 (got '" + f.clients + "')");
    }
  }
  for (int c : req.clients)
    if (c < 1 || c > 1024) throw Error("bench: --clients must be between 1 and 1024");

  // The model file: facts for the roofline and the tokenizer for the prompts.
  LocalModel local;
  if (!f.model.empty()) {
    progress.status("reading " + f.model);
    local = load_local(f.model, kv_type_of(serve_args));
  }
  std::unique_ptr<Tokenizer> tok = std::move(local.tok);
  if (!f.tokenizer.empty()) tok = load_tokenizer(f.tokenizer);

  // The roofline first, while nothing else runs.
  std::string device = f.roofline;
  if (device == "auto") {
    if (f.url.empty()) device = resolve_backend_kind(f.backend);
    else device = Nvml::get().available() ? "cuda" : "cpu";
  }
  std::optional<Bandwidth> bw;
  if (f.bandwidth > 0) bw = Bandwidth{device == "off" ? "given" : device, f.bandwidth, "given with --bandwidth"};
  else bw = measure_roofline(device, f.quick, progress);
  if (bw) progress.line("roofline: " + std::to_string(int(bw->gbs)) + " GB/s (" + bw->note + ")");

  // The servers.
  std::vector<std::unique_ptr<ServerChild>> children;  // the embers started here
  std::vector<Target> targets;
  if (f.url.empty()) {
    std::vector<std::string> args = {"--model", f.model, "--backend", f.backend};
    int64_t ctx = std::min<int64_t>(local.max_context, std::max<int64_t>(context_needed(req), 512));
    if (f.ctx > 0) ctx = f.ctx;
    const std::vector<std::string> ctx_given = serve_arg_values(serve_args, "--ctx");
    if (ctx_given.empty()) args.insert(args.end(), {"--ctx", std::to_string(ctx)});
    for (const std::string& v : ctx_given) {
      // The flag checks every ember command uses, so the message reads the same.
      if (const std::string bad = integer_in("ctx", 1, INT32_MAX)(v); !bad.empty()) throw Error("bench: --serve-args: " + bad);
      ctx = std::stoll(v);
    }
    const int max_clients = req.clients.empty() ? (f.quick ? 4 : 64) : *std::max_element(req.clients.begin(), req.clients.end());
    if (serve_arg_values(serve_args, "--parallel").empty()) args.insert(args.end(), {"--parallel", std::to_string(std::max(8, max_clients))});
    args.insert(args.end(), serve_args.begin(), serve_args.end());
    const std::filesystem::path log = !f.server_log.empty() ? std::filesystem::path(f.server_log)
        : std::filesystem::temp_directory_path() / ("ember-bench-server-" + std::to_string(getpid()) + ".log");
    // Starts `ember serve` with these arguments, its log at `at`, as the target `name`.
    auto start = [&](const std::vector<std::string>& a, const std::filesystem::path& at, const std::string& name) {
      progress.status("starting ember serve: " + name + " (log: " + at.string() + ")");
      children.push_back(std::make_unique<ServerChild>(a, at.string()));
      ServerChild& child = *children.back();
      child.wait_ready();
      Target t;
      t.name = name;
      t.ep = {child.url(), "", ""};
      t.pid = child.pid();
      t.started = true;
      t.backend = resolve_backend_kind(f.backend);
      describe_server(t, ctx, ctx, progress);
      progress.line("ember serve ready: " + name + " at " + t.ep.url + " (pid " + std::to_string(t.pid) + ", context " + std::to_string(t.context) +
                    ", log " + at.string() + ")");
      targets.push_back(std::move(t));
    };
    start(args, log, f.name.empty() ? "ember" : f.name);
    // S9 compares decoding with and without drafts: a second ember, the same
    // but for --draft-args, every scenario interleaved over the two.
    const bool s9 = std::find(req.scenarios.begin(), req.scenarios.end(), "S9") != req.scenarios.end();
    if (s9 && f.interleave.empty()) {
      std::vector<std::string> dargs = args;
      for (const std::string& a : split_args(f.draft_args)) dargs.push_back(a);
      std::filesystem::path dlog = log;
      dlog.replace_filename(log.stem().string() + "-drafts" + log.extension().string());
      start(dargs, dlog, targets[0].name + " " + f.draft_args);
    }
  } else {
    Target t = url_target(f.url, f.name, f, local.max_context, progress);
    t.pid = f.server_pid > 0 ? pid_t(f.server_pid) : (url_is_loopback(t.ep.url) ? pid_listening_on(url_port(t.ep.url)) : -1);
    targets.push_back(std::move(t));
  }
  if (!f.interleave.empty()) {
    Target t = url_target(f.interleave, f.interleave_name, f, local.max_context, progress);
    t.pid = url_is_loopback(t.ep.url) ? pid_listening_on(url_port(t.ep.url)) : -1;
    if (t.name == targets[0].name) t.name += " (2)";
    targets.push_back(std::move(t));
  }
  int64_t context = targets[0].context;
  for (const Target& t : targets) context = std::min(context, t.context);
  const Plan plan = make_plan(req, context);
  for (const std::string& n : plan.notes) progress.line(n);

  const uint64_t seed = f.seed ? f.seed : std::random_device{}();
  PromptMaker prompts(tok.get(), seed);
  if (!tok) progress.line("no tokenizer (--model or --tokenizer gives one): prompts are token ids from 1000..29999");

  RunInfo info = collect_run_info();
  info.prompts = std::string(tok ? "token ids of English-like text from the model's tokenizer"
                                 : "token ids drawn from 1000..29999 (no tokenizer given)") +
                 ", seed " + std::to_string(seed);
  std::string why;
  info.bf16_tflops = gpu_bf16_tflops(why);
  info.bf16_note = why;
  info.command = argv;

  Suite suite(plan, targets, local.facts, bw, prompts, progress, f.time_limit > 0 ? now_s() + f.time_limit : 0);
  auto write_outputs = [&] {
    if (!f.json_path.empty()) write_text_file(f.json_path, to_json(suite, info).dump(1) + "\n");
  };
  suite.run(write_outputs);
  write_outputs();
  if (!f.plot_dir.empty())
    for (const std::string& p : write_plots(suite, f.plot_dir)) progress.line("wrote " + p);
  if (!f.json_path.empty()) progress.line("wrote " + f.json_path);
  for (auto& c : children) {
    const int code = c->stop();
    if (code != 0) progress.line("warning: ember serve exited with status " + std::to_string(code) + "; its log: " + c->log_path());
  }
  std::fputs(to_markdown(suite, info).c_str(), stdout);
  std::fflush(stdout);
}

void run_roofline(const RooflineFlags& f) {
  Progress progress(true);
  std::vector<Bandwidth> found;
  if (f.device == "auto" || f.device == "cpu") {
    progress.status("memcpy bandwidth on all cores");
    found.push_back(cpu_copy_bandwidth(size_t(f.mib) << 20));
  }
  std::string why;
  if (f.device == "auto" || f.device == "cuda") {
    progress.status("device-to-device copy bandwidth");
    if (auto b = gpu_copy_bandwidth(why, size_t(f.mib) << 20)) found.push_back(*b);
    else if (f.device == "cuda") throw Error("bench roofline: " + why);
  }
  progress.line("done");
  std::printf("| device | copy GB/s (read + write) | how |\n|---|---|---|\n");
  for (const Bandwidth& b : found) std::printf("| %s | %.1f | %s |\n", b.device.c_str(), b.gbs, b.note.c_str());
  if (f.device != "cpu" && !why.empty()) std::printf("\nGPU copy bandwidth: %s\n", why.c_str());
  std::string bf16;
  gpu_bf16_tflops(bf16);
  if (f.device != "cpu") std::printf("bf16 matrix rate: %s\n", bf16.c_str());
  if (!f.model.empty()) {
    const LocalModel lm = load_local(f.model, "f16");
    std::printf("\n%s: %.3f GB of weights per token, %.1f KB of KV per position\n\n| device | context | roofline tok/s |\n|---|---|---|\n",
                lm.facts.name.c_str(), double(lm.facts.weight_bytes_per_token) / 1e9, lm.facts.kv_bytes_per_position / 1e3);
    for (const Bandwidth& b : found)
      for (double ctx : {300.0, 8192.0, 32768.0, 131072.0})
        if (ctx <= double(lm.max_context) + 300)
          std::printf("| %s | %.0f | %.1f |\n", b.device.c_str(), ctx,
                      roofline_tps(b.gbs, double(lm.facts.weight_bytes_per_token) + lm.facts.kv_bytes_per_position * ctx));
  }
}

}  // namespace

void add_bench(CLI::App& app) {
  auto* cmd = app.add_subcommand("bench", "Benchmark a server over HTTP: the scenarios S1-S9 (docs/bench.md)");
  static BenchFlags f;
  cmd->add_option("--model", f.model, "GGUF model: ember serves it (unless --url), its tokenizer makes the prompts, its tensors give bytes per token");
  cmd->add_option("--url", f.url, "A running OpenAI-compatible server (http://host:port) instead of starting ember");
  cmd->add_option("--backend", f.backend, "Backend of the server ember starts: cpu, cuda or auto");
  cmd->add_option("--serve-args", f.serve_args, "More arguments for `ember serve`, e.g. \"--threads 8 --kv-mem 8G\"");
  cmd->add_option("--draft-args", f.draft_args,
                  "S9: the second ember server (started beside the first, every scenario interleaved) adds these arguments "
                  "(default \"--draft-tokens 4\"; e.g. \"--draft-model small.gguf\"); on a GPU give both servers a --kv-mem in --serve-args");
  cmd->add_option("--server-log", f.server_log, "Where the started server's log goes (default: a file in the temporary folder)");
  cmd->add_option("--tokenizer", f.tokenizer, "Tokenizer for the prompts: a GGUF file, a tokenizer.json or its folder");
  cmd->add_option("--scenarios", f.scenarios, "Which of S1..S9 to run, e.g. S1,S3 (default S1..S8; S9 also starts a second ember with --draft-args)");
  cmd->add_option("--rounds", f.rounds, "Rounds of each scenario (default 3; 1 with --quick)")->check(CLI::Range(1, 100));
  cmd->add_option("--clients", f.clients, "S2 client counts (default 1,2,4,8,16,32,64; 1,2,4 with --quick)");
  cmd->add_flag("--quick", f.quick, "Reduced sizes: prompts an eighth, contexts up to 2048, fewer tokens and clients");
  cmd->add_option("--interleave", f.interleave, "A second server (URL): rounds alternate between the two");
  cmd->add_option("--json", f.json_path, "Write every summary and raw sample as JSON (rewritten after each scenario)");
  cmd->add_option("--plot", f.plot_dir, "Write SVG charts into this folder");
  cmd->add_option("--api-key", f.api_key, "Key for --url / --interleave servers (default: $OPENAI_API_KEY)");
  cmd->add_option("--name", f.name, "Name of the first server in tables and plots");
  cmd->add_option("--interleave-name", f.interleave_name, "Name of the --interleave server");
  cmd->add_option("--ctx", f.ctx, "Context of the server (ember's started one; a --url server that does not say)")
      ->check(CLI::Range(int64_t(64), int64_t(1) << 24));
  cmd->add_option("--server-pid", f.server_pid, "PID of the --url server on this machine (for /proc figures; found by port when omitted)");
  cmd->add_option("--roofline", f.roofline, "Bandwidth for the roofline: auto, cpu, cuda or off")
      ->check(CLI::IsMember({"auto", "cpu", "cuda", "off"}));
  cmd->add_option("--bandwidth", f.bandwidth, "Use this bandwidth (GB/s) instead of measuring it");
  cmd->add_option("--seed", f.seed, "Seed of the prompts (default: random, so cold prompts are cold on a warm server too)");
  cmd->add_option("--time-limit", f.time_limit, "Seconds after which remaining scenarios and rounds are skipped (outputs still written)");
  cmd->add_flag("--no-progress", f.no_progress, "No progress display on standard error");

  auto* roof = cmd->add_subcommand("roofline", "Measure the memory bandwidth the roofline uses (CPU memcpy, GPU copy)");
  static RooflineFlags rf;
  roof->add_option("--device", rf.device, "auto (both where present), cpu or cuda")->check(CLI::IsMember({"auto", "cpu", "cuda"}));
  roof->add_option("--model", rf.model, "Also print this model's roofline tok/s at a few contexts");
  roof->add_option("--mib", rf.mib, "Size of each copy buffer in MiB")->check(CLI::Range(16, 65536));
  roof->callback([] { run_roofline(rf); });

  cmd->require_subcommand(0, 1);
  cmd->callback([cmd, roof] {
    if (roof->parsed()) return;
    if (f.api_key.empty())
      if (const char* k = std::getenv("OPENAI_API_KEY")) f.api_key = k;
    run_bench(f, command_line());
  });
}

}  // namespace ember::cli
