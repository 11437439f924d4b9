//===- DType.cpp ----------------------------------------------------------===//

#include "kiln/runtime/DType.h"

namespace kiln::runtime {

bool isKnownDType(uint8_t raw) {
  return raw <= static_cast<uint8_t>(DType::U8);
}

size_t dtypeSize(DType dtype) {
  switch (dtype) {
  case DType::F32:
  case DType::I32:
    return 4;
  case DType::I64:
  case DType::F64:
    return 8;
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
  }
  return "unknown";
}

bool parseDType(std::string_view name, DType &out) {
  for (DType dtype :
       {DType::F32, DType::I64, DType::Bool, DType::F64, DType::I32, DType::I8, DType::U8}) {
    if (name == dtypeName(dtype)) {
      out = dtype;
      return true;
    }
  }
  return false;
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
