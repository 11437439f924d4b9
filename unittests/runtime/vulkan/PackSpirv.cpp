//===- PackSpirv.cpp - Packs SPIR-V binaries into a "vulkan-spirv" container
//
//   kiln-pack-spirv OUT A.spv B.spv ...
//
// Each module's entry point is its file's name without the extension: how
// the build turns the hand-written test kernels into an executable.
//
//===----------------------------------------------------------------------===//

#include "kiln/runtime/SpirvContainer.h"

#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>

using namespace kiln::runtime;

int main(int argc, char **argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: kiln-pack-spirv OUT A.spv [B.spv ...]\n");
    return 2;
  }
  std::vector<SpirvKernelBinary> kernels;
  for (int i = 2; i < argc; ++i) {
    std::string path = argv[i];
    std::ifstream in(path, std::ios::binary);
    std::vector<char> bytes((std::istreambuf_iterator<char>(in)), {});
    if (!in.good() && !in.eof()) {
      std::fprintf(stderr, "kiln-pack-spirv: cannot read %s\n", path.c_str());
      return 1;
    }
    if (bytes.empty() || bytes.size() % 4) {
      std::fprintf(stderr, "kiln-pack-spirv: %s is not SPIR-V (%zu bytes)\n", path.c_str(),
                   bytes.size());
      return 1;
    }
    SpirvKernelBinary kernel;
    size_t slash = path.find_last_of('/');
    std::string name = path.substr(slash == std::string::npos ? 0 : slash + 1);
    kernel.entryPoint = name.substr(0, name.find('.'));
    kernel.words.resize(bytes.size() / 4);
    for (size_t w = 0; w < kernel.words.size(); ++w)
      for (int b = 0; b < 4; ++b)
        kernel.words[w] |= uint32_t(static_cast<unsigned char>(bytes[4 * w + b])) << (8 * b);
    kernels.push_back(std::move(kernel));
  }
  std::vector<uint8_t> container = encodeSpirvContainer(kernels);
  // What the runtime will decode must decode.
  if (StatusOr<std::vector<SpirvKernelBinary>> check = decodeSpirvContainer(container); !check.ok()) {
    std::fprintf(stderr, "kiln-pack-spirv: %s\n", check.status().message().c_str());
    return 1;
  }
  std::ofstream out(argv[1], std::ios::binary);
  out.write(reinterpret_cast<const char *>(container.data()),
            static_cast<std::streamsize>(container.size()));
  return out.good() ? 0 : 1;
}
