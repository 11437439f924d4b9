// libFuzzer target: the artifact reader must reject any bytes it cannot
// parse with a Status, never crash, hang or read out of bounds.
#include "kiln/runtime/Artifact.h"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  kiln::runtime::Artifact artifact;
  kiln::runtime::Status status = kiln::runtime::parseArtifact(data, size, artifact);
  if (status.ok()) {
    // What parses must serialize back to the same bytes.
    std::vector<uint8_t> bytes = kiln::runtime::serializeArtifact(artifact);
    if (bytes.size() != size || !std::equal(bytes.begin(), bytes.end(), data))
      __builtin_trap();
  }
  return 0;
}
