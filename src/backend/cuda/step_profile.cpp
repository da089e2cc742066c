#include "backend/cuda/step_profile.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "backend/cuda/cuda_check.h"

namespace ember::cuda {

StepProfile::StepProfile() {
  const char* e = std::getenv("EMBER_CUDA_PROFILE");
  enabled_ = e && *e && *e != '0';
}

StepProfile::~StepProfile() {
  if (enabled_ && steps_ > 0) {
    std::vector<std::pair<double, std::string>> rows;
    double total = 0;
    for (const auto& [op, ms] : ms_) {
      rows.emplace_back(ms, op);
      total += ms;
    }
    std::sort(rows.rbegin(), rows.rend());
    std::fprintf(stderr, "CUDA step profile over %d steps: %.3f ms per step\n", steps_, total / steps_);
    for (const auto& [ms, op] : rows)
      std::fprintf(stderr, "  %-22s %9.3f ms per step  %5.1f%%\n", op.c_str(), ms / steps_, 100.0 * ms / total);
  }
  for (cudaEvent_t e : pool_) cudaEventDestroy(e);
}

void StepProfile::mark(const char* op, cudaStream_t s) {
  if (!enabled_) return;
  if (marks_.size() == pool_.size()) {
    cudaEvent_t e;
    EMBER_CUDA_CHECK(cudaEventCreate(&e));
    pool_.push_back(e);
  }
  cudaEvent_t e = pool_[marks_.size()];
  EMBER_CUDA_CHECK(cudaEventRecord(e, s));
  marks_.emplace_back(op, e);
}

void StepProfile::end_step(cudaStream_t s) {
  if (!enabled_ || marks_.empty()) return;
  mark("end", s);
  EMBER_CUDA_CHECK(cudaEventSynchronize(marks_.back().second));
  for (size_t i = 0; i + 1 < marks_.size(); ++i) {
    float ms = 0;
    EMBER_CUDA_CHECK(cudaEventElapsedTime(&ms, marks_[i].second, marks_[i + 1].second));
    ms_[marks_[i].first] += ms;
  }
  marks_.clear();
  ++steps_;
}

}  // namespace ember::cuda
