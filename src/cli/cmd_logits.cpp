// `ember logits`: float32 logits of every position of a token sequence, as .npy.
#include <CLI/CLI.hpp>
#include <cstdio>

#include "backend/backend_factory.h"
#include "cli/commands.h"
#include "engine/session.h"
#include "tokenizer/cli_commands.h"
#include "util/error.h"
#include "util/npy.h"

namespace ember::cli {

void add_logits(CLI::App& app) {
  auto* cmd = app.add_subcommand("logits", "Write the logits of every position of a token sequence (.npy)");
  static std::string model_path, ids_text, out, backend_kind = "auto", kv_type = "f32";
  static int threads = 0;
  cmd->add_option("--model", model_path, "GGUF file or Hugging Face folder")->required();
  cmd->add_option("--ids", ids_text, "Comma-separated token ids")->required();
  cmd->add_option("--out", out, "Output .npy file, shape [tokens, vocab]")->required();
  cmd->add_option("--threads", threads, "CPU threads (0: all)");
  cmd->add_option("--backend", backend_kind, "cpu, cuda or auto");
  cmd->add_option("--kv-type", kv_type, "KV cache element type: f32 (default here, for exact comparisons), f16, bf16");
  cmd->callback([] {
    const std::vector<int32_t> ids = parse_id_list(ids_text);
    auto model = Model::load(model_path);
    const int64_t vocab = model->desc().vocab;
    BackendOptions opt;
    opt.kind = backend_kind;
    opt.limits.max_context = int(ids.size());
    opt.limits.max_tokens = 64;
    opt.limits.max_logit_rows = 64;
    opt.kv_type = parse_kv_type(kv_type);
    opt.kv_mem = kv_bytes_for(model->desc(), opt, int64_t(ids.size()));
    opt.n_threads = threads;
    auto backend = make_backend(*model, opt);
    BlockAllocator blocks(backend->kv_config().n_blocks);
    Session session(*backend, blocks);
    std::vector<float> all(ids.size() * size_t(vocab));
    session.append_all_logits(ids, [&](int64_t i, const float* l) {
      std::copy(l, l + vocab, all.begin() + i * vocab);
    });
    write_npy_f32(out, all.data(), int64_t(ids.size()), vocab);
    std::fprintf(stderr, "wrote %s: [%zu, %lld]\n", out.c_str(), ids.size(), (long long)vocab);
  });
}

}  // namespace ember::cli
