#include "kiln/Target/CPU/TileSizes.h"

#include <algorithm>

using namespace kiln::cpu;

namespace {

/// Rows of the broadcast tile and of the dot-product tile, by architecture
/// and the elements a vector holds (the first entry that applies wins);
/// columns follow (two vectors, and as many as the rows).
struct TileEntry {
  const char *arch;
  int64_t minVectorLength;
  int64_t broadcastRows, dotRows;
};

// x86-64: AVX-512's 32 zmm registers hold 8 x 2 float accumulators beside
// B's two row vectors and the broadcast; AVX2's (and SSE's) 16 hold 6 x 2.
// AArch64: NEON's 32 registers hold 8 x 2.
constexpr TileEntry kTiles[] = {
    {"x86_64", 16, 8, 4},
    {"x86_64", 0, 6, 3},
    {"aarch64", 0, 8, 4},
};

} // namespace

MatmulTiles kiln::cpu::matmulTiles(kernel::TargetAttr target, mlir::Type element) {
  MatmulTiles tiles;
  tiles.vectorLength = target.vectorLength(element);
  // A CPU without an entry: as many rows as its registers hold beside the
  // two B vectors and the broadcast, at most 8.
  int64_t rows = std::clamp<int64_t>((target.getVectorRegisters() - 3) / 2, 1, 8);
  int64_t dotRows = std::max<int64_t>(1, rows / 2);
  for (const TileEntry &entry : kTiles)
    if (target.getArch() == entry.arch && tiles.vectorLength >= entry.minVectorLength) {
      rows = entry.broadcastRows;
      dotRows = entry.dotRows;
      break;
    }
  tiles.broadcast = {rows, 2 * tiles.vectorLength};
  tiles.dot = {dotRows, dotRows};
  return tiles;
}
