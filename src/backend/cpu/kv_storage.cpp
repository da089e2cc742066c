#include "backend/cpu/kv_storage.h"

#include <sys/mman.h>

#include <cstring>
#include <string>

#include "util/error.h"
#include "util/fp16.h"

namespace ember::cpu {

KvStorage::KvStorage(const ModelDesc& d, const KvConfig& c)
    : c_(c), n_layers_(d.n_layers), kv_dim_(d.kv_dim()), elem_(kv_type_bytes(c.type)) {
  if (c.n_blocks <= 0 || c.block_size <= 0) throw Error("KV storage needs a positive block count and size");
  bytes_ = kv_block_bytes(d, c.block_size, c.type) * size_t(c.n_blocks);
  // Anonymous memory reads as zeros and is committed page by page when written.
  void* p = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED)
    throw Error("cannot reserve " + std::to_string(bytes_ >> 20) + " MiB for the KV cache (lower --kv-mem)");
  base_ = static_cast<uint8_t*>(p);
}

KvStorage::~KvStorage() {
  if (base_) munmap(base_, bytes_);
}

void KvStorage::store(int layer, int block, int row, const float* k, const float* v) {
  const size_t off = size_t(row) * size_t(kv_dim_) * elem_;
  uint8_t* kd = keys(layer, block) + off;
  uint8_t* vd = values(layer, block) + off;
  switch (c_.type) {
    case KvType::F32:
      std::memcpy(kd, k, size_t(kv_dim_) * 4);
      std::memcpy(vd, v, size_t(kv_dim_) * 4);
      return;
    case KvType::F16: {
      auto* ko = reinterpret_cast<uint16_t*>(kd);
      auto* vo = reinterpret_cast<uint16_t*>(vd);
      for (int i = 0; i < kv_dim_; ++i) { ko[i] = f32_to_fp16(k[i]); vo[i] = f32_to_fp16(v[i]); }
      return;
    }
    case KvType::BF16: {
      auto* ko = reinterpret_cast<uint16_t*>(kd);
      auto* vo = reinterpret_cast<uint16_t*>(vd);
      for (int i = 0; i < kv_dim_; ++i) { ko[i] = f32_to_bf16(k[i]); vo[i] = f32_to_bf16(v[i]); }
      return;
    }
  }
}

void KvStorage::copy_block(int src, int dst, int n_positions) {
  const size_t n = size_t(n_positions) * size_t(kv_dim_) * elem_;
  for (int l = 0; l < n_layers_; ++l) {
    std::memcpy(keys(l, dst), keys(l, src), n);
    std::memcpy(values(l, dst), values(l, src), n);
  }
}

void KvStorage::read_block(int block, void* host) const {
  auto* out = static_cast<uint8_t*>(host);
  for (int l = 0; l < n_layers_; ++l, out += 2 * half_bytes()) {
    std::memcpy(out, keys(l, block), half_bytes());
    std::memcpy(out + half_bytes(), values(l, block), half_bytes());
  }
}

void KvStorage::write_block(int block, const void* host) {
  const auto* in = static_cast<const uint8_t*>(host);
  for (int l = 0; l < n_layers_; ++l, in += 2 * half_bytes()) {
    std::memcpy(keys(l, block), in, half_bytes());
    std::memcpy(values(l, block), in + half_bytes(), half_bytes());
  }
}

}  // namespace ember::cpu
