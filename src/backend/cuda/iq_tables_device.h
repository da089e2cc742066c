// The IQ formats' codebooks (quant/iq_tables.h) copied to device memory once.
#pragma once
#include "backend/cuda/device_buffer.h"
#include "backend/cuda/device_matrix.h"

namespace ember::cuda {

struct DeviceIqTables {
  DeviceBuffer storage;
  IqTables tables;  // pointers into storage
};

DeviceIqTables upload_iq_tables();

}  // namespace ember::cuda
