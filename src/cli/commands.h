// The `ember` subcommands. Each file cmd_*.cpp adds one to the app.
#pragma once

namespace CLI { class App; }

namespace ember::cli {

void add_run(CLI::App& app);
void add_batch(CLI::App& app);
void add_inspect(CLI::App& app);
void add_logits(CLI::App& app);
void add_convert(CLI::App& app);
void add_gen_model(CLI::App& app);
void add_text_tools(CLI::App& app);  // tokenize, detokenize, chat-template
void add_perplexity(CLI::App& app);
void add_serve(CLI::App& app);  // the HTTP server
void add_launch(CLI::App& app);  // a coding tool on an ember server
void add_bench(CLI::App& app);   // benchmark scenarios over HTTP

}  // namespace ember::cli
