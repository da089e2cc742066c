// `ember serve`: the OpenAI- and Anthropic-compatible HTTP server
// (docs/server.md). Listens first, so /health answers 503 while the model
// loads; SIGINT or SIGTERM cancels open streams, waits for the engine to go
// idle, checks its KV block accounting and exits 0.
#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <pthread.h>
#include <thread>

#include "cli/commands.h"
#include "cli/model_sampling_flags.h"
#include "cli/engine_flags.h"
#include "cli/flag_checks.h"
#include "model/sampling_defaults.h"
#include "server/http_server.h"
#include "server/json_fields.h"
#include "util/error.h"

namespace ember::cli {

namespace {

struct ServeOptions {
  EngineFlags engine;
  server::ServerOptions http;
  std::string max_body = "8M";
  std::string model_name;
};

// The name clients send as "model": given, or the file's (or folder's) name without extension.
std::string model_id(const ServeOptions& o, const std::string& model_path) {
  if (!o.model_name.empty()) return o.model_name;
  std::filesystem::path p(model_path);
  if (!p.has_filename()) p = p.parent_path();
  return p.extension() == ".gguf" ? p.stem().string() : p.filename().string();
}

void serve(ServeOptions o) {
  if (o.http.api_key.empty())
    if (const char* env = std::getenv("EMBER_API_KEY")) o.http.api_key = env;
  o.http.max_body = size_t(parse_bytes(o.max_body));
  // Signals are taken by one thread with sigwait, so they are blocked before any thread starts;
  // a client that closes its connection must not kill the server with SIGPIPE.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);

  server::ServerContext ctx;
  ctx.opt = o.http;
  ctx.parallel = o.engine.parallel;
  server::HttpServer http(ctx);
  http.bind();
  const std::string address = "http://" + o.http.host + ":" + std::to_string(http.port());
  std::fprintf(stderr, "ember serve: listening on %s, loading %s\n", address.c_str(),
               (o.engine.hf.empty() ? o.engine.model : o.engine.hf).c_str());
  std::thread http_thread([&] { http.run(); });
  std::atomic<bool> self_stop{false};  // the signal came from this process, on its way out
  std::thread signal_thread([&http, &ctx, &self_stop, stop_signals] {
    int sig = 0;
    sigwait(&stop_signals, &sig);
    if (!self_stop) std::fprintf(stderr, "ember serve: %s, shutting down\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
    ctx.stopping = true;
    ctx.ready = false;
    ctx.cancel_all();
    http.stop();
  });
  // However this function is left (a load error included), the signal thread is woken if no signal
  // came, which stops the server, and both threads are joined before `http` and `ctx` go away.
  struct Joiner {
    std::thread &signals, &web;
    const std::atomic<bool>& stopping;
    std::atomic<bool>& self_stop;
    ~Joiner() {
      if (!stopping) {
        self_stop = true;
        pthread_kill(signals.native_handle(), SIGTERM);
      }
      signals.join();
      if (web.joinable()) web.join();
    }
  } joiner{signal_thread, http_thread, ctx.stopping, self_stop};

  LoadedEngine e = load_engine(o.engine, /*default_kv_contexts=*/0);
  if (!e.tok) throw Error(e.path + " carries no tokenizer; the server speaks text");
  ctx.model.id = model_id(o, e.path);
  ctx.model.tok = e.tok.get();
  if (!e.tok->chat_template().empty()) ctx.model.chat_template = chat::Template::parse(e.tok->chat_template());
  ctx.model.context = e.backend->limits().max_context;
  ctx.model.token_trie = std::make_shared<const grammar::TokenTrie>(*e.tok);  // once, for every constrained request
  ctx.model.created = int64_t(std::time(nullptr));
  const cli::ModelSampling ms = cli::checked_model_sampling(*e.model);
  ctx.model.sampling_defaults = ms.defaults;
  ctx.model.sampling = ms.params;
  ctx.engine = e.engine.get();
  if (!ctx.stopping) {
    ctx.ready = true;
    const std::string defaults = ctx.model.sampling_defaults.describe();
    std::fprintf(stderr, "ember serve: ready on %s: model \"%s\", context %d, parallel %d, default sampling: %s\n",
                 address.c_str(), ctx.model.id.c_str(), ctx.model.context, o.engine.parallel,
                 defaults.empty() ? "greedy (the model sets none)" : defaults.c_str());
  }
  http_thread.join();
  // Every stream is cancelled and every connection closed: the engine must hold no block but the cache's.
  e.engine->check_accounting();
  std::fprintf(stderr, "ember serve: stopped; KV blocks all free or cached\n");
}

}  // namespace

void add_serve(CLI::App& app) {
  auto* cmd = app.add_subcommand("serve", "Serve the OpenAI and Anthropic HTTP APIs");
  static ServeOptions o;
  o.engine.parallel = 8;
  add_engine_flags(cmd, o.engine);
  add_prediction_flag(cmd, o.engine);
  cmd->add_option("--parallel", o.engine.parallel, "Requests generating at once (more wait in a queue)");
  cmd->add_option("--host", o.http.host, "Address to listen on (default 127.0.0.1: this machine only)");
  cmd->add_option("--port", o.http.port, "Port (0: any free one, printed at startup)")->check(integer_in("port", 0, 65535));
  cmd->add_option("--api-key", o.http.api_key, "Key clients must send (Authorization: Bearer, or x-api-key); also EMBER_API_KEY");
  cmd->add_option("--model-name", o.model_name, "Name clients use for the model (default: the file name without .gguf)");
  cmd->add_option("--max-body", o.max_body, "Largest request body, e.g. 8M");
  cmd->add_option("--max-waiting", o.http.max_waiting, "Requests queued beyond --parallel before 429")
      ->check(integer_in("max waiting", 0, 100000));
  cmd->add_option("--http-threads", o.http.http_threads, "Connections served at once (each open stream holds one)")
      ->check(integer_in("http threads", 4, 4096));
  cmd->callback([] { serve(o); });
}

}  // namespace ember::cli
