// The host's token pick (engine/pick.h's pick_id) alone: what a request that
// picks on the host (penalties, a grammar, log-probabilities, or the CPU
// backend) pays per token after its logits arrive.
//
//   ember_bench_host_picks [--vocab 128256] [--calls 21]
//
// Rows of two kinds, peaked and flat (bench/pick_rows.h). Median
// microseconds per call, one thread.
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "bench_util.h"
#include "pick_rows.h"
#include "engine/pick.h"

using namespace ember;

int main(int argc, char** argv) {
  int vocab = 128'256, calls = 21;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--vocab") vocab = std::stoi(argv[i + 1]);
    else if (a == "--calls") calls = std::stoi(argv[i + 1]);
  }
  const auto& settings = bench::kPickSettings;
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  PickScratch scratch(vocab);
  std::printf("vocabulary %d; microseconds per pick (median of %d)\n\n| kind |", vocab, calls);
  for (const bench::PickSetting& s : settings) std::printf(" %s |", s.name);
  std::printf("\n|---|");
  for (size_t i = 0; i < std::size(settings); ++i) std::printf("---|");
  std::printf("\n");
  for (const bool peaked : {true, false}) {
    std::vector<float> row(static_cast<size_t>(vocab));
    bench::fill_pick_row(row.data(), vocab, peaked, rng);
    std::printf("| %s |", peaked ? "peaked" : "flat");
    for (const bench::PickSetting& s : settings) {
      std::vector<double> us;
      for (int c = 0; c < calls; ++c) {
        Pick p = s.pick;
        p.draw = u(rng);
        const auto t0 = std::chrono::steady_clock::now();
        const volatile int32_t id = pick_id(row.data(), vocab, p, scratch);
        (void)id;
        us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
      }
      std::printf(" %.0f |", bench::median(us));
    }
    std::printf("\n");
  }
  return 0;
}
