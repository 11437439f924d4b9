// A code object per kernel from MLIR's ROCDL target (ld.lld and the ROCm
// device libraries from the toolkit folder), in the runtime's GPU image
// container.
#include "kiln/Target/ROCm/RocmTarget.h"

#include "kiln/runtime/GpuImageContainer.h"

#include "kiln/Target/GPU/GpuBinaries.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"

#include <chrono>
#include <map>

using namespace mlir;

namespace {

using kiln::gpu::joinedPath;

bool isToolkit(llvm::StringRef root) {
  return llvm::sys::fs::exists(joinedPath(root, {"llvm", "bin", "ld.lld"})) &&
         llvm::sys::fs::is_directory(joinedPath(root, {"amdgcn", "bitcode"}));
}

} // namespace

llvm::Expected<std::string> kiln::rocm::findRocmToolkit() {
  if (std::optional<std::string> chosen = llvm::sys::Process::GetEnv("KILN_ROCM_PATH")) {
    if (!isToolkit(*chosen))
      return llvm::createStringError("KILN_ROCM_PATH is '" + *chosen +
                                     "', which lacks llvm/bin/ld.lld or amdgcn/bitcode");
    return *chosen;
  }
  for (std::optional<std::string> root :
       {llvm::sys::Process::GetEnv("ROCM_PATH"), std::optional<std::string>("/opt/rocm")})
    if (root && isToolkit(*root))
      return *root;
  // Debian's pieces, linked into the layout MLIR expects.
  const std::string lld = "/usr/lib/llvm-22/bin/ld.lld";
  const std::string bitcode = "/usr/lib/x86_64-linux-gnu/amdgcn/bitcode";
  if (!llvm::sys::fs::exists(lld) || !llvm::sys::fs::is_directory(bitcode))
    return llvm::createStringError(
        "no ROCm toolkit found (ld.lld and the ROCm device libraries are needed to compile for "
        "AMD GPUs): set KILN_ROCM_PATH or ROCM_PATH to one, install ROCm in /opt/rocm, or "
        "install Debian's lld-22 and rocm-device-libs (apt install lld-22 rocm-device-libs)");
  llvm::SmallString<256> cache;
  if (std::optional<std::string> xdg = llvm::sys::Process::GetEnv("XDG_CACHE_HOME"))
    cache = *xdg;
  else if (!llvm::sys::path::home_directory(cache))
    return llvm::createStringError("no home folder for Kiln's ROCm toolkit links; set KILN_ROCM_PATH");
  std::string root = joinedPath(cache, {"kiln", "rocm-toolkit"});
  if (!isToolkit(root)) {
    for (auto [link, target] : {std::pair{joinedPath(root, {"llvm", "bin", "ld.lld"}), lld},
                                {joinedPath(root, {"amdgcn", "bitcode"}), bitcode}}) {
      (void)llvm::sys::fs::create_directories(llvm::sys::path::parent_path(link));
      (void)llvm::sys::fs::remove(link);
      if (std::error_code error = llvm::sys::fs::create_link(target, link))
        return llvm::createStringError("cannot link " + link + " to " + target + ": " +
                                       error.message());
    }
  }
  return root;
}

llvm::Expected<kiln::SerializedKernels> kiln::rocm::serializeRocdlKernels(ModuleOp kernels,
                                                                          bool keepText) {
  SerializedKernels result;
  llvm::Expected<std::string> toolkit = findRocmToolkit();
  if (!toolkit)
    return toolkit.takeError();
  kiln::gpu::registerGpuTranslations(*kernels.getContext());
  const std::string failed = "lowering the kernels to AMD GPU code failed";

  auto start = std::chrono::steady_clock::now();
  std::map<std::string, std::string> assembly;
  if (keepText) {
    OwningOpRef<ModuleOp> copy(kernels.clone());
    if (llvm::Error error = kiln::gpu::runReportingErrors(
            *copy, "gpu-module-to-binary{format=isa toolkit=" + *toolkit + "}", failed))
      return std::move(error);
    assembly = kiln::gpu::binaryObjects(*copy);
  }
  if (llvm::Error error = kiln::gpu::runReportingErrors(
          kernels, "gpu-module-to-binary{format=bin toolkit=" + *toolkit + "}", failed))
    return std::move(error);
  std::vector<runtime::GpuKernelImage> images;
  for (auto &[name, object] : kiln::gpu::binaryObjects(kernels)) {
    KernelCode code;
    code.name = name;
    code.symbol = name;
    if (keepText) {
      code.assembly = assembly[name];
      code.assemblyExtension = "amdgcn.s";
      code.binary.assign(object.begin(), object.end());
      code.binaryExtension = "hsaco";
    }
    result.kernels.push_back(std::move(code));
    images.push_back({name, std::vector<uint8_t>(object.begin(), object.end())});
  }
  result.stepTimesMs.push_back(
      {"hsaco", std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count()});
  result.kernelsCompiled = static_cast<int>(images.size());
  result.executable = runtime::encodeGpuImageContainer(images);
  return result;
}
