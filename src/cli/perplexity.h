// Perplexity of a model over a text and, with a reference model, the KL
// divergence of its next-token distributions to the reference's (perplexity.cpp
// says exactly what is measured).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace ember::cli {

struct PerplexityOptions {
  std::string model;    // GGUF file or Hugging Face folder
  std::string text;     // plain-text file
  std::string kl_base;  // reference model; empty: no KL
  int ctx = 0;          // tokens per window; 0: the model's context length (at most 4096)
  int64_t limit = 0;    // score only the first `limit` tokens; 0: all
  int threads = 0;      // 0: all hardware threads
};

struct PerplexityResult {
  double perplexity = 0;
  int64_t tokens = 0;  // scored tokens
  int ctx = 0;
  // With a reference model:
  double base_perplexity = 0;
  double kl_mean = 0, kl_p99 = 0, top1_agreement = 0;
  std::vector<double> kl;  // per scored token, KL(reference || model) in nats
};

PerplexityResult measure_perplexity(const PerplexityOptions& o);

}  // namespace ember::cli
