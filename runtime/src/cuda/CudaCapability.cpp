//===- CudaCapability.cpp - Which NVIDIA executables run on which GPU -----===//

#include "kiln/runtime/CudaCapability.h"

#include "CudaApi.h"

#include "kiln/runtime/GpuImageContainer.h"

#include <cctype>

namespace kiln::runtime {

namespace {

/// "sm_90a" as (9, 0, true); nullopt for anything else.
struct Chip {
  int major, minor;
  bool archSpecific;
};
std::optional<Chip> parseChip(std::string_view chip) {
  if (chip.substr(0, 3) != "sm_")
    return std::nullopt;
  chip.remove_prefix(3);
  bool archSpecific = !chip.empty() && chip.back() == 'a';
  if (archSpecific)
    chip.remove_suffix(1);
  if (chip.size() < 2 || chip.size() > 3)
    return std::nullopt;
  for (char c : chip)
    if (!std::isdigit(static_cast<unsigned char>(c)))
      return std::nullopt;
  int number = std::stoi(std::string(chip));
  return Chip{number / 10, number % 10, archSpecific};
}

} // namespace

StatusOr<std::pair<CudaCapability, std::string>> findCudaGpu() {
  StatusOr<std::shared_ptr<const cuda::CudaApi>> loaded = cuda::CudaApi::load();
  if (!loaded.ok())
    return loaded.status();
  StatusOr<cuda::FirstGpu> gpu = cuda::findFirstGpu(**loaded);
  if (!gpu.ok())
    return gpu.status();
  return std::make_pair(CudaCapability{gpu->major, gpu->minor}, gpu->name);
}

std::string cudaChipFor(CudaCapability capability) {
  if (capability.major == 9 && capability.minor == 0)
    return "sm_90a";
  if (capability.major >= 9)
    return "sm_90";
  if (capability.major == 8)
    return "sm_80";
  return "";
}

std::optional<int> cudaFormatDistance(std::string_view format, CudaCapability capability) {
  if (format.substr(0, kCudaFormatPrefix.size()) != kCudaFormatPrefix)
    return std::nullopt;
  std::optional<Chip> chip = parseChip(format.substr(kCudaFormatPrefix.size()));
  if (!chip)
    return std::nullopt;
  int gpu = capability.major * 10 + capability.minor;
  int compiled = chip->major * 10 + chip->minor;
  if (chip->archSpecific)
    return compiled == gpu ? std::optional<int>(0) : std::nullopt;
  if (compiled > gpu)
    return std::nullopt;
  // The best plain chip is one step behind the "a" chip of the same
  // capability, so that sm_90a wins on 9.0.
  return 1 + (gpu - compiled);
}

} // namespace kiln::runtime
