// The backend the engine tests run on: EMBER_TEST_BACKEND (cpu, cuda), else
// cpu; 16-position F16 blocks, 2 CPU threads.
#pragma once
#include <cstdlib>
#include <memory>

#include "backend/backend_factory.h"
#include "engine/backend.h"
#include "model/model.h"

inline std::unique_ptr<ember::Backend> backend_under_test(const ember::Model& model, int n_blocks, int ctx, int step, int rows) {
  ember::StepLimits l;
  l.max_context = ctx;
  l.max_tokens = step;
  l.max_logit_rows = rows;
  ember::KvConfig kv;
  kv.n_blocks = n_blocks;
  kv.block_size = 16;
  kv.type = ember::KvType::F16;
  const char* kind = std::getenv("EMBER_TEST_BACKEND");
  return ember::make_backend(model, kind && *kind ? kind : "cpu", l, kv, 2);
}
