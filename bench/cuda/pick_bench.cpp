// The GPU's token picks alone: the greedy pick (argmax_rows) and sampled picks
// (sample_rows) of logit rows, as a decode step runs them after the output head.
//
//   ember_bench_cuda_picks [--vocab 151936] [--rows 1,16] [--kinds peaked,flat] [--settings 0,1,2,3]
//
// Rows of two kinds, peaked and flat (bench/pick_rows.h).
// For each setting the median microseconds per call over 30 runs of 16 calls
// after warm-up (events around each run), and the extra over the greedy pick
// of the same rows: what a sampled step pays for its pick.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "backend/cuda/argmax.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/device_buffer.h"
#include "backend/cuda/sampling.h"
#include "bench_util.h"
#include "pick_rows.h"
#include "event_timer.h"

using namespace ember;
using namespace ember::cuda;

int main(int argc, char** argv) {
  int vocab = 151'936;
  std::string row_list = "1,16", kinds = "peaked,flat", setting_list = "0,1,2,3";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--vocab") vocab = std::stoi(argv[i + 1]);
    else if (a == "--rows") row_list = argv[i + 1];
    else if (a == "--kinds") kinds = argv[i + 1];
    else if (a == "--settings") setting_list = argv[i + 1];  // indices into the columns below (to profile one)
  }
  try {
    const auto row_counts = bench::parse_list(row_list), chosen = bench::parse_list(setting_list);
    auto is_chosen = [&](size_t i) { return std::find(chosen.begin(), chosen.end(), int(i)) != chosen.end(); };
    int64_t max_rows = 1;
    for (int r : row_counts) max_rows = std::max<int64_t>(max_rows, r);
    const auto& settings = bench::kPickSettings;
    std::mt19937 rng(3);
    std::uniform_real_distribution<double> u(0.0, 1.0);
    std::printf("vocabulary %d; microseconds per call (median), and the extra over the greedy pick\n\n", vocab);
    std::printf("| rows | kind | greedy |");
    for (size_t i = 0; i < std::size(settings); ++i)
      if (is_chosen(i)) std::printf(" %s |", settings[i].name);
    std::printf("\n|---|---|---|");
    for (size_t i = 0; i < chosen.size(); ++i) std::printf("---|");
    std::printf("\n");
    for (const bool peaked : {true, false}) {
      if (kinds.find(peaked ? "peaked" : "flat") == std::string::npos) continue;
      std::vector<float> logits(size_t(max_rows) * size_t(vocab));
      for (int64_t r = 0; r < max_rows; ++r) bench::fill_pick_row(logits.data() + size_t(r) * size_t(vocab), vocab, peaked, rng);
      DeviceBuffer d_l(logits.size() * 4), d_ids(size_t(max_rows) * 4), d_picks(size_t(max_rows) * sizeof(DevicePick)),
          d_scratch(argmax_scratch_bytes(max_rows));
      EMBER_CUDA_CHECK(cudaMemcpy(d_l.get(), logits.data(), d_l.bytes(), cudaMemcpyHostToDevice));
      EMBER_CUDA_CHECK(cudaMemset(d_scratch.get(), 0, d_scratch.bytes()));
      for (const int rows : row_counts) {
        const double greedy = 1000.0 * bench::median_call_ms(30, 16, [&](int) {
          argmax_rows(d_l.get<float>(), vocab, rows, vocab, d_ids.get<int32_t>(), d_scratch.get<int32_t>(), nullptr);
        });
        std::printf("| %d | %s | %.1f |", rows, peaked ? "peaked" : "flat", greedy);
        for (size_t si = 0; si < std::size(settings); ++si) {
          if (!is_chosen(si)) continue;
          const bench::PickSetting& s = settings[si];
          std::vector<DevicePick> picks;
          for (int64_t r = 0; r < rows; ++r) {
            Pick p = s.pick;
            p.draw = u(rng);
            picks.push_back(device_pick(p));
          }
          EMBER_CUDA_CHECK(cudaMemcpy(d_picks.get(), picks.data(), picks.size() * sizeof(DevicePick), cudaMemcpyHostToDevice));
          // A sampled step runs the greedy pick too (for its greedy rows), then the sampled one.
          const double sampled = 1000.0 * bench::median_call_ms(30, 16, [&](int) {
            argmax_rows(d_l.get<float>(), vocab, rows, vocab, d_ids.get<int32_t>(), d_scratch.get<int32_t>(), nullptr);
            sample_rows(d_l.get<float>(), vocab, rows, vocab, d_picks.get<DevicePick>(), d_ids.get<int32_t>(), nullptr);
          });
          std::printf(" %.1f (+%.1f) |", sampled, sampled - greedy);
        }
        std::printf("\n");
      }
    }
    EMBER_CUDA_CHECK(cudaDeviceSynchronize());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
