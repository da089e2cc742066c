#include "backend/cuda/iq_tables_device.h"

#include <cstring>
#include <vector>

#include "quant/iq_tables.h"

namespace ember::cuda {

DeviceIqTables upload_iq_tables() {
  uint8_t signs[128];
  for (uint32_t i = 0; i < 128; ++i) signs[i] = quant::iq::ksigns(i);
  struct Part {
    const void* data;
    size_t bytes;
  };
  const Part parts[] = {{quant::iq::iq2xxs_grid(), 256 * 8}, {quant::iq::iq2xs_grid(), 512 * 8},
                        {quant::iq::iq2s_grid(), 1024 * 8},  {quant::iq::iq3xxs_grid(), 256 * 4},
                        {quant::iq::iq3s_grid(), 512 * 4},   {quant::iq::iq1s_grid(), 2048 * 8},
                        {quant::iq::kIQ4NLValues, 16},       {signs, 128}};
  std::vector<uint8_t> host;
  size_t offsets[8];
  for (size_t i = 0; i < 8; ++i) {
    offsets[i] = host.size();
    host.resize(host.size() + parts[i].bytes);
    std::memcpy(host.data() + offsets[i], parts[i].data, parts[i].bytes);
    host.resize((host.size() + 15) / 16 * 16);  // every table 16-byte aligned
  }
  DeviceIqTables t{DeviceBuffer(host.size()), {}};
  EMBER_CUDA_CHECK(cudaMemcpy(t.storage.get(), host.data(), host.size(), cudaMemcpyHostToDevice));
  const uint8_t* base = t.storage.get<uint8_t>();
  t.tables.iq2xxs = reinterpret_cast<const uint64_t*>(base + offsets[0]);
  t.tables.iq2xs = reinterpret_cast<const uint64_t*>(base + offsets[1]);
  t.tables.iq2s = reinterpret_cast<const uint64_t*>(base + offsets[2]);
  t.tables.iq3xxs = reinterpret_cast<const uint32_t*>(base + offsets[3]);
  t.tables.iq3s = reinterpret_cast<const uint32_t*>(base + offsets[4]);
  t.tables.iq1s = reinterpret_cast<const uint64_t*>(base + offsets[5]);
  t.tables.iq4nl = reinterpret_cast<const int8_t*>(base + offsets[6]);
  t.tables.ksigns = base + offsets[7];
  return t;
}

}  // namespace ember::cuda
