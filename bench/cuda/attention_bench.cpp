// Decode attention alone (attention(): the cluster kernel, or the split kernel
// and its merge), against the device's measured copy bandwidth:
//
//   ember_bench_cuda_attention [--heads 32] [--kv-heads 8] [--head-dim 128]
//                              [--contexts 1024,4096,8192,32768] [--batch 1,4,16] [--kv F16|BF16]
//
// One decoding token per sequence, each at the end of its context, over KV
// blocks in a shuffled order as the engine's pool hands them out. The step's
// layers are run in turn, as a decode step does, over enough of them (at least
// 512 MB of keys and values) that the L2 cannot hold what one launch reads:
// 16 launches per timed run, median of 20 runs after warm-up. Reports
// microseconds per launch, the GB/s of keys and values read, and their ratio to
// the copy bandwidth (bytes read + written by a 1 GiB device-to-device copy),
// the ceiling of a memory-bound kernel.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "backend/cuda/attention.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/device_buffer.h"
#include "bench_util.h"
#include "event_timer.h"
#include "util/error.h"

using namespace ember;
using namespace ember::cuda;

int main(int argc, char** argv) {
  int n_heads = 32, n_kv_heads = 8, head_dim = 128;
  std::string contexts = "1024,4096,8192,32768", batches = "1,4,16", kv_name = "F16";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--heads") n_heads = std::stoi(argv[i + 1]);
    else if (a == "--kv-heads") n_kv_heads = std::stoi(argv[i + 1]);
    else if (a == "--head-dim") head_dim = std::stoi(argv[i + 1]);
    else if (a == "--contexts") contexts = argv[i + 1];
    else if (a == "--batch") batches = argv[i + 1];
    else if (a == "--kv") kv_name = argv[i + 1];
    else {
      std::fprintf(stderr, "unknown option %s\n", a.c_str());
      return 2;
    }
  }
  if (kv_name != "F16" && kv_name != "BF16") {
    std::fprintf(stderr, "--kv must be F16 or BF16\n");
    return 2;
  }
  try {
    const double copy_gbs = bench::device_copy_gbs();
    std::printf("copy bandwidth (read + write): %.0f GB/s\n", copy_gbs);
    std::printf("%d query heads, %d key/value heads x %d, %s KV; one decoding token a sequence\n\n", n_heads, n_kv_heads,
                head_dim, kv_name.c_str());
    std::printf("| context | sequences | splits | us a launch | KV MB a launch | GB/s | %% of copy |\n|---|---|---|---|---|---|---|\n");

    const KvType type = kv_name == "F16" ? KvType::F16 : KvType::BF16;
    const int kv_dim = n_kv_heads * head_dim, block = 16;
    const int64_t half_elems = int64_t(block) * kv_dim;
    std::mt19937 rng(1);
    std::normal_distribution<float> nd(0.f, 1.f);
    for (int ctx : bench::parse_list(contexts)) {
      for (int batch : bench::parse_list(batches)) {
        if (batch > kAttentionTokens) throw Error("--batch: at most " + std::to_string(kAttentionTokens) + " sequences");
        const int nb = (ctx + block - 1) / block;
        const size_t layer_bytes = size_t(batch) * size_t(nb) * 2 * size_t(half_elems) * 2;
        const int layers = int(std::max<size_t>(2, ((size_t(512) << 20) + layer_bytes - 1) / layer_bytes));
        DeviceBuffer pool(layer_bytes * size_t(layers));
        // Keys and values near 1 (0x3C3C: 1.06 as F16, 0.0115 as BF16): the
        // time does not depend on them, and no element is zero or NaN.
        EMBER_CUDA_CHECK(cudaMemset(pool.get(), 0x3C, pool.bytes()));
        const size_t n_seq = static_cast<size_t>(batch);
        std::vector<int32_t> pos(n_seq, ctx - 1), seq(n_seq), off(n_seq), start(n_seq, ctx - 1);
        std::vector<int32_t> tables(size_t(batch) * size_t(nb));
        std::iota(tables.begin(), tables.end(), 0);
        std::shuffle(tables.begin(), tables.end(), rng);
        for (int s = 0; s < batch; ++s) {
          seq[size_t(s)] = s;
          off[size_t(s)] = s * nb;
        }
        std::vector<float> q(size_t(batch) * size_t(n_heads) * size_t(head_dim));
        for (float& x : q) x = nd(rng);
        DeviceBuffer d_pos = upload(pos), d_seq = upload(seq), d_off = upload(off), d_tab = upload(tables),
                     d_start = upload(start), d_q = upload(q);
        DeviceBuffer d_out(q.size() * sizeof(float));
        const int splits = attention_split_grid(attention_splits(ctx));
        DeviceBuffer d_part(size_t(kAttentionTokens) * size_t(n_heads) * size_t(splits) * size_t(head_dim + 2) * 4);
        const StepIndex ix{d_pos.get<int32_t>(), d_seq.get<int32_t>(), d_off.get<int32_t>(), d_tab.get<int32_t>(),
                           d_start.get<int32_t>()};
        AttnArgs a;
        a.q = d_q.get<float>();
        a.out = d_out.get<float>();
        a.partial = d_part.get<float>();
        a.n_heads = n_heads;
        a.n_kv_heads = n_kv_heads;
        a.head_dim = head_dim;
        a.scale = 1.f / std::sqrt(float(head_dim));
        a.n_splits = splits;
        a.context_class = attention_context_class(ctx);
        const double ms = bench::median_call_ms(20, 16, [&](int i) {
          const KvLayer kv{static_cast<char*>(pool.get()) + size_t(i % layers) * layer_bytes, type, block, kv_dim, half_elems};
          attention(a, ix, kv, batch, nullptr);
        });
        EMBER_CUDA_CHECK(cudaGetLastError());
        const double bytes = double(batch) * double(ctx) * double(kv_dim) * 2.0 * 2.0;
        const double gbs = bytes / (ms * 1e-3) / 1e9;
        std::printf("| %d | %d | %d | %.1f | %.1f | %.0f | %.1f%% |\n", ctx, batch,
                    ctx <= kClusterContext ? 0 : attention_splits(ctx), ms * 1e3, bytes / 1e6, gbs, 100.0 * gbs / copy_gbs);
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ember_bench_cuda_attention: %s\n", e.what());
    return 1;
  }
  return 0;
}
