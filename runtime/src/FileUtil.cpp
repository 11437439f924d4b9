//===- FileUtil.cpp -------------------------------------------------------===//

#include "FileUtil.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
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

Status readFileBytes(const std::string &path, std::vector<uint8_t> &bytes) {
  ScopedFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0)
    return Status::error("cannot open: " + errnoMessage());
  struct stat info;
  if (::fstat(fd.get(), &info) != 0)
    return Status::error("cannot stat: " + errnoMessage());
  if (!S_ISREG(info.st_mode))
    return Status::error("not a regular file");
  bytes.resize(static_cast<size_t>(info.st_size));
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t got = ::read(fd.get(), bytes.data() + done, bytes.size() - done);
    if (got < 0 && errno == EINTR)
      continue;
    if (got < 0)
      return Status::error("read failed: " + errnoMessage());
    if (got == 0)
      break; // The file shrank while we read it; parsing reports truncation.
    done += static_cast<size_t>(got);
  }
  bytes.resize(done);
  return Status::OK();
}

Status writeFileAtomically(const std::string &path,
                           const std::vector<uint8_t> &bytes) {
  // The temporary lives beside `path` so that rename() stays within one file
  // system and is atomic.
  std::string tmpPath = path + ".tmp-XXXXXX";
  ScopedFd fd(::mkstemp(tmpPath.data()));
  if (fd.get() < 0)
    return Status::error("cannot create temporary file '" + tmpPath +
                         "': " + errnoMessage());
  Status status = Status::OK();
  // mkstemp creates 0600 files; artifacts and arrays are meant to be shared
  // like any other build output.
  if (::fchmod(fd.get(), 0644) != 0)
    status = Status::error("chmod failed: " + errnoMessage());
  if (status.ok())
    status = writeAll(fd.get(), bytes.data(), bytes.size());
  if (status.ok() && ::fsync(fd.get()) != 0)
    status = Status::error("fsync failed: " + errnoMessage());
  if (status.ok())
    status = fd.close();
  if (status.ok() && ::rename(tmpPath.c_str(), path.c_str()) != 0)
    status = Status::error("cannot rename '" + tmpPath +
                           "' into place: " + errnoMessage());
  if (!status.ok())
    ::unlink(tmpPath.c_str());
  return status;
}

} // namespace kiln::runtime
