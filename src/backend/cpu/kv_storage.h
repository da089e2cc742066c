// Where the CPU backend keeps the KV blocks: host memory, one mapping for all
// layers, in the element type the engine chose (F16 by default).
//
// Block b of layer l holds block_size rows of kv_dim keys, then as many
// values. Pages are committed as blocks are first written, so a pool sized for
// many cached conversations costs memory only as it fills.
#pragma once
#include <cstddef>
#include <cstdint>

#include "engine/backend.h"
#include "model/descriptor.h"

namespace ember::cpu {

class KvStorage {
 public:
  KvStorage(const ModelDesc& d, const KvConfig& c);
  ~KvStorage();
  KvStorage(const KvStorage&) = delete;
  KvStorage& operator=(const KvStorage&) = delete;

  const KvConfig& config() const { return c_; }
  int kv_dim() const { return kv_dim_; }
  size_t elem_bytes() const { return elem_; }

  // Row 0 of the keys (values) of one block of one layer; rows are kv_dim elements apart.
  uint8_t* keys(int layer, int block) const { return base_ + offset(layer, block, 0); }
  uint8_t* values(int layer, int block) const { return base_ + offset(layer, block, 1); }

  // Stores one position's keys and values (kv_dim floats each), converted to the element type.
  void store(int layer, int block, int row, const float* k, const float* v);

  void copy_block(int src, int dst, int n_positions);
  void read_block(int block, void* host) const;        // [layer][keys, values][block_size * kv_dim]
  void write_block(int block, const void* host);

 private:
  size_t half_bytes() const { return size_t(c_.block_size) * size_t(kv_dim_) * elem_; }
  size_t offset(int layer, int block, int kv) const {
    return ((size_t(layer) * size_t(c_.n_blocks) + size_t(block)) * 2 + size_t(kv)) * half_bytes();
  }
  KvConfig c_;
  int n_layers_, kv_dim_;
  size_t elem_, bytes_;
  uint8_t* base_ = nullptr;
};

}  // namespace ember::cpu
