// Every kernel's start and end on the device, graph nodes included, from
// CUPTI's activity records: a library preloaded into any program of the build,
//
//   EMBER_KERNEL_TRACE=trace.csv LD_PRELOAD=libember_kernel_trace.so ember_bench_engine ...
//
// writes one CSV row per kernel at exit (default file kernel-trace.csv).
// bench/cuda/step_timeline.py reads it. Nsight Compute times each kernel alone,
// where it pays its whole ramp and tail; a decode step's kernels overlap at
// their seams (programmatic dependent launch, launch.cuh), so what a kernel
// costs in place is how much later than its predecessor it finishes, which
// only a timeline of the real run shows.
#include <cupti.h>
#include <cxxabi.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>

namespace {

std::FILE* out = nullptr;
std::mutex out_mutex;

void check(CUptiResult r, const char* what) {
  if (r == CUPTI_SUCCESS) return;
  const char* msg = nullptr;
  cuptiGetResultString(r, &msg);
  std::fprintf(stderr, "kernel trace: %s failed: %s\n", what, msg ? msg : "unknown error");
  std::exit(1);
}

std::string demangled(const char* name) {
  int status = 0;
  char* d = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  std::string s = status == 0 && d ? d : name;
  std::free(d);
  return s;
}

// A CSV field: quoted, inner quotes doubled.
std::string quoted(const std::string& s) {
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

constexpr size_t kBufferBytes = size_t(8) << 20;

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(ACTIVITY_RECORD_ALIGNMENT, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  std::lock_guard<std::mutex> lock(out_mutex);
  CUpti_Activity* record = nullptr;
  while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
    if (record->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || out == nullptr) continue;
    const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
    std::fprintf(out, "%llu,%llu,%u,%u,%llu,%d,%d,%d,%d,%s\n", static_cast<unsigned long long>(k->start),
                 static_cast<unsigned long long>(k->end), k->streamId, k->graphId,
                 static_cast<unsigned long long>(k->graphNodeId), k->gridX, k->gridY, k->gridZ, k->blockX,
                 quoted(demangled(k->name)).c_str());
  }
  size_t dropped = 0;
  if (cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped) == CUPTI_SUCCESS && dropped > 0)
    std::fprintf(stderr, "kernel trace: %zu records dropped\n", dropped);
  std::free(buffer);
}

void finish() {
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  std::lock_guard<std::mutex> lock(out_mutex);
  if (out) std::fclose(out);
  out = nullptr;
}

// Before main: the activity kind is enabled before the program creates its CUDA context.
__attribute__((constructor)) void start() {
  const char* path = std::getenv("EMBER_KERNEL_TRACE");
  out = std::fopen(path && *path ? path : "kernel-trace.csv", "w");
  if (!out) {
    std::fprintf(stderr, "kernel trace: cannot write %s\n", path && *path ? path : "kernel-trace.csv");
    std::exit(1);
  }
  std::fprintf(out, "start_ns,end_ns,stream,graph,graph_node,grid_x,grid_y,grid_z,block_x,name\n");
  check(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed), "cuptiActivityRegisterCallbacks");
  check(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), "cuptiActivityEnable");
  std::atexit(finish);
}

}  // namespace
