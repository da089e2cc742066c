// Perplexity over a text, and the KL divergence of a model's next-token
// distributions to a reference model's (what a user checks before trusting a
// quantised file): behind `ember perplexity` and the trained-model tests.
//
// The text is tokenized as plain text (no BOS/EOS added, special-token spellings
// stay text) and cut into non-overlapping windows of --ctx tokens; each window
// starts from an empty cache, and every token after a window's first is scored
// from the logits of the token before it. perplexity = exp(mean negative
// log-likelihood). KL(reference || model) is measured on the same positions:
// mean, 99th percentile (nearest rank) and how often both models' top tokens agree.
#include "cli/perplexity.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>

#include "backend/backend_factory.h"
#include "engine/session.h"
#include "model/model.h"
#include "tokenizer/cli_commands.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace ember::cli {
namespace {

// Runs one window of tokens from an empty cache and hands back every position's
// logits. The only place this command touches the backend/session API.
class WindowRunner {
 public:
  // The KV cache is F32: the figures measure the weights' format, not a 16-bit cache's rounding.
  WindowRunner(const Model& model, int ctx, int threads) {
    BackendOptions opt;
    opt.kind = "cpu";
    opt.limits.max_context = ctx;
    opt.limits.max_tokens = 64;
    opt.limits.max_logit_rows = 64;
    opt.kv_type = KvType::F32;
    opt.kv_mem = kv_bytes_for(model.desc(), opt, ctx);
    opt.n_threads = threads;
    backend_ = make_backend(model, opt);
    blocks_ = std::make_unique<BlockAllocator>(backend_->kv_config().n_blocks);
  }
  template <class F>
  void run(std::span<const int32_t> ids, F&& on_logits) {
    Session session(*backend_, *blocks_);
    session.append_all_logits(ids, on_logits);
  }

 private:
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<BlockAllocator> blocks_;
};

// log-softmax of one logit row, in double.
void log_softmax(const float* l, int64_t n, std::vector<double>& out) {
  out.resize(size_t(n));
  double mx = l[0];
  for (int64_t i = 1; i < n; ++i) mx = std::max(mx, double(l[i]));
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += std::exp(double(l[i]) - mx);
  const double lse = mx + std::log(sum);
  for (int64_t i = 0; i < n; ++i) out[size_t(i)] = double(l[i]) - lse;
}

int64_t argmax(const float* l, int64_t n) { return std::max_element(l, l + n) - l; }

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

PerplexityResult measure_perplexity(const PerplexityOptions& o) {
  auto model = Model::load(o.model);
  const int64_t vocab = model->desc().vocab;
  const Tokenizer tok = load_tokenizer(TokenizerSource{o.model, ""});
  const std::string text = read_file(o.text);
  std::vector<int32_t> ids = tok.encode(text, false, false);
  if (o.limit > 0 && int64_t(ids.size()) > o.limit) ids.resize(size_t(o.limit));
  const int ctx = o.ctx > 0 ? o.ctx : std::min(model->desc().max_context, 4096);
  if (ctx < 2) throw Error("--ctx must be at least 2");
  if (ids.size() < 2) throw Error(o.text + ": fewer than 2 tokens");

  std::unique_ptr<Model> base;
  std::unique_ptr<WindowRunner> base_runner;
  if (!o.kl_base.empty()) {
    base = Model::load(o.kl_base);
    if (base->desc().vocab != vocab)
      throw Error(o.kl_base + ": vocabulary of " + std::to_string(base->desc().vocab) + " tokens, the model has " +
                  std::to_string(vocab));
    std::vector<int32_t> base_ids = load_tokenizer(TokenizerSource{o.kl_base, ""}).encode(text, false, false);
    base_ids.resize(std::min(base_ids.size(), ids.size()));
    if (base_ids != ids) throw Error(o.kl_base + ": its tokenizer reads the text differently from the model's");
    base_runner = std::make_unique<WindowRunner>(*base, ctx, o.threads);
  }
  WindowRunner runner(*model, ctx, o.threads);

  PerplexityResult r;
  r.ctx = ctx;
  double nll = 0, base_nll = 0;
  int64_t agree = 0;
  std::vector<double> lp, base_lp;
  std::vector<float> base_rows;  // the reference's logits of one window
  std::vector<int64_t> base_top;
  for (size_t start = 0; start + 1 < ids.size(); start += size_t(ctx)) {
    const std::span<const int32_t> w(ids.data() + start, std::min(size_t(ctx), ids.size() - start));
    const int64_t scored = int64_t(w.size()) - 1;
    if (base_runner) {
      base_rows.assign(size_t(scored * vocab), 0.0f);
      base_top.assign(size_t(scored), 0);
      base_runner->run(w, [&](int64_t i, const float* l) {
        if (i >= scored) return;
        log_softmax(l, vocab, base_lp);
        std::copy(l, l + vocab, base_rows.begin() + i * vocab);
        base_top[size_t(i)] = argmax(l, vocab);
        base_nll -= base_lp[size_t(w[size_t(i) + 1])];
      });
    }
    runner.run(w, [&](int64_t i, const float* l) {
      if (i >= scored) return;
      log_softmax(l, vocab, lp);
      nll -= lp[size_t(w[size_t(i) + 1])];
      if (!base_runner) return;
      // Both log-softmaxes from float logits by the same code: equal logits give exactly 0.
      log_softmax(base_rows.data() + i * vocab, vocab, base_lp);
      double kl = 0;
      for (int64_t v = 0; v < vocab; ++v) kl += std::exp(base_lp[size_t(v)]) * (base_lp[size_t(v)] - lp[size_t(v)]);
      r.kl.push_back(std::max(kl, 0.0));
      agree += argmax(l, vocab) == base_top[size_t(i)];
    });
    r.tokens += scored;
  }
  r.perplexity = std::exp(nll / double(r.tokens));
  if (base_runner) {
    r.base_perplexity = std::exp(base_nll / double(r.tokens));
    double sum = 0;
    for (double k : r.kl) sum += k;
    r.kl_mean = sum / double(r.kl.size());
    std::vector<double> sorted = r.kl;
    std::sort(sorted.begin(), sorted.end());
    const size_t rank = size_t(std::ceil(0.99 * double(sorted.size())));
    r.kl_p99 = sorted[std::max<size_t>(rank, 1) - 1];
    r.top1_agreement = double(agree) / double(r.kl.size());
  }
  return r;
}

}  // namespace ember::cli
