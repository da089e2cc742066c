#include "engine/backend.h"

#include "model/model.h"
#include "util/error.h"

namespace ember {

const char* kv_type_name(KvType t) {
  switch (t) {
    case KvType::F16: return "f16";
    case KvType::BF16: return "bf16";
    case KvType::F32: return "f32";
  }
  return "?";
}

KvType parse_kv_type(const std::string& name) {
  if (name == "f16" || name == "F16") return KvType::F16;
  if (name == "bf16" || name == "BF16") return KvType::BF16;
  if (name == "f32" || name == "F32") return KvType::F32;
  throw Error("unknown KV type '" + name.substr(0, 16) + "' (f16, bf16 or f32)");
}

size_t kv_type_bytes(KvType t) { return t == KvType::F32 ? 4 : 2; }

size_t kv_block_bytes(const ModelDesc& d, int block_size, KvType type) {
  return size_t(d.n_layers) * 2 * size_t(block_size) * size_t(d.kv_dim()) * kv_type_bytes(type);
}

size_t Backend::block_bytes() const { return kv_block_bytes(model().desc(), kv_config().block_size, kv_config().type); }

}  // namespace ember
