// What a server spends, seen from outside it: CPU seconds (S6) and peak
// memory (S7). From /proc for a server on this machine whose PID is known
// (started by the bench, given with --server-pid, or found listening on the
// URL's loopback port), else from its Prometheus /metrics
// (process_cpu_seconds_total, process_resident_memory_bytes) when it has
// them, else not at all ("n/a"). GPU memory comes from NVML: the process's
// own when NVML lists it, else the whole device's.
#pragma once
#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>
#include <sys/types.h>

#include "bench/sse_client.h"

namespace ember::bench {

struct MemoryPeak {
  std::optional<uint64_t> rss;  // bytes
  std::string rss_source;       // "/proc VmHWM", "/proc VmRSS samples", "/metrics samples", "" (n/a)
  std::optional<uint64_t> gpu;  // bytes
  std::string gpu_source;       // "NVML process", "NVML device", "" (n/a)
};

class ServerProbe {
 public:
  ServerProbe(Endpoint ep, pid_t pid);
  ~ServerProbe();  // stops a sampling thread that end() did not (a scenario that threw)
  ServerProbe(const ServerProbe&) = delete;
  ServerProbe& operator=(const ServerProbe&) = delete;
  // "/proc", "/metrics" or "" when the server's CPU time cannot be read.
  const std::string& cpu_source() const { return cpu_source_; }
  std::optional<double> cpu_seconds() const;
  pid_t pid() const { return pid_; }

  // Memory between begin() and end(), sampled by a thread every 100 ms.
  void begin();
  MemoryPeak end();

 private:
  void sample();
  Endpoint ep_;
  pid_t pid_;
  std::string cpu_source_;
  bool metrics_rss_ = false, hwm_reset_ = false;
  std::mutex mu_;
  MemoryPeak peak_;
  std::atomic<bool> sampling_{false};
  std::thread thread_;
};

}  // namespace ember::bench
