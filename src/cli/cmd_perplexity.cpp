// `ember perplexity`: perplexity of a model over a text and, with --kl-base, the KL
// divergence of its next-token distributions to a reference model's (the
// measurement itself is in perplexity.cpp).
#include <CLI/CLI.hpp>
#include <cstdio>

#include "cli/commands.h"
#include "cli/perplexity.h"

namespace ember::cli {

void add_perplexity(CLI::App& app) {
  auto* cmd = app.add_subcommand("perplexity", "Perplexity of a model over a text; with --kl-base, KL divergence to a reference model");
  static PerplexityOptions o;
  static bool json = false;
  cmd->add_option("--model", o.model, "GGUF file or Hugging Face folder")->required();
  cmd->add_option("--text", o.text, "Plain-text file")->required();
  cmd->add_option("--ctx", o.ctx, "Tokens per window (default: the model's context length, at most 4096)");
  cmd->add_option("--kl-base", o.kl_base, "Reference model (e.g. the F16 file) for KL divergence and top-1 agreement");
  cmd->add_option("--limit", o.limit, "Score only the first N tokens of the text");
  cmd->add_option("--threads", o.threads, "CPU threads (0: all)");
  cmd->add_flag("--json", json, "Print one JSON object");
  cmd->callback([] {
    const PerplexityResult r = measure_perplexity(o);
    if (json) {
      std::printf("{\"perplexity\": %.6f, \"tokens\": %lld, \"ctx\": %d", r.perplexity, (long long)r.tokens, r.ctx);
      if (!o.kl_base.empty())
        std::printf(", \"kl_mean\": %.8f, \"kl_p99\": %.8f, \"top1_agreement\": %.6f, \"base_perplexity\": %.6f",
                    r.kl_mean, r.kl_p99, r.top1_agreement, r.base_perplexity);
      std::printf("}\n");
      return;
    }
    std::printf("perplexity %.4f over %lld tokens (windows of %d)\n", r.perplexity, (long long)r.tokens, r.ctx);
    if (!o.kl_base.empty())
      std::printf("KL to %s: mean %.6f, p99 %.6f; top-1 agreement %.2f%%; reference perplexity %.4f\n",
                  o.kl_base.c_str(), r.kl_mean, r.kl_p99, 100 * r.top1_agreement, r.base_perplexity);
  });
}

}  // namespace ember::cli
