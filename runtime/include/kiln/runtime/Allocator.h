//===- Allocator.h - Memory for intermediate and output tensors ----------===//
//
// Program::run asks an Allocator for every Alloc buffer, so a host (e.g. the
// Python extension) can hand out memory it already owns, such as tensors from
// torch's caching allocator.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_ALLOCATOR_H
#define KILN_RUNTIME_ALLOCATOR_H

#include "kiln/runtime/DType.h"
#include "kiln/runtime/Status.h"

#include <cstddef>
#include <memory>

namespace kiln::runtime {

class Buffer {
public:
  virtual ~Buffer();
  /// Never null, even for zero-byte tensors, so kernels and hosts need no
  /// special case.
  virtual void *data() = 0;
};

class Allocator {
public:
  virtual ~Allocator();
  virtual StatusOr<std::shared_ptr<Buffer>> allocate(const TensorDesc &desc) = 0;
};

/// Plain host memory, aligned for the widest vector loads kernels use.
class HostAllocator : public Allocator {
public:
  static constexpr size_t kAlignment = 64;
  StatusOr<std::shared_ptr<Buffer>> allocate(const TensorDesc &desc) override;
};

} // namespace kiln::runtime

#endif // KILN_RUNTIME_ALLOCATOR_H
