// Where a step's device time goes, by operation: with EMBER_CUDA_PROFILE=1 the
// backend records an event before each operation (steps then run without
// CUDA Graphs, one launch after another) and prints the totals when it ends.
#pragma once
#include <cuda_runtime.h>

#include <map>
#include <string>
#include <vector>

namespace ember::cuda {

class StepProfile {
 public:
  StepProfile();
  ~StepProfile();  // prints the table to stderr when enabled
  bool enabled() const { return enabled_; }
  // Time from this mark to the next one counts for `op`.
  void mark(const char* op, cudaStream_t s);
  // After the step's stream is synchronised: adds the step's times.
  void end_step(cudaStream_t s);

 private:
  bool enabled_;
  std::vector<cudaEvent_t> pool_;
  std::vector<std::pair<const char*, cudaEvent_t>> marks_;
  std::map<std::string, double> ms_;
  int steps_ = 0;
};

}  // namespace ember::cuda
