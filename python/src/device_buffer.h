// DeviceBuffer: device memory holding a region or a batch, exposed to Python (DLPack). Every capsule handed
// out shares `owner`, so the memory is freed (cudaFree, or the batch buffer's release) when the last holder
// lets go.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

namespace tilewise::python {

struct DeviceBuffer {
  std::shared_ptr<void> owner;  // keeps `data` alive
  uint8_t* data = nullptr;
  int device = 0;
  std::vector<size_t> shape;
  // The samples' DLPack type: code 0 signed integer, 1 unsigned integer, 2 float; bits 8, 16 or 32.
  uint8_t type_code = 1;
  uint8_t type_bits = 8;
};

}  // namespace tilewise::python
