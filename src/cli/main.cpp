// ember: command-line entry point. Subcommands live in cmd_*.cpp.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>

#include "cli/commands.h"
#include "util/error.h"

int main(int argc, char** argv) {
  CLI::App app{"ember: LLM inference engine"};
  app.require_subcommand(1);
  ember::cli::add_run(app);
  ember::cli::add_batch(app);
  ember::cli::add_inspect(app);
  ember::cli::add_logits(app);
  ember::cli::add_convert(app);
  ember::cli::add_gen_model(app);
  ember::cli::add_text_tools(app);
  ember::cli::add_perplexity(app);
  ember::cli::add_serve(app);
  ember::cli::add_launch(app);
  ember::cli::add_bench(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const ember::Error& e) {
    std::fprintf(stderr, "ember: error: %s\n", e.what());
    return 1;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "ember: error: out of memory\n");
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ember: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
