// `ember launch claude|codex|opencode`: a coding tool pointed at an ember
// server. Without --url, an `ember serve` child is started on a free
// loopback port with a fresh random key, in its own process group (so a
// Ctrl-C meant for the tool does not stop it); when the tool exits, the
// server is stopped and ember exits with the tool's status.
#include <CLI/CLI.hpp>
#include <httplib.h>

#include <nlohmann/json.hpp>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <random>
#include <regex>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/launch_env.h"
#include "util/error.h"

namespace ember::cli {

namespace {

struct LaunchOptions {
  std::string tool, url, api_key;
  std::string model, hf, model_name;  // for the server it starts
  bool offline = false;
  int ctx = 0, parallel = 4;
  std::vector<std::string> tool_args;
};

std::string random_key() {
  std::random_device rd;
  std::string key = "ember-";
  for (int i = 0; i < 32; ++i) key += "0123456789abcdef"[rd() % 16];
  return key;
}

// The server's one model, as GET /v1/models names it.
std::string served_model(const std::string& url, const std::string& key) {
  httplib::Client http(url);
  http.set_bearer_token_auth(key);
  auto res = http.Get("/v1/models");
  if (!res || res->status != 200)
    throw Error("launch: " + url + "/v1/models answered " + (res ? "HTTP " + std::to_string(res->status) : std::string("nothing")));
  const auto j = nlohmann::json::parse(res->body, nullptr, false);
  if (!j.is_object() || !j.contains("data") || !j["data"].is_array() || j["data"].empty() || !j["data"][0].contains("id"))
    throw Error("launch: " + url + "/v1/models lists no model");
  return j["data"][0]["id"].get<std::string>();
}

// Starts `ember serve` and waits until it answers /health; returns its pid and sets `url`.
pid_t start_server(const LaunchOptions& o, const std::string& key, const std::string& log, std::string& url) {
  std::vector<std::string> args = {"ember", "serve", "--port", "0", "--parallel", std::to_string(o.parallel)};
  if (!o.hf.empty()) args.insert(args.end(), {"--hf", o.hf});
  if (!o.model.empty()) args.insert(args.end(), {"--model", o.model});
  if (o.offline) args.push_back("--offline");
  if (o.ctx > 0) args.insert(args.end(), {"--ctx", std::to_string(o.ctx)});
  if (!o.model_name.empty()) args.insert(args.end(), {"--model-name", o.model_name});
  const pid_t pid = fork();
  if (pid < 0) throw Error("launch: cannot start the server");
  if (pid == 0) {
    setpgid(0, 0);
    setenv("EMBER_API_KEY", key.c_str(), 1);  // the key never appears on a command line
    const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd >= 0) dup2(fd, STDERR_FILENO);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv("/proc/self/exe", argv.data());
    _exit(127);
  }
  const std::regex listening("listening on (http://127\\.0\\.0\\.1:[0-9]+)");
  for (;;) {
    int status;
    if (waitpid(pid, &status, WNOHANG) == pid) throw Error("launch: the server stopped while starting; its log: " + log);
    if (url.empty()) {
      std::ifstream f(log);
      const std::string text((std::istreambuf_iterator<char>(f)), {});
      std::smatch m;
      if (std::regex_search(text, m, listening)) url = m[1];
    } else {
      httplib::Client http(url);
      if (auto res = http.Get("/health"); res && res->status == 200) return pid;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

void stop_server(pid_t pid) {
  kill(pid, SIGTERM);
  int status;
  waitpid(pid, &status, 0);
}

// Runs the tool with the plan's environment; returns its exit status.
int run_tool(const LaunchPlan& plan, const std::vector<std::string>& user_args) {
  std::vector<std::string> args = {plan.program};
  args.insert(args.end(), plan.args.begin(), plan.args.end());
  args.insert(args.end(), user_args.begin(), user_args.end());
  // The tool owns the terminal: a Ctrl-C is for it, and ember waits for it to exit.
  struct sigaction ignore {}, old_int{}, old_quit{};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGINT, &ignore, &old_int);
  sigaction(SIGQUIT, &ignore, &old_quit);
  const pid_t pid = fork();
  if (pid < 0) throw Error("launch: cannot start " + plan.program);
  if (pid == 0) {
    sigaction(SIGINT, &old_int, nullptr);
    sigaction(SIGQUIT, &old_quit, nullptr);
    for (const auto& [k, v] : plan.env) setenv(k.c_str(), v.c_str(), 1);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    std::fprintf(stderr, "ember launch: cannot run '%s': not found on PATH (is it installed?)\n", argv[0]);
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGQUIT, &old_quit, nullptr);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

void launch(const LaunchOptions& o) {
  launch_plan(o.tool, "", "", "");  // an unknown tool is refused before anything starts
  std::string url = o.url, key = o.api_key;
  if (key.empty() && std::getenv("EMBER_API_KEY")) key = std::getenv("EMBER_API_KEY");
  pid_t server = -1;
  std::string log;
  if (url.empty()) {
    if (o.model.empty() && o.hf.empty()) throw Error("launch: --model or --hf (to start a server), or --url of a running one");
    key = random_key();
    log = (std::filesystem::temp_directory_path() / ("ember-launch-" + std::to_string(getpid()) + ".log")).string();
    server = start_server(o, key, log, url);
  }
  int code = 1;
  try {
    const std::string model = served_model(url, key);
    std::fprintf(stderr, "ember launch: %s with model \"%s\" at %s%s%s\n", o.tool.c_str(), model.c_str(), url.c_str(),
                 log.empty() ? "" : "; server log: ", log.c_str());
    code = run_tool(launch_plan(o.tool, url, key, model), o.tool_args);
  } catch (...) {
    if (server > 0) stop_server(server);
    throw;
  }
  if (server > 0) {
    stop_server(server);
    std::filesystem::remove(log);
  }
  std::fflush(nullptr);
  std::exit(code);
}

}  // namespace

void add_launch(CLI::App& app) {
  auto* cmd = app.add_subcommand("launch", "Start a coding tool (claude, codex, opencode) on an ember server");
  static LaunchOptions o;
  cmd->add_option("tool", o.tool, "claude, codex or opencode")->required();
  cmd->add_option("args", o.tool_args, "Arguments for the tool (after --)");
  cmd->add_option("--url", o.url, "A running ember server (default: start one with --model or --hf)");
  cmd->add_option("--api-key", o.api_key, "The running server's key (also EMBER_API_KEY)");
  auto* model = cmd->add_option("--model,-m", o.model, "GGUF file or Hugging Face folder for the server");
  cmd->add_option("--hf", o.hf, "OWNER/REPO[:QUANT] for the server")->excludes(model);
  cmd->add_flag("--offline", o.offline, "With --hf: use the local cache only");
  cmd->add_option("--ctx", o.ctx, "Context length per sequence for the server");
  cmd->add_option("--parallel", o.parallel, "Requests the server generates at once");
  cmd->add_option("--model-name", o.model_name, "Name of the model the server serves");
  cmd->callback([] { launch(o); });
}

}  // namespace ember::cli
