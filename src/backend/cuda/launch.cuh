// How every kernel of the backend is launched: with Hopper's programmatic
// dependent launch, so that a step's kernels overlap at their seams.
//
// A decode step is a chain of small kernels, each reading what the one before
// wrote. Launched plainly, each waits for the one before to finish and then
// pays its own launch and ramp-up, a few microseconds per seam and about a
// dozen seams per layer. Launched "programmatically", the next kernel's blocks
// may start while the one before still runs: they stop at
// wait_for_previous_kernel() until it has finished and its writes are visible.
// What a kernel does before that wait must not touch memory that an earlier
// kernel of the step writes, or that it writes itself: the products use the
// time to load their first weights, which never change during a step, and
// the cluster attention kernel the keys and values of earlier steps (where
// StepIndex::seq_start says which those are).
//
// The rule every kernel here keeps: call begin_kernel() (or, in the products,
// wait_for_previous_kernel() and then let_next_kernel_start()) before its first
// access to anything but weights. A kernel that never waits would race with
// the one before it. let_next_kernel_start() comes after the wait, so at most
// two kernels overlap: the one running and the next one's prologue.
// The wait covers only the kernel just before, so a kernel must not end
// before that one has: where every block of a launch may leave early (a
// kernel with nothing to do in this step), the blocks still wait before they
// leave, or the next kernel could run beside the one before this.
//
// EMBER_CUDA_PDL=0 launches every kernel plainly (for A/B runs); the waits
// then return at once.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <utility>

#include "backend/cuda/cuda_check.h"

namespace ember::cuda {

__device__ __forceinline__ void wait_for_previous_kernel() { asm volatile("griddepcontrol.wait;" ::: "memory"); }
__device__ __forceinline__ void let_next_kernel_start() { asm volatile("griddepcontrol.launch_dependents;" ::: "memory"); }

// The usual start of a kernel: its inputs are ready, and the next kernel may begin its own prologue.
__device__ __forceinline__ void begin_kernel() {
  wait_for_previous_kernel();
  let_next_kernel_start();
}

// Whether launches overlap (EMBER_CUDA_PDL, read once).
bool overlapped_launches();

// Launches kernel on s; with cluster > 1 its blocks run in thread block
// clusters of that many (Hopper), which share their shared memory.
template <class... Params, class... Args>
void launch_clustered(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem, unsigned cluster, cudaStream_t s,
                      Args&&... args) {
  cudaLaunchAttribute attr[2];
  unsigned n_attr = 0;
  if (overlapped_launches()) {
    attr[n_attr].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[n_attr++].val.programmaticStreamSerializationAllowed = 1;
  }
  if (cluster > 1) {
    attr[n_attr].id = cudaLaunchAttributeClusterDimension;
    attr[n_attr].val.clusterDim.x = cluster;
    attr[n_attr].val.clusterDim.y = 1;
    attr[n_attr++].val.clusterDim.z = 1;
  }
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = s;
  cfg.attrs = attr;
  cfg.numAttrs = n_attr;
  EMBER_CUDA_CHECK(cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...));
}

template <class... Params, class... Args>
void launch(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem, cudaStream_t s, Args&&... args) {
  launch_clustered(kernel, grid, block, smem, 1, s, std::forward<Args>(args)...);
}

// A grid holds at most 65,535 rows (y, z). Launches with a row per item (an
// expert product's items, a token's row) take more in several launches:
// f(first, count) for each run of at most that many, first passed to the
// kernel as its first item. Each launch waits for the one before (launch.cuh's
// rule), so the runs go in order.
constexpr int64_t kMaxGridRows = 65535;
template <class F>
void by_grid_rows(int64_t n, F&& f) {
  for (int64_t first = 0; first < n; first += kMaxGridRows) f(first, unsigned(std::min(kMaxGridRows, n - first)));
}

}  // namespace ember::cuda
