//===- TileSizes.h - Micro-kernel tiles per CPU ---------------------------===//
//
// The one place a CPU's micro-kernel tiles are chosen, from its description
// (IREE's KernelDispatch getMatmulVectorSizes is the model). The passes that
// emit matmul micro-kernels (kiln-vectorize-matmul, kiln-lower-attention)
// and the pass that packs weights for them (kiln-pack-weights) all ask here,
// so a panel is packed as wide as the tile that reads it.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TARGET_CPU_TILESIZES_H
#define KILN_TARGET_CPU_TILESIZES_H

#include "kiln/Dialect/Kernel/IR/KernelOps.h"

#include <cstdint>

namespace kiln::cpu {

/// Rows and columns of C one micro-kernel tile keeps in registers.
struct MatmulTile {
  int64_t rows = 0, columns = 0;
};

/// A CPU's matmul tiles for one element type.
struct MatmulTiles {
  int64_t vectorLength = 0; // elements per vector register
  /// Broadcast A[i, k] against rows of B (or of its packed panels): C's tile
  /// is `rows` x two vectors; B's panels are `columns` wide.
  MatmulTile broadcast;
  /// Dot products along k (B given as [N, K], not packed): `rows` x
  /// `columns` vector accumulators, reduced horizontally at the end.
  MatmulTile dot;
};

/// The tiles for `element` (f32 or f64) on `target`; a vectorLength below 2
/// means the target has no vectors for it.
MatmulTiles matmulTiles(kernel::TargetAttr target, mlir::Type element);

} // namespace kiln::cpu

#endif
