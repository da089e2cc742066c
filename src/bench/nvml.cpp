#include "bench/nvml.h"

#include <dlfcn.h>

#include <cstring>

namespace ember::bench {

Nvml& Nvml::get() {
  static Nvml n;
  return n;
}

Nvml::Nvml() {
  lib_ = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib_) return;
  auto sym = [&](const char* name) { return dlsym(lib_, name); };
  auto init = reinterpret_cast<int (*)()>(sym("nvmlInit_v2"));
  auto count = reinterpret_cast<int (*)(unsigned*)>(sym("nvmlDeviceGetCount_v2"));
  get_handle_ = reinterpret_cast<int (*)(unsigned, void**)>(sym("nvmlDeviceGetHandleByIndex_v2"));
  get_name_ = reinterpret_cast<int (*)(void*, char*, unsigned)>(sym("nvmlDeviceGetName"));
  get_memory_ = reinterpret_cast<int (*)(void*, void*)>(sym("nvmlDeviceGetMemoryInfo"));
  for (const char* name : {"nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetComputeRunningProcesses_v2"})
    if (!get_procs_) {
      get_procs_ = reinterpret_cast<int (*)(void*, unsigned*, void*)>(sym(name));
      proc_info_size_ = 24;  // {pid, usedGpuMemory, gpuInstanceId, computeInstanceId}
    }
  if (!get_procs_) {
    get_procs_ = reinterpret_cast<int (*)(void*, unsigned*, void*)>(sym("nvmlDeviceGetComputeRunningProcesses"));
    proc_info_size_ = 16;  // {pid, usedGpuMemory}
  }
  if (!init || !count || !get_handle_ || !get_memory_ || init() != 0 || count(&count_) != 0 || count_ == 0) return;
  ok_ = true;
}

std::vector<std::string> Nvml::gpu_names() const {
  std::vector<std::string> names;
  if (!ok_ || !get_name_) return names;
  for (unsigned i = 0; i < count_; ++i) {
    void* dev = nullptr;
    char name[96] = {};
    if (get_handle_(i, &dev) == 0 && get_name_(dev, name, sizeof(name)) == 0) names.push_back(name);
  }
  return names;
}

std::optional<uint64_t> Nvml::process_memory(pid_t pid) const {
  if (!ok_ || !get_procs_) return std::nullopt;
  bool listed = false;
  uint64_t total = 0;
  for (unsigned i = 0; i < count_; ++i) {
    void* dev = nullptr;
    if (get_handle_(i, &dev) != 0) continue;
    unsigned n = 256;
    std::vector<unsigned char> infos(size_t(n) * proc_info_size_);
    if (get_procs_(dev, &n, infos.data()) != 0) continue;
    for (unsigned k = 0; k < n; ++k) {
      const unsigned char* p = infos.data() + size_t(k) * proc_info_size_;
      unsigned info_pid;
      unsigned long long used;
      std::memcpy(&info_pid, p, 4);
      std::memcpy(&used, p + 8, 8);
      if (pid_t(info_pid) != pid || used == ~0ull) continue;
      listed = true;
      total += used;
    }
  }
  if (!listed) return std::nullopt;
  return total;
}

std::optional<uint64_t> Nvml::device_used() const {
  if (!ok_) return std::nullopt;
  uint64_t total = 0;
  for (unsigned i = 0; i < count_; ++i) {
    void* dev = nullptr;
    unsigned long long mem[3] = {};  // nvmlMemory_t: total, free, used
    if (get_handle_(i, &dev) == 0 && get_memory_(dev, mem) == 0) total += mem[2];
  }
  return total;
}

std::optional<Nvml::Use> Nvml::memory_of(pid_t pid) const {
  if (pid > 0)
    if (const auto m = process_memory(pid)) return Use{*m, "NVML process"};
  if (const auto m = device_used()) return Use{*m, "NVML device"};
  return std::nullopt;
}

}  // namespace ember::bench
