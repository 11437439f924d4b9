// libFuzzer target: kiln-run's input reader (.npy and numpy.savez .npz)
// must reject malformed files with a Status, never crash or over-read.
#include "kiln/tooling/Npy.h"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  kiln::runtime::NamedArray array;
  if (kiln::runtime::parseNpy(data, size, array).ok() &&
      array.data.size() != static_cast<size_t>(array.desc.byteSize()))
    __builtin_trap(); // a parsed array must hold exactly its bytes
  std::vector<kiln::runtime::NamedArray> arrays;
  (void)kiln::runtime::parseNpz(data, size, arrays);
  return 0;
}
