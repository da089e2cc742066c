// The `tiny` preset at Q8_0 with random weights (seed 11 unless given), generated for a
// test suite: a temporary file of its own per process (CTest runs a suite's
// tests in parallel processes, and rewriting a file another one has mapped
// would fault it), mapped, then removed (the mapping stays valid).
#pragma once
#include <unistd.h>

#include <cstdint>

#include <filesystem>
#include <memory>
#include <string>

#include "model/model.h"
#include "model/presets.h"
#include "util/thread_pool.h"

inline std::unique_ptr<ember::Model> generate_tiny_model(const std::string& suite, uint64_t seed = 11) {
  namespace fs = std::filesystem;
  const fs::path out = fs::temp_directory_path() / ("ember-" + suite + "-tiny-q8_0-" + std::to_string(getpid()) + ".gguf");
  ember::ThreadPool pool(2);
  ember::generate_model(ember::preset("tiny"), "Q8_0", "", out.string(), seed, pool, false);
  auto model = ember::Model::load(out.string());
  fs::remove(out);
  return model;
}
