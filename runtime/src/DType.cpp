//===- DType.cpp ----------------------------------------------------------===//

#include "kiln/runtime/DType.h"

#include <cmath>
#include <cstring>

namespace kiln::runtime {

bool isKnownDType(uint8_t raw) {
  return raw <= static_cast<uint8_t>(DType::BF16);
}

size_t dtypeSize(DType dtype) {
  switch (dtype) {
  case DType::F32:
  case DType::I32:
    return 4;
  case DType::I64:
  case DType::F64:
    return 8;
  case DType::F16:
  case DType::BF16:
    return 2;
  case DType::Bool:
  case DType::I8:
  case DType::U8:
    return 1;
  }
  return 0;
}

const char *dtypeName(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return "float32";
  case DType::I64:
    return "int64";
  case DType::Bool:
    return "bool";
  case DType::F64:
    return "float64";
  case DType::I32:
    return "int32";
  case DType::I8:
    return "int8";
  case DType::U8:
    return "uint8";
  case DType::F16:
    return "float16";
  case DType::BF16:
    return "bfloat16";
  }
  return "unknown";
}

bool parseDType(std::string_view name, DType &out) {
  for (DType dtype : kAllDTypes) {
    if (name == dtypeName(dtype)) {
      out = dtype;
      return true;
    }
  }
  return false;
}

float halfToFloat(uint16_t bits) {
  uint32_t sign = (bits & 0x8000u) << 16, exponent = (bits >> 10) & 0x1f, mantissa = bits & 0x3ff;
  uint32_t out;
  if (exponent == 0x1f) { // inf or NaN
    out = sign | 0x7f800000u | (mantissa << 13);
  } else if (exponent != 0) {
    out = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    out = sign;
  } else { // subnormal: exactly mantissa * 2^-24
    float magnitude = static_cast<float>(mantissa) * 0x1p-24f;
    std::memcpy(&out, &magnitude, 4);
    out |= sign;
  }
  float result;
  std::memcpy(&result, &out, 4);
  return result;
}

float bfloat16ToFloat(uint16_t bits) {
  uint32_t out = static_cast<uint32_t>(bits) << 16;
  float result;
  std::memcpy(&result, &out, 4);
  return result;
}

uint16_t floatToBFloat16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  if ((bits & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>((bits >> 16) | 0x40); // quiet NaN
  uint32_t roundingBias = 0x7fffu + ((bits >> 16) & 1);
  return static_cast<uint16_t>((bits + roundingBias) >> 16);
}

uint16_t floatToHalf(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u)
    return sign | 0x7e00u; // NaN
  if (magnitude >= 0x477ff000u) // 65520 and above round to infinity
    return sign | 0x7c00u;
  if (magnitude < 0x38800000u) { // below 2^-14: a subnormal half (or zero)
    // The value in units of 2^-24, rounded to nearest even by the FPU.
    float absolute;
    std::memcpy(&absolute, &magnitude, 4);
    return sign | static_cast<uint16_t>(std::nearbyint(absolute * 0x1p24f));
  }
  uint32_t roundingBias = 0xfffu + ((magnitude >> 13) & 1);
  return sign | static_cast<uint16_t>((magnitude - (112u << 23) + roundingBias) >> 13);
}

int64_t TensorDesc::numElements() const {
  int64_t count = 1;
  for (int64_t dim : shape)
    count *= dim;
  return count;
}

int64_t TensorDesc::byteSize() const {
  return numElements() * static_cast<int64_t>(dtypeSize(dtype));
}

std::string TensorDesc::str() const {
  std::string result = dtypeName(dtype);
  result += '[';
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      result += 'x';
    result += shape[i] == -1 ? "?" : std::to_string(shape[i]); // -1: a symbolic dim
  }
  result += ']';
  return result;
}

Status validateTensorDesc(const TensorDesc &desc) {
  int64_t bytes = static_cast<int64_t>(dtypeSize(desc.dtype));
  for (size_t i = 0; i < desc.shape.size(); ++i) {
    if (desc.shape[i] < 0)
      return Status::error("tensor " + desc.str() + " has negative dimension " +
                           std::to_string(i));
  }
  // Zero dimensions are skipped so that no partial product computed by
  // numElements() or byteSize() can overflow, whatever the dimension order.
  for (int64_t dim : desc.shape) {
    if (dim != 0 && __builtin_mul_overflow(bytes, dim, &bytes))
      return Status::error("tensor " + desc.str() +
                           " is too large: its byte size overflows int64");
  }
  return Status::OK();
}

} // namespace kiln::runtime
