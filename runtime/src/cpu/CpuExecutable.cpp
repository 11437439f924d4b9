//===- CpuExecutable.cpp - dlopen a kernel library from memory -----------===//
//
// The artifact carries its kernels as .so bytes. We hand them to the dynamic
// loader through an anonymous memfd, so nothing is written to disk and a
// noexec /tmp does not matter; where memfd or /proc is unavailable we fall
// back to a temporary file in $TMPDIR that is unlinked as soon as it is
// loaded.
//
//===----------------------------------------------------------------------===//

#include "CpuExecutable.h"

#include "../FileUtil.h"

#include <cstdlib>
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

namespace kiln::runtime {

const char *hostCpuTarget() {
#if defined(__x86_64__)
  return "cpu-x86_64";
#elif defined(__aarch64__)
  return "cpu-aarch64";
#else
  return "cpu-unknown";
#endif
}

static std::string dlerrorMessage() {
  const char *message = dlerror();
  return message ? message : "unknown dynamic loader error";
}

static StatusOr<void *> dlopenPath(const std::string &path) {
  void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle)
    return Status::error("dlopen failed: " + dlerrorMessage());
  return handle;
}

/// Fails where this system has no memfd_create or no /proc. On success
/// `keptFd` is the memfd, which must stay open while the library is loaded:
/// the loader recognizes libraries by path, and a closed descriptor's number
/// (and so its /proc path) is reused by the next load.
static StatusOr<void *> loadViaMemfd(const std::vector<uint8_t> &library, int &keptFd) {
#ifdef MFD_CLOEXEC
  ScopedFd fd(memfd_create("kiln-kernels", MFD_CLOEXEC));
  if (fd.get() < 0)
    return Status::error("memfd_create failed: " + errnoMessage());
  std::string path = "/proc/self/fd/" + std::to_string(fd.get());
  if (::access(path.c_str(), R_OK) != 0)
    return Status::error("/proc is not mounted");
  KILN_RETURN_IF_ERROR(writeAll(fd.get(), library.data(), library.size())
                           .withContext("writing the kernel library to a "
                                        "memfd"));
  StatusOr<void *> handle = dlopenPath(path);
  if (handle.ok())
    keptFd = fd.release();
  return handle;
#else
  (void)library;
  return Status::error("memfd_create is not available");
#endif
}

static StatusOr<void *> loadViaTempFile(const std::vector<uint8_t> &library) {
  const char *dir = std::getenv("TMPDIR");
  std::string path =
      std::string(dir && *dir ? dir : "/tmp") + "/kiln-kernels-XXXXXX";
  ScopedFd fd(::mkstemp(path.data()));
  if (fd.get() < 0)
    return Status::error("cannot create temporary file '" + path +
                         "' for the kernel library: " + errnoMessage());
  Status status = writeAll(fd.get(), library.data(), library.size());
  if (status.ok())
    status = fd.close();
  StatusOr<void *> handle =
      status.ok() ? dlopenPath(path) : StatusOr<void *>(status);
  ::unlink(path.c_str());
  return handle;
}

/// Loads through a memfd first (nothing touches the disk, and it works where
/// the temporary directory is mounted noexec), then through a file in
/// $TMPDIR (else /tmp) where memfd or /proc is unavailable.
/// KILN_KERNEL_LOADING=memfd or =file allows only that way (for tests, and
/// to diagnose a system where one of them misbehaves).
static StatusOr<void *> loadLibrary(const std::vector<uint8_t> &library, int &keptFd) {
  const char *only = std::getenv("KILN_KERNEL_LOADING");
  std::string mode = only ? only : "";
  if (!mode.empty() && mode != "memfd" && mode != "file")
    return Status::error("KILN_KERNEL_LOADING is '" + mode + "'; use memfd or file");
  std::string memfdError;
  if (mode != "file") {
    StatusOr<void *> handle = loadViaMemfd(library, keptFd);
    if (handle.ok() || mode == "memfd")
      return handle;
    memfdError = handle.status().message();
  }
  StatusOr<void *> handle = loadViaTempFile(library);
  if (handle.ok() || mode == "file")
    return handle;
  return Status::error("neither through a memfd (" + memfdError + ") nor through a file (" +
                       handle.status().message() +
                       "); set TMPDIR to a directory that allows executable files");
}

StatusOr<std::unique_ptr<CpuExecutable>>
CpuExecutable::load(Device &device, const std::vector<uint8_t> &library,
                    const std::vector<KernelInfo> &kernels) {
  std::unique_ptr<CpuExecutable> executable(new CpuExecutable(device, kernels));
  if (kernels.empty())
    return executable;
  if (library.empty())
    return Status::error("cannot load kernels: the kernel library is empty");

  int keptFd = -1;
  StatusOr<void *> handle = loadLibrary(library, keptFd);
  if (!handle.ok())
    return handle.status().withContext("cannot load the kernel library");
  // Owns the handle from here on, so early returns dlclose it.
  executable->handle_ = *handle;
  executable->libraryFd_ = keptFd;

  executable->functions_.reserve(kernels.size());
  for (size_t i = 0; i < kernels.size(); ++i) {
    const KernelInfo &info = kernels[i];
    dlerror(); // Clear any stale error so the message below is ours.
    void *symbol = dlsym(*handle, info.symbol.c_str());
    if (!symbol)
      return Status::error("kernel " + std::to_string(i) + " ('" + info.name +
                           "'): the kernel library has no symbol '" +
                           info.symbol + "': " + dlerrorMessage());
    executable->functions_.push_back(reinterpret_cast<KernelFn>(symbol));
  }
  return executable;
}

CpuExecutable::~CpuExecutable() {
  if (handle_)
    dlclose(handle_);
  if (libraryFd_ < 0)
    return;
  // The loader finds libraries by path, and the memfd's /proc path names
  // the next descriptor with its number once this one closes: if the
  // library is still resident (the loader may keep one mapped), the
  // descriptor stays open, so that its path is never reused for another
  // library (a later load would get this one's code).
  std::string path = "/proc/self/fd/" + std::to_string(libraryFd_);
  if (void *resident = dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD)) {
    dlclose(resident);
    return;
  }
  ::close(libraryFd_);
}

} // namespace kiln::runtime
