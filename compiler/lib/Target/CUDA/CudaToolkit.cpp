// Finding the CUDA toolkit: ptxas, fatbinary and libdevice.
#include "kiln/Target/CUDA/CudaTarget.h"

#include "kiln/Target/GPU/GpuBinaries.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"

#include <algorithm>

using namespace kiln;

namespace {

using kiln::gpu::joinedPath;

/// What `root` lacks of a toolkit, or "" when it is one.
std::string missingFrom(llvm::StringRef root) {
  std::string missing;
  for (const std::string &path : {joinedPath(root, {"bin", "ptxas"}), joinedPath(root, {"bin", "fatbinary"}),
                                  joinedPath(root, {"nvvm", "libdevice", "libdevice.10.bc"})})
    if (!llvm::sys::fs::exists(path))
      missing += (missing.empty() ? "" : ", ") + path;
  return missing;
}

/// The /usr/local/cuda-X.Y folders, newest first.
std::vector<std::string> versionedInstalls() {
  std::vector<std::string> found;
  std::error_code error;
  for (llvm::sys::fs::directory_iterator it("/usr/local", error), end; it != end && !error;
       it.increment(error))
    if (llvm::sys::path::filename(it->path()).starts_with("cuda-"))
      found.push_back(it->path());
  std::sort(found.begin(), found.end(), [](const std::string &a, const std::string &b) {
    return llvm::sys::path::filename(a).compare_numeric(llvm::sys::path::filename(b)) > 0;
  });
  return found;
}

/// site-packages/nvidia/cu13 under a Python prefix (lib/python3.*/).
std::vector<std::string> wheelInstalls(llvm::StringRef prefix) {
  std::vector<std::string> found;
  std::error_code error;
  std::string lib = joinedPath(prefix, {"lib"});
  for (llvm::sys::fs::directory_iterator it(lib, error), end; it != end && !error;
       it.increment(error))
    if (llvm::sys::path::filename(it->path()).starts_with("python3"))
      found.push_back(joinedPath(it->path(), {"site-packages", "nvidia", "cu13"}));
  return found;
}

} // namespace

llvm::Expected<cuda::CudaToolkit> cuda::findCudaToolkit() {
  auto toolkit = [](const std::string &root) {
    return CudaToolkit{root, joinedPath(root, {"bin", "ptxas"}), joinedPath(root, {"bin", "fatbinary"})};
  };
  if (std::optional<std::string> chosen = llvm::sys::Process::GetEnv("KILN_CUDA_PATH")) {
    std::string missing = missingFrom(*chosen);
    if (!missing.empty())
      return llvm::createStringError("KILN_CUDA_PATH is '" + *chosen +
                                     "', which is not a CUDA toolkit: it lacks " + missing);
    return toolkit(*chosen);
  }
  std::vector<std::string> candidates;
  for (const char *variable : {"CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"})
    if (std::optional<std::string> value = llvm::sys::Process::GetEnv(variable))
      candidates.push_back(*value);
  candidates.push_back("/usr/local/cuda");
  for (std::string &install : versionedInstalls())
    candidates.push_back(std::move(install));
  // The wheels' folder as the kiln package found it on sys.path.
  if (std::optional<std::string> wheels = llvm::sys::Process::GetEnv("KILN_CUDA_WHEELS"))
    candidates.push_back(*wheels);
  std::vector<std::string> prefixes;
  if (std::optional<std::string> venv = llvm::sys::Process::GetEnv("VIRTUAL_ENV"))
    prefixes.push_back(*venv);
  // This process's Python (a venv's bin/python -> the venv).
  std::string executable = llvm::sys::fs::getMainExecutable(nullptr, nullptr);
  prefixes.push_back(std::string(llvm::sys::path::parent_path(llvm::sys::path::parent_path(executable))));
  for (const std::string &prefix : prefixes)
    for (std::string &install : wheelInstalls(prefix))
      candidates.push_back(std::move(install));
  for (const std::string &candidate : candidates)
    if (missingFrom(candidate).empty())
      return toolkit(candidate);
  std::string looked;
  for (const std::string &candidate : candidates)
    looked += "\n  " + candidate;
  return llvm::createStringError(
      "no CUDA toolkit found (ptxas, fatbinary and libdevice are needed to compile for NVIDIA "
      "GPUs): set KILN_CUDA_PATH to one, install one in /usr/local/cuda, or pip install "
      "nvidia-cuda-nvcc nvidia-nvvm (site-packages/nvidia/cu13). Looked in:" + looked);
}
