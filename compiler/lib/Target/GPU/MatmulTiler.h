// What the tiled matmul strategies share (MatmulTiles.cpp by threads,
// WarpMatmul.cpp by tensor-core warps): the tiles in workgroup memory, the
// loops over batches and output tiles, and the loads of a stage. Internal
// to compiler/lib/Target/GPU.
#ifndef KILN_TARGET_GPU_MATMULTILER_H
#define KILN_TARGET_GPU_MATMULTILER_H

#include "Mapping.h"

namespace kiln::gpu {

class MatmulTiler {
public:
  /// Allocates the tiles and opens the loops: after it, `b` is inside the
  /// loop over a workgroup's output tiles, at (row0, column0).
  MatmulTiler(TiledMatmul &matmul, const ThreadValues &values, mlir::Value begin,
              mlir::Value end);

  mlir::Value index(int64_t value);
  mlir::Value below(mlir::Value value, mlir::Value bound);

  /// Maps the row dimensions' induction variables to their values at
  /// flattened row `flat`.
  void mapRows(mlir::Value flat, mlir::IRMapping &at);
  /// The output's column index at tile column `offset` (a thread's, from 0).
  mlir::Value column(mlir::Value offset);
  /// The accumulator's indices at `at` (rows and the column mapped).
  llvm::SmallVector<mlir::Value> outputIndices(const mlir::IRMapping &at);
  /// The output at `at`, when `inside`; else zero.
  mlir::Value loadOutput(const mlir::IRMapping &at, mlir::Value inside);
  /// Stores `value` to the output at `at` when `inside`.
  void storeOutput(mlir::Value value, const mlir::IRMapping &at, mlir::Value inside);

  /// All threads load stage k0's tiles into workgroup memory (row tiles
  /// [rows x depth], column tiles [depth x columns], row-major), then a
  /// barrier. Elements outside the loop's bounds are zeros with
  /// `zeroOutside`, else left unloaded (for a strategy that reads none).
  void loadStage(mlir::Value k0, bool zeroOutside);

  /// The loop over the stages along k (k0 its induction variable),
  /// carrying `initial`; its body is empty, for the caller to fill.
  mlir::scf::ForOp openStages(mlir::ValueRange initial);

  /// Erases the matmul's loop; returns the outermost loop made.
  mlir::Operation *finish();

  TiledMatmul &matmul;
  const ThreadValues &values;
  mlir::OpBuilder b;
  mlir::Location loc;
  mlir::scf::ForOp nest;
  Accumulator &accumulator;
  llvm::SmallVector<mlir::Value> rowTiles, columnTiles;
  /// The loop's mapping outside the tiles (its batch dimensions').
  mlir::IRMapping outer;
  /// The tile's first flattened row and first column; the flattened row
  /// count; the column bound and step; the k bound and step.
  mlir::Value row0, column0, flatRows, columnEnd, columnStep, kEnd, kStep;

private:
  mlir::Value sequential(mlir::Value lb, mlir::Value ub, mlir::Value step);

  llvm::SmallVector<mlir::Value> rowTrips;
  mlir::Operation *outermost = nullptr;
};

} // namespace kiln::gpu

#endif // KILN_TARGET_GPU_MATMULTILER_H
