// Fused attention (kiln_kernel.attention) on the GPU: by query blocks
// through workgroup memory, or a query row per thread where the blocks do
// not fit. Internal to compiler/lib/Target/GPU.
#ifndef KILN_TARGET_GPU_ATTENTION_H
#define KILN_TARGET_GPU_ATTENTION_H

#include "Mapping.h"

#include "kiln/Dialect/Kernel/IR/KernelOps.h"

namespace kiln::gpu {

/// A workgroup's share of attention at a time: a block of queries against a
/// tile of keys.
struct AttentionBlockShape {
  int64_t queries, keys;
};

/// Whether `op` can go by query blocks: float elements, static head counts
/// and head sizes; and the largest block of those tried (32 x 32 down to
/// 4 x 4, no larger than the queries and keys where they are constants)
/// whose tiles fit in `sharedBytes` for `threads` threads.
std::optional<AttentionBlockShape> matchAttentionBlocks(kiln::kernel::AttentionOp op,
                                                        int64_t threads, int64_t sharedBytes);

/// Bytes of workgroup memory the blocks take: the query block, the key and
/// value tiles, the scores and three numbers per query.
int64_t attentionBlockBytes(kiln::kernel::AttentionOp op, AttentionBlockShape shape);

/// Computes `op` by query blocks (its (batch, head) pairs, the kernel's
/// rows, clamped to [begin, end) when set; of each, when `columns` is set,
/// the share of chunks [firstColumn, lastColumn) of its blocks split into
/// `columns` chunks, else all): for each block, all threads
/// load it into workgroup memory; then for each tile of keys they load the
/// key and value tiles, compute the block's scores (a few each), update
/// each query's running max and sum (a thread per query) and rescale and
/// add to the outputs (a few each, kept in registers). The [L, S] scores
/// are never stored. Returns the outermost loop.
mlir::Operation *tileAttention(kiln::kernel::AttentionOp op, AttentionBlockShape shape,
                               const ThreadValues &values, mlir::Value begin, mlir::Value end,
                               mlir::Value firstColumn, mlir::Value lastColumn,
                               int64_t columns);

/// Lowers `op` to a parallel loop over its query rows, (b * H + h, i), each
/// running the online softmax over the keys alone (running max and sum,
/// the output row rescaled in place). Returns the loop.
mlir::FailureOr<mlir::scf::ParallelOp> lowerAttentionByRows(kiln::kernel::AttentionOp op);

} // namespace kiln::gpu

#endif // KILN_TARGET_GPU_ATTENTION_H
