//===- FileUtil.cpp -------------------------------------------------------===//

#include "FileUtil.h"

#include <cerrno>
#include <cstring>
#include <unistd.h>

namespace kiln::runtime {

std::string errnoMessage() { return std::strerror(errno); }

Status writeAll(int fd, const uint8_t *data, size_t size) {
  while (size > 0) {
    ssize_t written = ::write(fd, data, size);
    if (written < 0) {
      if (errno == EINTR)
        continue;
      return Status::error("write failed: " + errnoMessage());
    }
    data += written;
    size -= static_cast<size_t>(written);
  }
  return Status::OK();
}

ScopedFd::~ScopedFd() {
  if (fd_ >= 0)
    ::close(fd_);
}

Status ScopedFd::close() {
  int fd = fd_;
  fd_ = -1;
  if (fd >= 0 && ::close(fd) != 0)
    return Status::error("close failed: " + errnoMessage());
  return Status::OK();
}

} // namespace kiln::runtime
