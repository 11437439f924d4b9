//===- FileUtil.h - POSIX file helpers shared by the runtime -------------===//

#ifndef KILN_RUNTIME_SRC_FILEUTIL_H
#define KILN_RUNTIME_SRC_FILEUTIL_H

#include "kiln/runtime/Status.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace kiln::runtime {

/// strerror(errno) as a std::string, read before anything can clobber errno.
std::string errnoMessage();

/// Writes all of `data` to `fd`, retrying short writes and EINTR.
Status writeAll(int fd, const uint8_t *data, size_t size);

/// Reads a whole regular file. Messages do not name the file: callers add
/// that context.
Status readFileBytes(const std::string &path, std::vector<uint8_t> &bytes);

/// Writes to a temporary file beside `path`, then renames it into place, so
/// readers never see a partially written file.
Status writeFileAtomically(const std::string &path,
                           const std::vector<uint8_t> &bytes);

/// Closes `fd` on scope exit unless released.
class ScopedFd {
public:
  explicit ScopedFd(int fd = -1) : fd_(fd) {}
  ~ScopedFd();
  ScopedFd(const ScopedFd &) = delete;
  ScopedFd &operator=(const ScopedFd &) = delete;

  int get() const { return fd_; }
  /// Gives up ownership: the caller closes the descriptor.
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }
  /// Closes now and reports the error, which matters after writes.
  Status close();

private:
  int fd_;
};

} // namespace kiln::runtime

#endif // KILN_RUNTIME_SRC_FILEUTIL_H
