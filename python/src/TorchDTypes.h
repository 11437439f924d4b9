// The runtime's dtypes and torch's scalar types, both ways: for the files
// that pass tensors to the runtime (the compiled-graph bridge and the eager
// device's kernels).
#ifndef KILN_PYTHON_TORCHDTYPES_H
#define KILN_PYTHON_TORCHDTYPES_H

#include "kiln/runtime/DType.h"

#include <c10/core/ScalarType.h>

#include <optional>

namespace kiln::python {
namespace rt = kiln::runtime;

inline std::optional<rt::DType> dtypeOf(at::ScalarType type) {
  switch (type) {
  case at::kFloat: return rt::DType::F32;
  case at::kDouble: return rt::DType::F64;
  case at::kLong: return rt::DType::I64;
  case at::kInt: return rt::DType::I32;
  case at::kChar: return rt::DType::I8;
  case at::kByte: return rt::DType::U8;
  case at::kBool: return rt::DType::Bool;
  case at::kHalf: return rt::DType::F16;
  case at::kBFloat16: return rt::DType::BF16;
  default: return std::nullopt;
  }
}

inline at::ScalarType scalarTypeOf(rt::DType dtype) {
  switch (dtype) {
  case rt::DType::F32: return at::kFloat;
  case rt::DType::F64: return at::kDouble;
  case rt::DType::I64: return at::kLong;
  case rt::DType::I32: return at::kInt;
  case rt::DType::I8: return at::kChar;
  case rt::DType::U8: return at::kByte;
  case rt::DType::Bool: return at::kBool;
  case rt::DType::F16: return at::kHalf;
  case rt::DType::BF16: return at::kBFloat16;
  }
  return at::kFloat;
}

} // namespace kiln::python

#endif
