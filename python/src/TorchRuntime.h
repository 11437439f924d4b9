// What the files that pass tensors to the runtime share (the compiled-graph
// bridge and the eager device's kernels): the runtime's dtypes and torch's
// scalar types, both ways, and a tensor as a runtime buffer.
#ifndef KILN_PYTHON_TORCHRUNTIME_H
#define KILN_PYTHON_TORCHRUNTIME_H

#include "kiln/runtime/Allocator.h"
#include "kiln/runtime/Communicator.h"
#include "kiln/runtime/DType.h"

#include <ATen/core/Tensor.h>
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

/// A tensor as a buffer the runtime allocated: outputs are returned as the
/// tensors, without a copy.
class TorchBuffer : public rt::Buffer {
public:
  explicit TorchBuffer(at::Tensor tensor) : tensor(std::move(tensor)) {}
  void *data() override {
    // Empty tensors have no storage; kernels never touch it, but the runtime
    // wants every buffer to have an address.
    static int64_t emptyStorage;
    void *data = tensor.data_ptr();
    return data ? data : &emptyStorage;
  }
  at::Tensor tensor;
};

/// Collectives of compiled graphs on torch's process groups, resolved by
/// name (TorchCommunicator.cpp).
rt::Communicator &torchCommunicator();

} // namespace kiln::python

#endif
