#include "backend/backend_factory.h"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <string>

#include "backend/cpu/cpu_backend.h"
#ifdef EMBER_HAS_CUDA
#include "backend/cuda/cuda_backend.h"
#endif
#include "model/model.h"
#include "util/error.h"

namespace ember {

namespace {

// Memory the kernel says is available without swapping (MemAvailable), else total physical memory.
uint64_t available_host_memory() {
  std::ifstream f("/proc/meminfo");
  std::string key;
  uint64_t kb = 0;
  std::string unit;
  while (f >> key >> kb >> unit)
    if (key == "MemAvailable:") return kb * 1024;
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? uint64_t(pages) * uint64_t(page) : uint64_t(4) << 30;
}

}  // namespace

uint64_t kv_bytes_for(const ModelDesc& d, const BackendOptions& opt, int64_t positions) {
  return kv_block_bytes(d, opt.block_size, opt.kv_type) * uint64_t((positions + opt.block_size - 1) / opt.block_size);
}

int kv_blocks_for(const ModelDesc& d, const BackendOptions& opt, uint64_t bytes) {
  const uint64_t per_block = kv_block_bytes(d, opt.block_size, opt.kv_type);
  const int64_t one_context = (int64_t(opt.limits.max_context) + opt.block_size - 1) / opt.block_size;
  const int64_t fit = int64_t(std::min<uint64_t>(bytes / per_block, uint64_t(1) << 30));
  if (fit < one_context)
    throw Error("a KV cache of " + std::to_string(bytes >> 20) + " MiB holds " + std::to_string(fit * opt.block_size) +
                " positions, fewer than one context of " + std::to_string(opt.limits.max_context) +
                " (raise --kv-mem or lower --ctx; a block of " + std::to_string(opt.block_size) + " positions takes " +
                std::to_string(per_block >> 10) + " KiB)");
  return int(std::min<int64_t>(fit, 0x7fffffff));
}

bool cuda_backend_built() {
#ifdef EMBER_HAS_CUDA
  return true;
#else
  return false;
#endif
}

std::string resolve_backend_kind(const std::string& kind) {
  if (kind == "cpu") return kind;
  if (kind == "cuda") {
    if (!cuda_backend_built())
      throw Error("this build of ember has no CUDA backend (configure with -DEMBER_CUDA=ON where nvcc is found)");
    return kind;
  }
  if (kind == "auto") {
#ifdef EMBER_HAS_CUDA
    if (cuda_device_available()) return "cuda";
#endif
    return "cpu";
  }
  throw Error("unknown backend '" + kind.substr(0, 16) + "' (cpu, cuda or auto)");
}

int default_prefill_step_tokens(const std::string& resolved_kind) { return resolved_kind == "cuda" ? 2048 : 0; }

std::unique_ptr<Backend> make_backend(const Model& model, const std::string& kind, const StepLimits& limits,
                                      const KvConfig& kv, int n_threads) {
  const std::string k = resolve_backend_kind(kind);
#ifdef EMBER_HAS_CUDA
  if (k == "cuda") return make_cuda_backend(model, limits, kv);
#endif
  return std::make_unique<CpuBackend>(model, limits, kv, n_threads);
}

std::unique_ptr<Backend> make_backend(const Model& model, const BackendOptions& opt) {
  const std::string kind = resolve_backend_kind(opt.kind);
  if (opt.block_size <= 0 || opt.block_size > 1024) throw Error("KV block size must be in 1..1024");
  KvConfig kv;
  kv.block_size = opt.block_size;
  kv.type = opt.kv_type;
  uint64_t bytes = opt.kv_mem;
#ifdef EMBER_HAS_CUDA
  // On the GPU the KV blocks take what the weights and the step's scratch leave.
  if (!bytes && kind == "cuda") bytes = cuda_kv_budget(model, opt.limits);
#endif
  if (!bytes) bytes = available_host_memory() / 4;
  kv.n_blocks = kv_blocks_for(model.desc(), opt, bytes);
  return make_backend(model, kind, opt.limits, kv, opt.n_threads);
}

}  // namespace ember
