// GPU memory through NVML, opened at run time (libnvidia-ml.so.1): never a
// build dependency, and absent (available() false) on machines without an
// NVIDIA driver, where the bench reports "n/a".
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>
#include <sys/types.h>

namespace ember::bench {

class Nvml {
 public:
  static Nvml& get();  // opened once, on first use
  bool available() const { return ok_; }
  std::vector<std::string> gpu_names() const;
  // Bytes of GPU memory the process uses on all devices; nullopt when NVML
  // does not list it (another PID namespace, or no GPU work yet).
  std::optional<uint64_t> process_memory(pid_t pid) const;
  // Bytes used on all devices by every process.
  std::optional<uint64_t> device_used() const;
  // The process's bytes where NVML lists it (pid > 0), else every process's on
  // all devices (a process of another PID namespace is not listed); the source
  // says which: "NVML process" or "NVML device".
  struct Use {
    uint64_t bytes = 0;
    const char* source = "";
  };
  std::optional<Use> memory_of(pid_t pid) const;

 private:
  Nvml();
  bool ok_ = false;
  unsigned count_ = 0;
  void* lib_ = nullptr;
  // The entry points used (nvml.h types reduced to what they are).
  int (*get_handle_)(unsigned, void**) = nullptr;
  int (*get_name_)(void*, char*, unsigned) = nullptr;
  int (*get_memory_)(void*, void*) = nullptr;
  int (*get_procs_)(void*, unsigned*, void*) = nullptr;
  size_t proc_info_size_ = 0;  // 24 bytes for _v2/_v3, 16 for the first version
};

}  // namespace ember::bench
