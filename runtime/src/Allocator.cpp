//===- Allocator.cpp ------------------------------------------------------===//

#include "kiln/runtime/Allocator.h"

#include <cstdlib>

namespace kiln::runtime {

Buffer::~Buffer() = default;
Allocator::~Allocator() = default;

namespace {

class HostBuffer final : public Buffer {
public:
  explicit HostBuffer(void *data) : data_(data) {}
  ~HostBuffer() override { std::free(data_); }
  HostBuffer(const HostBuffer &) = delete;
  HostBuffer &operator=(const HostBuffer &) = delete;

  void *data() override { return data_; }

private:
  void *data_;
};

} // namespace

StatusOr<std::shared_ptr<Buffer>>
HostAllocator::allocate(const TensorDesc &desc) {
  KILN_RETURN_IF_ERROR(validateTensorDesc(desc));
  // Round up to whole alignment units; zero-byte tensors still get one unit
  // so that data() is a real, unique pointer.
  uint64_t bytes = static_cast<uint64_t>(desc.byteSize());
  uint64_t rounded = bytes == 0 ? kAlignment
                                : (bytes + kAlignment - 1) / kAlignment *
                                      kAlignment;
  void *data = nullptr;
  if (rounded < bytes ||
      ::posix_memalign(&data, kAlignment, static_cast<size_t>(rounded)) != 0)
    return Status::error(StatusCode::OutOfMemory, "out of host memory allocating " +
                         std::to_string(bytes) + " bytes for " + desc.str());
  return std::shared_ptr<Buffer>(std::make_shared<HostBuffer>(data));
}

} // namespace kiln::runtime
