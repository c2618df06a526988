// The helpers of the public vocabulary types (tilewise/types.h).
#include "tilewise/types.h"

namespace tilewise {

int32_t sample_bytes(SampleType type) {
  switch (type) {
    case SampleType::kUint8: case SampleType::kInt8: return 1;
    case SampleType::kUint16: case SampleType::kInt16: return 2;
    case SampleType::kUint32: case SampleType::kInt32: case SampleType::kFloat32: return 4;
  }
  return 1;
}

const char* sample_type_name(SampleType type) {
  switch (type) {
    case SampleType::kUint8: return "uint8";
    case SampleType::kUint16: return "uint16";
    case SampleType::kUint32: return "uint32";
    case SampleType::kInt8: return "int8";
    case SampleType::kInt16: return "int16";
    case SampleType::kInt32: return "int32";
    case SampleType::kFloat32: return "float32";
  }
  return "uint8";
}

}  // namespace tilewise
