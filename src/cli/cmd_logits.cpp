// `ember logits`: float32 logits of every position of a token sequence, as .npy.
#include <CLI/CLI.hpp>
#include <cstdio>

#include "backend/cpu/cpu_backend.h"
#include "cli/commands.h"
#include "engine/session.h"
#include "tokenizer/cli_commands.h"
#include "util/error.h"
#include "util/npy.h"

namespace ember::cli {

void add_logits(CLI::App& app) {
  auto* cmd = app.add_subcommand("logits", "Write the logits of every position of a token sequence (.npy)");
  static std::string model_path, ids_text, out;
  static int threads = 0;
  cmd->add_option("--model", model_path, "GGUF file or Hugging Face folder")->required();
  cmd->add_option("--ids", ids_text, "Comma-separated token ids")->required();
  cmd->add_option("--out", out, "Output .npy file, shape [tokens, vocab]")->required();
  cmd->add_option("--threads", threads, "CPU threads (0: all)");
  cmd->callback([] {
    const std::vector<int32_t> ids = parse_id_list(ids_text);
    auto model = Model::load(model_path);
    const int64_t vocab = model->desc().vocab;
    CpuBackendOptions opt;
    opt.max_context = int(ids.size());
    opt.max_tokens = 64;
    opt.max_logit_rows = 64;
    opt.n_threads = threads;
    CpuBackend backend(*model, opt);
    KvPool kv(model->desc(), int(ids.size() + 15) / 16, 16);
    Session session(backend, kv);
    std::vector<float> all(ids.size() * size_t(vocab));
    session.append_all_logits(ids, [&](int64_t i, const float* l) {
      std::copy(l, l + vocab, all.begin() + i * vocab);
    });
    write_npy_f32(out, all.data(), int64_t(ids.size()), vocab);
    std::fprintf(stderr, "wrote %s: [%zu, %lld]\n", out.c_str(), ids.size(), (long long)vocab);
  });
}

}  // namespace ember::cli
