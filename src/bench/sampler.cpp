#include "bench/sampler.h"

#include <chrono>

#include "bench/nvml.h"
#include "bench/proc_stats.h"

namespace ember::bench {

ServerProbe::ServerProbe(Endpoint ep, pid_t pid) : ep_(std::move(ep)), pid_(pid) {
  if (pid_ > 0 && process_cpu_seconds(pid_)) {
    cpu_source_ = "/proc";
  } else if (const auto m = http_get(ep_, "/metrics")) {
    if (prometheus_value(*m, "process_cpu_seconds_total")) cpu_source_ = "/metrics";
    metrics_rss_ = prometheus_value(*m, "process_resident_memory_bytes").has_value();
  }
}

ServerProbe::~ServerProbe() {
  sampling_ = false;
  if (thread_.joinable()) thread_.join();
}

std::optional<double> ServerProbe::cpu_seconds() const {
  if (cpu_source_ == "/proc") return process_cpu_seconds(pid_);
  if (cpu_source_ == "/metrics")
    if (const auto m = http_get(ep_, "/metrics")) return prometheus_value(*m, "process_cpu_seconds_total");
  return std::nullopt;
}

void ServerProbe::sample() {
  std::optional<uint64_t> rss, gpu;
  std::string gpu_source;
  if (pid_ > 0) rss = process_rss(pid_);
  else if (metrics_rss_)
    if (const auto m = http_get(ep_, "/metrics"))
      if (const auto v = prometheus_value(*m, "process_resident_memory_bytes")) rss = uint64_t(*v);
  if (const auto use = Nvml::get().memory_of(pid_)) {
    gpu = use->bytes;
    gpu_source = use->source;
  }
  std::lock_guard lock(mu_);
  if (rss && (!peak_.rss || *rss > *peak_.rss)) peak_.rss = rss;
  if (gpu && (!peak_.gpu || *gpu > *peak_.gpu)) {
    peak_.gpu = gpu;
    peak_.gpu_source = gpu_source;
  }
}

void ServerProbe::begin() {
  peak_ = {};
  hwm_reset_ = pid_ > 0 && reset_peak_rss(pid_);
  sampling_ = true;
  thread_ = std::thread([this] {
    while (sampling_) {
      sample();
      for (int i = 0; i < 10 && sampling_; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  });
}

MemoryPeak ServerProbe::end() {
  sampling_ = false;
  if (thread_.joinable()) thread_.join();
  sample();
  MemoryPeak p;
  {
    std::lock_guard lock(mu_);
    p = peak_;
  }
  if (pid_ > 0) {
    const auto hwm = hwm_reset_ ? process_peak_rss(pid_) : std::nullopt;
    if (hwm) {
      p.rss = std::max(*hwm, p.rss.value_or(0));
      p.rss_source = "/proc VmHWM";
    } else if (p.rss) {
      p.rss_source = "/proc VmRSS samples";
    }
  } else if (p.rss) {
    p.rss_source = "/metrics samples";
  }
  return p;
}

}  // namespace ember::bench
