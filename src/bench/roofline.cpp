#include "bench/roofline.h"

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

#include "bench_util.h"
#include "util/thread_pool.h"

namespace ember::bench {

Bandwidth cpu_copy_bandwidth(size_t bytes, int reps) {
  ThreadPool pool;
  std::vector<uint8_t> a(bytes), b(bytes);
  // First touch on the threads that copy (pages land on their NUMA nodes), never zeros.
  pool.parallel_for(int64_t(bytes), [&](int64_t s, int64_t e, int) {
    std::memset(a.data() + s, int(s & 0x7f) + 1, size_t(e - s));
    std::memset(b.data() + s, 3, size_t(e - s));
  });
  std::vector<double> gbs;
  for (int r = 0; r < reps; ++r) {
    const auto t = std::chrono::steady_clock::now();
    pool.parallel_for(int64_t(bytes), [&](int64_t s, int64_t e, int) { std::memcpy(b.data() + s, a.data() + s, size_t(e - s)); });
    const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
    gbs.push_back(2.0 * double(bytes) / sec / 1e9);
  }
  if (b[bytes / 3] != a[bytes / 3]) gbs.assign(1, 0);
  return {"cpu", median(gbs),
          "memcpy of " + std::to_string(bytes >> 20) + " MiB on " + std::to_string(pool.size()) + " threads, median of " +
              std::to_string(reps)};
}

namespace {

// The CUDA driver API entry points used, with their types reduced to plain ones.
struct Driver {
  void* lib = nullptr;
  int (*init)(unsigned) = nullptr;
  int (*device_get)(int*, int) = nullptr;
  int (*device_name)(char*, int, int) = nullptr;
  int (*ctx_retain)(void**, int) = nullptr;
  int (*ctx_release)(int) = nullptr;
  int (*ctx_set)(void*) = nullptr;
  int (*mem_alloc)(unsigned long long*, size_t) = nullptr;
  int (*mem_free)(unsigned long long) = nullptr;
  int (*memset_d8)(unsigned long long, unsigned char, size_t) = nullptr;
  int (*copy_htod)(unsigned long long, const void*, size_t) = nullptr;
  int (*copy_async)(unsigned long long, unsigned long long, size_t, void*) = nullptr;
  int (*event_create)(void**, unsigned) = nullptr;
  int (*event_record)(void*, void*) = nullptr;
  int (*event_sync)(void*) = nullptr;
  int (*event_elapsed)(float*, void*, void*) = nullptr;
  int (*event_destroy)(void*) = nullptr;
  int (*ctx_sync)() = nullptr;

  bool open(std::string& why) {
    lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      why = "no CUDA driver (libcuda.so.1) on this machine";
      return false;
    }
    bool all = true;
    auto get = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
      all = all && fn;
    };
    get(init, "cuInit");
    get(device_get, "cuDeviceGet");
    get(device_name, "cuDeviceGetName");
    get(ctx_retain, "cuDevicePrimaryCtxRetain");
    get(ctx_release, "cuDevicePrimaryCtxRelease_v2");
    get(ctx_set, "cuCtxSetCurrent");
    get(mem_alloc, "cuMemAlloc_v2");
    get(mem_free, "cuMemFree_v2");
    get(memset_d8, "cuMemsetD8_v2");
    get(copy_htod, "cuMemcpyHtoD_v2");
    get(copy_async, "cuMemcpyDtoDAsync_v2");
    get(event_create, "cuEventCreate");
    get(event_record, "cuEventRecord");
    get(event_sync, "cuEventSynchronize");
    // cuEventElapsedTime_v2 since CUDA 12.8, the same signature as the first version.
    get(event_elapsed, dlsym(lib, "cuEventElapsedTime_v2") ? "cuEventElapsedTime_v2" : "cuEventElapsedTime");
    get(event_destroy, "cuEventDestroy_v2");
    get(ctx_sync, "cuCtxSynchronize");
    if (!all) why = "the CUDA driver lacks an entry point the bench uses";
    return all;
  }
};

// The driver, loaded once (it does not like being unloaded), with device 0's
// primary context current; null with the reason in `why` otherwise.
Driver* open_device(std::string& why, int& dev) {
  static Driver d;
  if (!d.lib && !d.open(why)) return nullptr;
  void* ctx = nullptr;
  if (d.init(0) != 0 || d.device_get(&dev, 0) != 0) {
    why = "the CUDA driver found no device";
    return nullptr;
  }
  if (d.ctx_retain(&ctx, dev) != 0 || d.ctx_set(ctx) != 0) {
    why = "cannot open a context on CUDA device 0";
    return nullptr;
  }
  return &d;
}

// Milliseconds of each of `reps` runs of op() (true when it queued its work)
// on the default stream, timed with events after three warm-up runs; empty
// when any call failed.
template <class Op>
std::vector<double> time_with_events(Driver& d, int reps, Op op) {
  void *ev0 = nullptr, *ev1 = nullptr;
  std::vector<double> times;
  bool ok = d.event_create(&ev0, 0) == 0 && d.event_create(&ev1, 0) == 0;
  for (int r = -3; ok && r < reps; ++r) {
    float ms = 0;
    ok = d.event_record(ev0, nullptr) == 0 && op() && d.event_record(ev1, nullptr) == 0 && d.event_sync(ev1) == 0 &&
         d.event_elapsed(&ms, ev0, ev1) == 0;
    if (ok && r >= 0 && ms > 0) times.push_back(ms);
  }
  if (ev0) d.event_destroy(ev0);
  if (ev1) d.event_destroy(ev1);
  if (!ok) times.clear();
  return times;
}

}  // namespace

std::optional<Bandwidth> gpu_copy_bandwidth(std::string& why, size_t bytes, int reps) {
  int dev = 0;
  Driver* dp = open_device(why, dev);
  if (!dp) return std::nullopt;
  Driver& d = *dp;
  char name[128] = {};
  d.device_name(name, sizeof(name), dev);
  unsigned long long src = 0, dst = 0;
  std::vector<double> gbs;
  if (d.mem_alloc(&src, bytes) == 0 && d.mem_alloc(&dst, bytes) == 0 && d.memset_d8(src, 1, bytes) == 0)
    for (double ms : time_with_events(d, reps, [&] { return d.copy_async(dst, src, bytes, nullptr) == 0; }))
      gbs.push_back(2.0 * double(bytes) / (ms * 1e-3) / 1e9);
  if (src) d.mem_free(src);
  if (dst) d.mem_free(dst);
  d.ctx_sync();
  d.ctx_release(dev);
  if (gbs.empty()) {
    why = "the device-to-device copy failed (out of GPU memory?)";
    return std::nullopt;
  }
  return Bandwidth{"cuda", median(gbs),
                   std::string(name) + ": device-to-device copy of " + std::to_string(bytes >> 20) + " MiB, median of " +
                       std::to_string(reps)};
}

std::optional<double> gpu_bf16_tflops(std::string& why, int n, int reps) {
  int dev = 0;
  Driver* dp = open_device(why, dev);
  if (!dp) return std::nullopt;
  Driver& d = *dp;
  // cuBLAS of the machine's CUDA toolkit, opened at run time like the driver.
  static void* lib = [] {
    void* h = nullptr;
    for (const char* name : {"libcublas.so.13", "libcublas.so.12", "libcublas.so"})
      if ((h = dlopen(name, RTLD_NOW | RTLD_LOCAL))) break;
    return h;
  }();
  if (!lib) {
    why = "not measured: no cuBLAS (libcublas.so) on this machine";
    return std::nullopt;
  }
  using Gemm = int (*)(void*, int, int, int, int, int, const void*, const void*, int, int, const void*, int, int,
                       const void*, void*, int, int, int, int);
  auto create = reinterpret_cast<int (*)(void**)>(dlsym(lib, "cublasCreate_v2"));
  auto destroy = reinterpret_cast<int (*)(void*)>(dlsym(lib, "cublasDestroy_v2"));
  auto gemm = reinterpret_cast<Gemm>(dlsym(lib, "cublasGemmEx"));
  if (!create || !destroy || !gemm) {
    why = "not measured: cuBLAS lacks an entry point the bench uses";
    return std::nullopt;
  }
  constexpr int kOpN = 0, kBf16 = 14, kF32 = 0, kComputeF32 = 68, kAlgoDefault = -1;  // cuBLAS / CUDA enums
  const size_t in_bytes = size_t(n) * size_t(n) * 2, out_bytes = size_t(n) * size_t(n) * 4;
  // Random bfloat16 values in [-1, 1): the tensor cores draw more power on them than on constants.
  std::vector<uint16_t> host(size_t(n) * size_t(n));
  uint32_t x = 12345;
  for (uint16_t& h : host) {
    x = x * 1664525u + 1013904223u;
    float f = float(int32_t(x >> 8) - (1 << 23)) / float(1 << 23);
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    h = uint16_t(bits >> 16);
  }
  unsigned long long a = 0, b = 0, c = 0;
  void* handle = nullptr;
  const float alpha = 1.f, beta = 0.f;
  auto product = [&] {
    return gemm(handle, kOpN, kOpN, n, n, n, &alpha, reinterpret_cast<void*>(a), kBf16, n, reinterpret_cast<void*>(b),
                kBf16, n, &beta, reinterpret_cast<void*>(c), kF32, n, kComputeF32, kAlgoDefault) == 0;
  };
  std::vector<double> tflops;
  if (d.mem_alloc(&a, in_bytes) == 0 && d.mem_alloc(&b, in_bytes) == 0 && d.mem_alloc(&c, out_bytes) == 0 &&
      d.copy_htod(a, host.data(), in_bytes) == 0 && d.copy_htod(b, host.data(), in_bytes) == 0 && create(&handle) == 0)
    for (double ms : time_with_events(d, reps, product))
      tflops.push_back(2.0 * double(n) * double(n) * double(n) / (ms * 1e-3) / 1e12);
  if (handle) destroy(handle);
  for (unsigned long long p : {a, b, c})
    if (p) d.mem_free(p);
  d.ctx_sync();
  d.ctx_release(dev);
  if (tflops.empty()) {
    why = "not measured: the bf16 product failed (out of GPU memory?)";
    return std::nullopt;
  }
  const double v = median(tflops);
  char buf[160];
  std::snprintf(buf, sizeof buf, "%.0f TFLOP/s (%d x %d x %d bf16 product, float32 sums, cuBLAS, median of %d)", v, n,
                n, n, reps);
  why = buf;
  return v;
}

}  // namespace ember::bench
