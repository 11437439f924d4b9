// What the GPU mapping (kiln-gpu-map-workgroups) recognizes in a kernel's
// loop nests and how its strategies share a workgroup's threads: internal
// to compiler/lib/Target/GPU.
#ifndef KILN_TARGET_GPU_MAPPING_H
#define KILN_TARGET_GPU_MAPPING_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"

#include <optional>

namespace kiln::gpu {

/// What every thread of a workgroup computes once at its start.
struct ThreadValues {
  mlir::Value thread;        // gpu.thread_id x
  mlir::Value threadCount;   // the workgroup size, a constant
  mlir::Value isFirstThread; // thread == 0
  int64_t threads;
  /// Whether the target has subgroup operations (gpu.subgroup_reduce and
  /// the subgroup ids), which reductions then combine their partials with.
  bool subgroups = false;
};

/// Whether `op` (itself; not what it holds) may write memory.
bool writes(mlir::Operation *op);

/// Whether `op` or anything inside it may write memory.
bool writesAnything(mlir::Operation *op);

/// Whether distinct iterations of `loop` write distinct elements: every
/// store inside indexes with all of the loop's induction variables directly
/// (the other indices being loop-invariant or inner loops' variables), as
/// the loops of a linalg op's outputs do. A scatter's stores, through
/// computed indices, do not.
bool iterationsWriteApart(mlir::scf::ParallelOp loop);

/// A reduction of a loop nest into accumulators, as a linalg reduction
/// becomes: a perfect nest of scf.for whose innermost body, for each
/// accumulator, loads it (`out[indices]`, the same indices throughout the
/// nest), combines it with a value that does not depend on it, and stores
/// the result back, writing nothing else but element stores (below). A
/// layer norm's statistics have two accumulators (the sum and the sum of
/// squares); a sum, one.
///
/// A selection keeps one of the iterations instead (an argmax's value and
/// index): every accumulator stores `select(c, candidate, accumulator)`
/// with one condition c, computed from the candidates and the accumulators
/// alone, the candidates from neither accumulator.
struct Accumulator {
  mlir::memref::LoadOp load;
  mlir::memref::StoreOp store;
  mlir::Operation *combine;
  /// The combine's identity where reordering it is allowed, else null.
  mlir::TypedAttr identity;
  /// In a selection, the value the accumulator takes when c holds.
  mlir::Value candidate;

  mlir::Type type() const { return mlir::memref::LoadOp(load).getType(); }
};
struct Reduction {
  llvm::SmallVector<mlir::scf::ForOp> nest; // outermost first
  llvm::SmallVector<Accumulator> accumulators;
  /// Stores beside the accumulators that write an element per iteration (a
  /// softmax's exponentials, stored as their sum is taken), from values
  /// that do not read the accumulators, to buffers the nest does not read.
  llvm::SmallVector<mlir::memref::StoreOp> elementStores;
  /// A selection's condition c (null for combines), and the ops of the
  /// innermost body that compute it from the candidates and accumulators.
  mlir::Value selectCondition;
  llvm::SmallVector<mlir::Operation *> conditionOps;

  /// Whether the accumulators' combines may be reordered (each has an
  /// identity): what spreading the reduction over threads needs.
  bool reorderable() const;
  /// Whether it is a selection: its threads may share it in order (a
  /// chunk of iterations each, the chunks' choices folded in order).
  bool selects() const { return bool(selectCondition); }
  /// Whether the workgroup's threads may share it: reordered or in order.
  bool spreadable() const { return reorderable() || selects(); }
};

std::optional<Reduction> matchReduction(mlir::scf::ForOp outer);

/// The identity of a combining op of `type` values, when reordering it is
/// allowed: float sums and products only with the reassoc flag (the CPU
/// kernels reassociate them too); min, max and the bitwise ops always.
mlir::TypedAttr reorderableIdentity(mlir::Operation *combine, mlir::Type type);

/// `store`'s accumulator, when it stores `combine(load, v)` (a load of the
/// same element, used only there) or `select(c, candidate, load)`: the
/// combine's identity set where it may be reordered.
std::optional<Accumulator> matchAccumulator(mlir::memref::StoreOp store);

/// `combine` cloned from `accumulator`, with `accumulated` where it takes
/// the accumulator and `value` in its other operand.
mlir::Value combineWith(mlir::OpBuilder &b, const Accumulator &accumulator,
                        mlir::Value accumulated, mlir::Value value);

/// A loop over rows that reduces each (a softmax's max and sum, a norm's
/// statistics, a matmul's dot products): a top-level scf.parallel whose
/// body is index arithmetic and one reduction nest, its accumulators
/// indexed by the rows.
std::optional<Reduction> matchRowReduction(mlir::scf::ParallelOp loop);

/// a * b for non-negative a and b, at most INT64_MAX.
int64_t saturatingMultiply(int64_t a, int64_t b);

/// The trips of a loop with constant bounds.
std::optional<int64_t> constantTrips(mlir::OpFoldResult lb, mlir::OpFoldResult ub,
                                     mlir::OpFoldResult step);

/// The iterations of a reduction's nest, when its bounds are constants.
std::optional<int64_t> constantTrips(const Reduction &reduction);

/// Narrows the first dimension of `loop` to [lb, ub) ∩ [begin, end).
void clampFirstDim(mlir::scf::ParallelOp loop, mlir::Value begin, mlir::Value end);

/// The trips of loops with bounds `lbs`, `ubs` and `steps` (an empty range
/// where an upper bound is below its lower one), and their product in
/// `total`.
llvm::SmallVector<mlir::Value> tripCounts(mlir::OpBuilder &b, mlir::Location loc,
                                          mlir::ValueRange lbs, mlir::ValueRange ubs,
                                          mlir::ValueRange steps, mlir::Value &total);
/// The same for `loop`'s dimensions [first, last).
llvm::SmallVector<mlir::Value> tripCounts(mlir::OpBuilder &b, mlir::Location loc,
                                          mlir::scf::ParallelOp loop, unsigned first,
                                          unsigned last, mlir::Value &total);

/// The induction variables of loops with lower bounds `lbs` and `steps` at
/// linear position `flat` of their iteration space (`trips` from
/// tripCounts), the last loop fastest (consecutive positions, consecutive
/// elements).
llvm::SmallVector<mlir::Value> delinearize(mlir::OpBuilder &b, mlir::Location loc,
                                           mlir::Value flat, llvm::ArrayRef<mlir::Value> trips,
                                           mlir::ValueRange lbs, mlir::ValueRange steps);
/// The same for `loop`'s dimensions [first, first + trips.size()).
llvm::SmallVector<mlir::Value> delinearize(mlir::OpBuilder &b, mlir::Location loc,
                                           mlir::Value flat, llvm::ArrayRef<mlir::Value> trips,
                                           mlir::scf::ParallelOp loop, unsigned first);

/// The bounds of the calling thread's chunk of a loop from `lb` to `ub` by
/// `step`: the t-th of T runs of ceil(trips / T) iterations, so that the
/// chunks follow each other in thread order.
std::pair<mlir::Value, mlir::Value> chunkBounds(mlir::OpBuilder &b, mlir::Location loc,
                                                mlir::Value lb, mlir::Value ub, mlir::Value step,
                                                const ThreadValues &values);

/// The buffer `memref` views (through subviews, casts, reshapes), itself
/// when it is not a view.
mlir::Value rootBuffer(mlir::Value memref);

/// A buffer of `elements` values of `type` in workgroup memory.
mlir::Value workgroupBuffer(mlir::OpBuilder &b, mlir::Location loc, mlir::Type type,
                            int64_t elements);

/// A kernel's workgroup memory. Its top-level ops run one after another
/// with a barrier after each, so an op may take buffers that earlier ops
/// took, of the same element type and size: a kernel of many reductions
/// needs the partials of one.
class WorkgroupMemory {
public:
  /// `bytes` of workgroup memory; buffers are allocated at the start of
  /// `entry`, the kernel's body, where they dominate every op.
  WorkgroupMemory(mlir::Block *entry, int64_t bytes) : entry(entry), left(bytes) {}

  /// Bytes not yet taken.
  int64_t bytesLeft() const { return left; }
  /// Takes `bytes` for buffers of the caller's own, never shared.
  void reserve(int64_t bytes) { left -= bytes; }
  /// Starts the next top-level op: the buffers earlier ops took are free
  /// for it.
  void startOp() { takenByOp.clear(); }
  /// The bytes that take(types, elements) would add.
  int64_t bytesToTake(llvm::ArrayRef<mlir::Type> types, int64_t elements) const;
  /// Whether take(types, elements) fits in what is left.
  bool fits(llvm::ArrayRef<mlir::Type> types, int64_t elements) const {
    return bytesToTake(types, elements) <= left;
  }
  /// A buffer of `elements` values of each of `types` for the current op,
  /// free ones reused.
  llvm::SmallVector<mlir::Value> take(mlir::Location loc, llvm::ArrayRef<mlir::Type> types,
                                      int64_t elements);

private:
  using BufferShape = std::pair<mlir::Type, int64_t>;
  mlir::Block *entry;
  mlir::Operation *lastAllocation = nullptr;
  int64_t left;
  llvm::DenseMap<BufferShape, llvm::SmallVector<mlir::Value>> pool;
  llvm::DenseMap<BufferShape, unsigned> takenByOp;
};

/// Nested scf.for over `loop`'s dimensions [0, count) with its bounds, run
/// by every thread alike; `mapping` takes each induction variable to its
/// loop's and `b` is left inside the innermost. Returns the outermost, or
/// null when count is 0.
mlir::Operation *serialLoops(mlir::OpBuilder &b, mlir::Location loc, mlir::scf::ParallelOp loop,
                             unsigned count, mlir::IRMapping &mapping);

/// The element types of a reduction's partials in workgroup memory, a
/// buffer of one per thread each (booleans as 32-bit integers: Vulkan's
/// workgroup memory has no 1-bit elements).
llvm::SmallVector<mlir::Type> partialTypes(const Reduction &reduction);

/// Whether reduceAcrossThreads and reduceRowsAcrossThreads combine the
/// reduction's partials by subgroups (else by the tree).
bool combinesBySubgroups(const Reduction &reduction, const ThreadValues &values);

/// A reduction into one element over all threads: each folds every T-th
/// iteration of the nest's outer loop into partials from the combines'
/// identities, then the partials combine across the threads, and one
/// thread folds the total into each accumulator. With subgroups and 32-bit
/// combines that have a subgroup reduction, each subgroup reduces its
/// threads' partials, the first subgroup those of the subgroups (two
/// barriers); otherwise the partials meet in workgroup memory and fold in a
/// tree (log2 T rounds with a barrier after each). A selection's threads
/// fold chunks of consecutive iterations instead, which merge in thread
/// order in log2 T rounds, so that it keeps the iteration the loop keeps
/// (an argmax's first extreme). Returns the last op.
mlir::Operation *reduceAcrossThreads(Reduction &reduction, const ThreadValues &values,
                                     WorkgroupMemory &memory);

/// A row reduction whose rows the workgroup's threads take one at a time,
/// all of them sharing each row's reduction as reduceAcrossThreads does
/// (the rows clamped to [begin, end) when set). Returns the loop over the
/// rows.
mlir::Operation *reduceRowsAcrossThreads(mlir::scf::ParallelOp loop, Reduction &reduction,
                                         const ThreadValues &values, WorkgroupMemory &memory,
                                         mlir::Value begin, mlir::Value end);

/// A scan along a loop: a sequential scf.for over k whose body is parallel
/// loops over the same rows (bounds from outside it; views aside), one of
/// which accumulates, C[rows] = combine(C[rows], v) with a reorderable
/// combine; the loop reads nothing it writes but the carry C, which only
/// steps after the accumulation read, each at its rows. A cumsum's loop:
/// C[r] += x[r, k], then out[r, k] = C[r].
struct Scan {
  mlir::scf::ForOp loop;
  llvm::SmallVector<mlir::scf::ParallelOp> steps;
  unsigned accumulating; // the position of the accumulation in steps
  Accumulator accumulator;
};

/// `loop`, whose body is `steps` (the sequential loop of parallel steps
/// that kiln-gpu-map-workgroups recognizes), as a Scan, when it is one:
/// never when a step sits in a loop inside `loop` (a sort's stages).
std::optional<Scan> matchScan(mlir::scf::ForOp loop, llvm::ArrayRef<mlir::scf::ParallelOp> steps);

/// The scan by blocks, its rows one after another: each thread folds a
/// chunk of the loop's iterations (chunkBounds), thread 0 turns the chunks'
/// totals into prefixes in workgroup memory, and each thread runs its
/// chunk's steps again from the carry combined with its prefix, the carry
/// in a register; thread 0 then adds the row's total to the carry. Four
/// barriers a row instead of one per iteration. With `maxRows` (the rows'
/// count known only at launch), that runs where the rows are at most
/// maxRows, and a copy of the loop, left for the caller, where they are
/// more.
struct BlockScan {
  mlir::Operation *op = nullptr; // the loop over the rows, or the choice
  mlir::scf::ForOp stepwise;     // the copy, with maxRows
};
BlockScan blockScan(Scan &scan, const ThreadValues &values, WorkgroupMemory &memory,
                    std::optional<int64_t> maxRows);

/// `outer` and the loops perfectly nested in it (outermost first), when none
/// carries a value and every bound comes from outside `outer`.
std::optional<llvm::SmallVector<mlir::scf::ForOp>> perfectNest(mlir::scf::ForOp outer);

/// A perfect nest of scf.for (outermost first, bounds from outside it,
/// carrying nothing) that writes only by stores, some of whose loops write
/// apart: every store, and every load of a buffer the nest writes, indexes
/// with the loop's variable directly, at one position per buffer, so
/// iterations that differ in those loops touch distinct elements of what
/// the nest writes. A scatter's nest: out[index[i, j], j] += src[i, j]
/// writes apart by j.
struct ApartNest {
  llvm::SmallVector<mlir::scf::ForOp> nest;
  llvm::SmallVector<bool> apart; // per loop of the nest
};

/// `outer`'s nest as an ApartNest, when at least one loop writes apart.
std::optional<ApartNest> matchApartNest(mlir::scf::ForOp outer);

/// The nest with its apart loops spread over the threads (their iteration
/// space linearized, the last fastest) and the others run in order inside
/// each thread: every element sees its updates in the nest's order.
/// Returns the loop over the threads' share.
mlir::Operation *spreadApartNest(ApartNest &nest, const ThreadValues &values);

/// A perfect nest of scf.for (outermost first, bounds from outside it,
/// carrying nothing) whose only writes are updates an atomic does, or
/// stores of one value the nest does not compute (whichever thread writes
/// an element last, it holds that value). An update stores combine(load(
/// B[i]), v) back to B[i], the load in the same block and used by the
/// combine alone, B a binding of the kernel or a reinterpretation of one;
/// nothing else in the nest reads what it writes. The combines: integer
/// add, max and min of 32 or 64 bits, float32 add with `reassoc`.
struct AtomicUpdate {
  mlir::memref::LoadOp load;
  mlir::Operation *combine;
  mlir::memref::StoreOp store;
  mlir::arith::AtomicRMWKind kind;
  mlir::Value value; // v, the combine's other operand
};
struct AtomicNest {
  llvm::SmallVector<mlir::scf::ForOp> nest;
  llvm::SmallVector<AtomicUpdate> updates;
};

/// `outer`'s nest as an AtomicNest, when every write in it is such an update.
std::optional<AtomicNest> matchAtomicNest(mlir::scf::ForOp outer);

/// The nest with each update a memref.atomic_rmw and its whole iteration
/// space spread over the threads (linearized, the last loop fastest).
/// Returns the loop over the threads' share.
mlir::Operation *spreadAtomicNest(AtomicNest &nest, const ThreadValues &values);

/// An elementwise loop by groups of a vector's elements (vectorizeAccesses):
/// `guard` is an scf.if on the alignment of the buffers its vector accesses
/// reach, `groups` (its then branch) steps the innermost dimension by
/// `width`, and `loop`, the loop as it was, is its else branch.
struct VectorAccessNest {
  mlir::scf::IfOp guard;
  mlir::scf::ParallelOp groups;
  mlir::scf::ParallelOp loop;
  int64_t width;
};

/// `loop` (a top-level scf.parallel writing its iterations apart) by groups
/// of vectorBits / 32 consecutive elements of its innermost dimension, when
/// its loads and stores of 32-bit elements are contiguous along it (the
/// innermost induction variable the last index, the other indices the same
/// for the whole group, strides and offset multiples of the group): those
/// become vector loads and stores, every other op that depends on the
/// element runs once per element of the group, the rest once. The innermost
/// dimension needs constant bounds, step 1, both multiples of the group; a
/// 1-D loop, a `firstDimAlignment` (the workgroups' chunks) that is one.
std::optional<VectorAccessNest> vectorizeAccesses(mlir::scf::ParallelOp loop, int64_t vectorBits,
                                                  int64_t firstDimAlignment);

/// The tile of a matmul-like loop: rows x columns of outputs, k steps per
/// stage, and outputs per thread in each direction.
struct MatmulTileShape {
  int64_t rows, columns, depth, threadRows, threadColumns;
};

/// A matmul-like row reduction that kiln-gpu-map-workgroups computes by
/// tiles through workgroup memory: outputs C[..] combined over one k loop
/// with values from row loads (varying with the row dimensions and k, not
/// the last dimension) and column loads (varying with the last dimension
/// and k). The row dimensions are those from `firstRowDim` to the one
/// before last, flattened (an implicit GEMM's output rows and positions);
/// the ones before are batches, which column loads may vary with too.
/// How a target multiplies tiles of half-precision operands on tensor
/// cores: not at all, by NVVM's mma.sync, or by an emulation of it through
/// workgroup memory (the same kernels on a GPU without it, for tests).
enum class WarpMma { None, Nvvm, Emulated };
/// "none" (or empty), "nvvm" or "emulated".
std::optional<WarpMma> parseWarpMma(llvm::StringRef name);

struct TiledMatmul {
  mlir::scf::ParallelOp loop;
  Reduction reduction;
  llvm::SmallVector<mlir::memref::LoadOp> rowLoads;
  llvm::SmallVector<mlir::memref::LoadOp> columnLoads;
  unsigned firstRowDim;
  MatmulTileShape shape;
  /// Set by useWarpMma: warps multiply the tiles on tensor cores, float32
  /// operands rounded to TF32 (`tf32`).
  WarpMma warpMma = WarpMma::None;
  bool tf32 = false;
  /// Workgroup memory beside the tiles (the emulation's).
  int64_t scratchBytes = 0;
};

/// `loop` as a TiledMatmul for `threads` threads, when its shape is one
/// and its tiles fit in `sharedBytes` of workgroup memory.
std::optional<TiledMatmul> matchTiledMatmul(mlir::scf::ParallelOp loop, int64_t threads,
                                            int64_t sharedBytes);

/// Bytes of workgroup memory the matmul's tiles take.
int64_t tileBytes(const TiledMatmul &matmul);

/// The alignment of a workgroup's chunk of the first dimension that makes
/// it whole tiles, when the first dimension is a row dimension; else 1.
int64_t rowAlignment(const TiledMatmul &matmul);

/// Computes the matmul by tiles (its first dimension clamped to [begin,
/// end) when set): for each tile of outputs, stages of the row and column
/// tiles are loaded into workgroup memory by all threads, then each thread
/// combines its outputs over the stage from there; each output's values are
/// combined in k order, from its initial value, as the loop did. Returns
/// the outermost loop.
mlir::Operation *tileMatmul(TiledMatmul &matmul, const ThreadValues &values, mlir::Value begin,
                            mlir::Value end);

/// Whether the matmul goes by tensor-core warps (WarpMatmul.cpp): its nest
/// multiplies a float16 or bfloat16 row load by a column load of the same
/// type, widened, into a float32 sum (or float32 loads, with `allowTf32`),
/// the workgroup has 4 or 8 warps and the tiles fit in `sharedBytes`. Then
/// sets its shape (32x32 outputs per warp, 2 warps across, two mma steps
/// deep), warpMma and tf32.
bool useWarpMma(TiledMatmul &matmul, int64_t threads, WarpMma kind, bool allowTf32,
                int64_t sharedBytes);

/// Computes a matmul useWarpMma took: stages of zero-padded tiles in
/// workgroup memory, each warp's outputs in float32 registers, updated by
/// mma products (m16n8k16 for halves, m16n8k8 for TF32) of fragments read
/// from the tiles.
mlir::Operation *tileMatmulByWarps(TiledMatmul &matmul, const ThreadValues &values,
                                   mlir::Value begin, mlir::Value end);

} // namespace kiln::gpu

#endif // KILN_TARGET_GPU_MAPPING_H
