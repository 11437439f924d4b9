// Spreads a kernel's loop nests over the threads of its workgroups: the
// mapping layer every GPU target shares (see Passes.td).
#include "kiln/Target/GPU/Passes.h"

#include "Attention.h"
#include "Mapping.h"

#include "kiln/Dialect/Graph/IR/GraphOps.h"
#include "kiln/Dialect/Kernel/IR/KernelOps.h"
#include "kiln/Dialect/Kernel/Transforms/Passes.h"

#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/TypeSwitch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace kiln::gpu {
#define GEN_PASS_DEF_GPUMAPWORKGROUPSPASS
#include "kiln/Target/GPU/Passes.h.inc"
} // namespace kiln::gpu

using namespace mlir;
using namespace kiln::gpu;

namespace {

constexpr int64_t kMaxThreads = 256;

/// Rewrites an scf.parallel into nested scf.for loops (a parallel loop
/// inside a thread's share of the work runs sequentially).
void sequentialize(scf::ParallelOp loop) {
  OpBuilder b(loop);
  SmallVector<Value> ivs;
  Block *body = nullptr;
  for (auto [lb, ub, step] :
       llvm::zip(loop.getLowerBound(), loop.getUpperBound(), loop.getStep())) {
    auto inner = scf::ForOp::create(b, loop.getLoc(), lb, ub, step);
    ivs.push_back(inner.getInductionVar());
    body = inner.getBody();
    b.setInsertionPoint(body->getTerminator());
  }
  Block &old = *loop.getBody();
  old.getTerminator()->erase();
  body->getOperations().splice(Block::iterator(body->getTerminator()), old.getOperations());
  for (auto [from, to] : llvm::zip(loop.getInductionVars(), ivs))
    from.replaceAllUsesWith(to);
  loop.erase();
}

struct GpuMapWorkgroupsPass
    : kiln::gpu::impl::GpuMapWorkgroupsPassBase<GpuMapWorkgroupsPass> {
  using GpuMapWorkgroupsPassBase::GpuMapWorkgroupsPassBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (!func->hasAttr(kiln::kernel::kKernelAttr) || func.isExternal())
      return;
    auto target = kiln::kernel::requireTarget(func, getArgument());
    if (failed(target))
      return signalPassFailure();
    std::optional<WarpMma> parsedMma = parseWarpMma(warpMma);
    if (!parsedMma) {
      func.emitError("kiln-gpu-map-workgroups: warp-mma must be none, nvvm or emulated, not '")
          << warpMma << "'";
      return signalPassFailure();
    }
    warpMmaKind = *parsedMma;
    auto module = func->getParentOfType<ModuleOp>();
    allowTf32 = module && module->hasAttr(kiln::graph::kAllowTf32Attr);
    int64_t threads = kMaxThreads;
    if (int64_t max = (*target).getMaxWorkgroupSize(); max > 0)
      threads = std::min(threads, max);
    int64_t sharedBytes = (*target).getSharedMemoryBytes();
    vectorBits = (*target).getVectorBits();
    if (func.getNumArguments() < 2 || !func.getArgument(0).getType().isIndex() ||
        !func.getArgument(1).getType().isIndex()) {
      func.emitOpError("kernel must start with (index workgroup_id, index workgroup_count)");
      return signalPassFailure();
    }
    if (failed(map(func, threads, sharedBytes > 0 ? sharedBytes : kDefaultSharedBytes)))
      return signalPassFailure();
    MLIRContext *context = func.getContext();
    func->setAttr(kiln::kernel::kWorkgroupSizeAttr,
                  DenseI64ArrayAttr::get(context, {threads, 1, 1}));
  }

  /// The widest memory access of one thread (the target's vector_bits), 0
  /// for scalar accesses alone.
  int64_t vectorBits = 0;
  /// How matmul tiles of half operands multiply (the warp-mma option).
  WarpMma warpMmaKind = WarpMma::None;
  /// Float32 matmuls may round to TF32 (the graph's kiln_graph.allow_tf32).
  bool allowTf32 = false;

  /// Vulkan's guaranteed workgroup memory, for a target that names none.
  static constexpr int64_t kDefaultSharedBytes = 16384;
  /// A row reduction spreads over the threads when a workgroup has fewer
  /// rows than threads / kRowsPerCooperativeFraction and each row at least
  /// kMinCooperativeTrips elements (or a symbolic count): otherwise a
  /// thread per row keeps every thread busy with less synchronization.
  static constexpr int64_t kRowsPerCooperativeFraction = 4;
  static constexpr int64_t kMinCooperativeTrips = 32;
  /// The columns a symbolic count of attention's query blocks is split
  /// into: enough that a workgroup takes one or two blocks of a sequence
  /// of 1024 (blocks of 16), few enough that a short one leaves little
  /// idle.
  static constexpr int64_t kQueryBlockColumns = 32;

  /// The iterations of `loop`'s dimensions from `firstDim` on, each at
  /// least 1; `threads` stands for a count that is not constant.
  static int64_t iterations(scf::ParallelOp loop, unsigned firstDim, int64_t threads) {
    int64_t work = 1;
    for (auto [lb, ub, step] :
         llvm::drop_begin(llvm::zip(loop.getLowerBound(), loop.getUpperBound(), loop.getStep()),
                          firstDim)) {
      auto trips = constantTrips(lb, ub, step);
      work = saturatingMultiply(work, trips ? std::max<int64_t>(*trips, 1) : threads);
    }
    return work;
  }

  /// The work of one row (one iteration of the first dimension) of a
  /// top-level loop: its inner parallel iterations times the trips of the
  /// reduction it holds; `threads` stands for what is not constant.
  static int64_t workPerRow(scf::ParallelOp loop, int64_t threads) {
    int64_t work = iterations(loop, /*firstDim=*/1, threads);
    if (auto reduction = matchRowReduction(loop)) {
      auto trips = constantTrips(*reduction);
      work = saturatingMultiply(work, trips ? std::max<int64_t>(*trips, 1) : threads);
    }
    return work;
  }

  /// The parallel loops a top-level scf.for runs one after another, when
  /// its threads can share each: the loop carries nothing, and its body is
  /// such loops (each writing its iterations apart), loops of them in turn,
  /// and ops that write nothing (views, loads). A scan's steps along its
  /// axis are; so is a row loop whose rows each run a few elementwise
  /// loops, and a sorting network's stages of steps. Every thread runs the
  /// serial loops (their bounds are the same for all), each step spread
  /// over the threads with a barrier after it.
  static std::optional<SmallVector<scf::ParallelOp>> parallelSteps(scf::ForOp loop) {
    SmallVector<scf::ParallelOp> steps;
    if (!collectParallelSteps(loop, steps) || steps.empty())
      return std::nullopt;
    return steps;
  }

  static bool collectParallelSteps(scf::ForOp loop, SmallVectorImpl<scf::ParallelOp> &steps) {
    if (loop.getNumResults() != 0)
      return false;
    for (Operation &op : loop.getBody()->without_terminator()) {
      auto step = dyn_cast<scf::ParallelOp>(op);
      auto inner = dyn_cast<scf::ForOp>(op);
      if (step && step.getNumResults() == 0 && iterationsWriteApart(step))
        steps.push_back(step);
      else if (inner && writesAnything(inner)) {
        if (!collectParallelSteps(inner, steps))
          return false;
      } else if (writesAnything(&op))
        return false;
    }
    return true;
  }

  /// The work of one iteration of a loop of parallel steps for one row:
  /// the iterations of its largest step (past the first dimension where
  /// the steps iterate the rows); `threads` stands for what is not
  /// constant.
  static int64_t workPerStep(ArrayRef<scf::ParallelOp> steps, int64_t threads, bool overRows) {
    int64_t most = 1;
    for (scf::ParallelOp step : steps)
      most = std::max(most, iterations(step, /*firstDim=*/overRows ? 1 : 0, threads));
    return most;
  }

  /// Whether a serial loop's steps iterate the kernel's rows as their
  /// first dimension (a sort's stages), rather than the loop the rows.
  static bool stepsOverRows(scf::ForOp loop) {
    return loop->hasAttr(kiln::kernel::kStepsOverRowsAttr);
  }

  /// The iterations of `loop` one workgroup runs: `rows` of the first
  /// dimension when the kernel is split into rows, else all of them;
  /// nullopt when not a constant.
  static std::optional<int64_t> iterationsPerWorkgroup(scf::ParallelOp loop, bool splitRows,
                                                       int64_t rows) {
    int64_t iterations = 1;
    for (auto [i, bounds] : llvm::enumerate(
             llvm::zip(loop.getLowerBound(), loop.getUpperBound(), loop.getStep()))) {
      auto [lb, ub, step] = bounds;
      if (i == 0 && splitRows) {
        iterations *= rows;
        continue;
      }
      auto trips = constantTrips(lb, ub, step);
      if (!trips)
        return std::nullopt;
      iterations *= *trips;
    }
    return iterations;
  }

  LogicalResult map(func::FuncOp func, int64_t threads, int64_t sharedBytes) {
    Block &entry = func.getBody().front();
    // Of Kiln's own kernel ops, attention at the top level is this
    // mapping's; kiln-gpu-lower-kernel-ops lowers convolutions and
    // kiln-lower-sort sorts before it.
    WalkResult kernelOps = func.walk([&](Operation *op) {
      if (!op->getDialect() || op->getDialect()->getNamespace() != "kiln_kernel" ||
          (isa<kiln::kernel::AttentionOp>(op) && op->getBlock() == &entry))
        return WalkResult::advance();
      op->emitOpError("has no GPU lowering here (kiln-gpu-lower-kernel-ops lowers convolutions, "
                      "kiln-lower-sort sorts, and attention must be a kernel's top-level op)");
      return WalkResult::interrupt();
    });
    if (kernelOps.wasInterrupted())
      return failure();
    Attribute extentAttr = func->getAttr(kiln::kernel::kExtentAttr);
    auto symbolicExtent = dyn_cast_or_null<AffineMapAttr>(extentAttr);
    auto staticExtent = dyn_cast_or_null<IntegerAttr>(extentAttr);
    bool splitRows = symbolicExtent || (staticExtent && staticExtent.getInt() > 1);
    SmallVector<Operation *> topLevel;
    for (Operation &op : entry.without_terminator())
      topLevel.push_back(&op);

    // Rows per workgroup: enough for the heaviest loop nest to give every
    // thread work (a row of a matmul, a softmax or a norm is a workgroup's;
    // rows of 8 elements go 16 to a workgroup). Lighter nests leave threads
    // idle, which costs less than a workgroup whose threads each loop over
    // whole rows of a heavy one.
    int64_t rows = 1;
    // Matmuls go by tiles of outputs; where the first dimension is one of
    // their rows, the chunks are whole tiles.
    DenseMap<Operation *, TiledMatmul> matmuls;
    for (Operation *op : topLevel)
      if (auto loop = dyn_cast<scf::ParallelOp>(op))
        if (auto matmul = matchTiledMatmul(loop, threads, sharedBytes)) {
          (void)useWarpMma(*matmul, threads, warpMmaKind, allowTf32, sharedBytes);
          matmuls.try_emplace(op, std::move(*matmul));
        }
    // Attention by query blocks; the blocks of a kernel that holds nothing
    // else that writes go over a grid of workgroups (the kernel's column
    // extent) as well as its rows: a column per block where their count is
    // a constant, else kQueryBlockColumns columns sharing them.
    DenseMap<Operation *, AttentionBlockShape> attentionBlocks;
    for (Operation *op : topLevel)
      if (auto attention = dyn_cast<kiln::kernel::AttentionOp>(op))
        if (auto shape = matchAttentionBlocks(attention, threads, sharedBytes))
          attentionBlocks.try_emplace(op, *shape);
    int64_t queryBlockColumns = 0;
    if (attentionBlocks.size() == 1 &&
        llvm::count_if(topLevel, [](Operation *op) { return writesAnything(op); }) == 1) {
      auto [op, shape] = *attentionBlocks.begin();
      int64_t queries =
          cast<MemRefType>(cast<kiln::kernel::AttentionOp>(op).getQ().getType()).getDimSize(2);
      if (ShapedType::isDynamic(queries))
        queryBlockColumns = kQueryBlockColumns;
      else if (queries > shape.queries)
        queryBlockColumns = llvm::divideCeil(queries, shape.queries);
    }
    if (splitRows) {
      int64_t perRow = 1;
      for (Operation *op : topLevel) {
        if (auto loop = dyn_cast<scf::ParallelOp>(op))
          perRow = std::max(perRow, workPerRow(loop, threads));
        else if (isa<kiln::kernel::AttentionOp>(op)) // a (batch, head) pair's
          perRow = threads;
        else if (auto serial = dyn_cast<scf::ForOp>(op)) // a row loop's steps
          if (auto steps = parallelSteps(serial))
            perRow = std::max(perRow, workPerStep(*steps, threads, stepsOverRows(serial)));
      }
      rows = llvm::divideCeil(threads, std::min(perRow, threads));
      for (auto &[op, matmul] : matmuls)
        rows = std::max(rows, rowAlignment(matmul));
    }
    MLIRContext *context = func.getContext();
    auto i64 = [&](int64_t value) {
      return IntegerAttr::get(IntegerType::get(context, 64), value);
    };
    func->setAttr(kiln::kernel::kAlignmentAttr, i64(rows));
    if (queryBlockColumns) {
      func->setAttr(kiln::kernel::kColumnExtentAttr, i64(queryBlockColumns));
      func->setAttr(kiln::kernel::kColumnAlignmentAttr, i64(1));
    }

    OpBuilder b = OpBuilder::atBlockBegin(&entry);
    Location loc = func.getLoc();
    ThreadValues values;
    values.threads = threads;
    values.subgroups = subgroups;
    values.thread = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
    values.threadCount = arith::ConstantIndexOp::create(b, loc, threads);
    Value workgroup = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
    Value workgroupCount = gpu::GridDimOp::create(b, loc, gpu::Dimension::x);
    func.getArgument(0).replaceAllUsesWith(workgroup);
    func.getArgument(1).replaceAllUsesWith(workgroupCount);
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    values.isFirstThread =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, values.thread, zero);
    // The workgroup's chunk of rows (the plan sizes the launch from the
    // alignment) and, on a grid, of the query blocks, as the CPU's
    // kiln-distribute-workgroups computes them.
    Value extent;
    if (splitRows)
      extent = symbolicExtent
                   ? kiln::kernel::sizeValue(b, loc, symbolicExtent.getValue().getResult(0))
                   : arith::ConstantIndexOp::create(b, loc, staticExtent.getInt()).getResult();
    kiln::kernel::WorkgroupShare share = kiln::kernel::workgroupShare(
        b, loc, workgroup, workgroupCount, extent, rows, queryBlockColumns);
    Value begin = share.begin, end = share.end;

    // What workgroup memory the strategies may still take.
    WorkgroupMemory memory(&entry, sharedBytes);
    // What was done, in order, each phrase once.
    SmallVector<std::string> strategies;
    auto note = [&](std::string phrase) {
      if (!llvm::is_contained(strategies, phrase))
        strategies.push_back(std::move(phrase));
    };
    for (Operation *op : topLevel) {
      memory.startOp();
      if (auto attention = dyn_cast<kiln::kernel::AttentionOp>(op)) {
        auto blocks = attentionBlocks.find(op);
        std::optional<AttentionBlockShape> shape;
        if (blocks != attentionBlocks.end() &&
            attentionBlockBytes(attention, blocks->second) <= memory.bytesLeft())
          shape = blocks->second;
        FailureOr<Operation *> mapped =
            mapAttention(attention, shape, values, begin, end, share.columnBegin,
                         share.columnEnd, queryBlockColumns, memory, note);
        if (failed(mapped))
          return failure();
        b.setInsertionPointAfter(*mapped);
        gpu::BarrierOp::create(b, op->getLoc());
        continue;
      }
      // What only reads (views, a scalar's load) every thread does itself.
      if (!writesAnything(op))
        continue;
      auto loop = dyn_cast<scf::ParallelOp>(op);
      auto matmul = matmuls.find(op);
      std::optional<Reduction> rowReduction, scalar;
      std::optional<Scan> scan;
      std::optional<SmallVector<scf::ParallelOp>> steps;
      std::optional<ApartNest> apartNest;
      std::optional<AtomicNest> atomicNest;
      if (matmul != matmuls.end() && tileBytes(matmul->second) <= memory.bytesLeft()) {
        memory.reserve(tileBytes(matmul->second));
        const MatmulTileShape &shape = matmul->second.shape;
        if (matmul->second.warpMma != WarpMma::None) {
          note("matmul tiles " + std::to_string(shape.rows) + "x" +
               std::to_string(shape.columns) + "x" + std::to_string(shape.depth) +
               " on tensor cores (mma " +
               (matmul->second.tf32 ? "m16n8k8 in TF32" : "m16n8k16") + " per warp" +
               (matmul->second.warpMma == WarpMma::Emulated ? ", emulated" : "") + ")");
          op = tileMatmulByWarps(matmul->second, values, begin, end);
        } else {
        note("matmul tiles " + std::to_string(shape.rows) + "x" +
                          std::to_string(shape.columns) + "x" + std::to_string(shape.depth) +
                          " through workgroup memory (" + std::to_string(shape.threadRows) + "x" +
                          std::to_string(shape.threadColumns) + " per thread)");
        op = tileMatmul(matmul->second, values, begin, end);
        }
      } else if (loop && (rowReduction = cooperativeRowReduction(loop, splitRows, rows, threads,
                                                                   memory))) {
        note("row reductions over the workgroup" + combiningPhrase(*rowReduction, values));
        op = reduceRowsAcrossThreads(loop, *rowReduction, values, memory, begin, end);
      } else if (loop && loop.getNumResults() == 0 && iterationsWriteApart(loop)) {
        std::optional<VectorAccessNest> vectorized;
        if (vectorBits > 0)
          vectorized = vectorizeAccesses(loop, vectorBits, splitRows ? rows : 0);
        if (vectorized) {
          note("a thread per " + std::to_string(vectorized->width) +
               " elements by vector loads and stores where the buffers are aligned (else a "
               "thread per element)");
          spreadOverThreads(vectorized->groups, values.thread, values.threadCount, begin, end);
          spreadOverThreads(vectorized->loop, values.thread, values.threadCount, begin, end);
          op = vectorized->guard;
        } else {
          note("a thread per element");
          op = spreadOverThreads(loop, values.thread, values.threadCount, begin, end);
        }
      } else if (!splitRows && isa<scf::ForOp>(op) &&
                 (scalar = scalarReduction(cast<scf::ForOp>(op), threads, memory))) {
        note("a reduction into one element over the workgroup" +
             combiningPhrase(*scalar, values));
        op = reduceAcrossThreads(*scalar, values, memory);
      } else if (auto serial = dyn_cast<scf::ForOp>(op);
                 serial && !splitRows && (steps = parallelSteps(serial)) &&
                 (scan = scanByBlocks(serial, *steps, threads, memory))) {
        // Few rows (or a count known at launch: then few rows go by blocks
        // and many a step at a time).
        std::optional<int64_t> maxRows;
        if (!constantRows(scan->steps.front()))
          maxRows = threads / kRowsPerCooperativeFraction;
        note(maxRows ? "a scan by blocks of its axis over the threads where its rows (counted "
                       "at launch) are few, else a step at a time"
                     : "a scan by blocks of its axis over the threads");
        BlockScan mapped = blockScan(*scan, values, memory, maxRows);
        if (mapped.stepwise)
          spreadSteps(*parallelSteps(mapped.stepwise), values);
        op = mapped.op;
      } else if (auto serial = dyn_cast<scf::ForOp>(op);
                 serial && (steps = parallelSteps(serial))) {
        note("a sequential loop, each of its steps over the threads");
        if (splitRows && stepsOverRows(serial)) {
          for (scf::ParallelOp step : *steps)
            clampFirstDim(step, begin, end);
        } else if (splitRows) {
          clamp(serial, begin, end);
        }
        spreadSteps(*steps, values);
      } else if (auto nest = dyn_cast<scf::ForOp>(op);
                 nest && (apartNest = matchApartNest(nest))) {
        note("a loop nest whose writes fall apart by some of its loops, those over the threads, "
             "the others in order");
        if (splitRows)
          clamp(nest, begin, end);
        op = spreadApartNest(*apartNest, values);
      } else if (auto nest = dyn_cast<scf::ForOp>(op);
                 nest && atomics && !splitRows && (atomicNest = matchAtomicNest(nest))) {
        note("a loop nest of atomic updates (adds, max, min), its iterations over the threads");
        op = spreadAtomicNest(*atomicNest, values);
      } else {
        note("thread 0 alone (writes that may meet, or a sequential loop)");
        if (op->getNumResults() != 0 && !op->use_empty())
          return op->emitOpError("has results a GPU workgroup's threads would need to share");
        if (splitRows) {
          if (auto serial = dyn_cast<scf::ForOp>(op))
            clamp(serial, begin, end);
          else if (loop)
            clampFirstDim(loop, begin, end);
        }
        b.setInsertionPoint(op);
        auto guard = scf::IfOp::create(b, op->getLoc(), values.isFirstThread, /*withElse=*/false);
        op->moveBefore(guard.thenBlock()->getTerminator());
        op = guard;
      }
      b.setInsertionPointAfter(op);
      gpu::BarrierOp::create(b, op->getLoc());
    }
    SmallVector<Attribute> phrases;
    for (const std::string &phrase : strategies)
      phrases.push_back(StringAttr::get(context, phrase));
    func->setAttr(kiln::kernel::kGpuStrategiesAttr, ArrayAttr::get(context, phrases));
    // Parallel loops left inside a thread's work run sequentially.
    SmallVector<scf::ParallelOp> nested;
    func.walk([&](scf::ParallelOp loop) { nested.push_back(loop); });
    for (scf::ParallelOp loop : llvm::reverse(nested))
      sequentialize(loop);
    return success();
  }

  /// Attention by query blocks of `shape` (on a grid, those of the
  /// workgroup's columns [firstColumn, lastColumn) of `columns`), else a
  /// query row per thread. Returns the outermost op.
  static FailureOr<Operation *> mapAttention(kiln::kernel::AttentionOp op,
                                             std::optional<AttentionBlockShape> shape,
                                             const ThreadValues &values, Value begin, Value end,
                                             Value firstColumn, Value lastColumn,
                                             int64_t columns, WorkgroupMemory &memory,
                                             function_ref<void(std::string)> note) {
    if (shape) {
      memory.reserve(attentionBlockBytes(op, *shape));
      note("attention by blocks of " + std::to_string(shape->queries) + " queries and tiles of " +
           std::to_string(shape->keys) + " keys through workgroup memory" +
           (firstColumn ? ", the blocks over the grid" : ""));
      return tileAttention(op, *shape, values, begin, end, firstColumn, lastColumn, columns);
    }
    FailureOr<scf::ParallelOp> loop = lowerAttentionByRows(op);
    if (failed(loop))
      return failure();
    note("attention by query rows, a thread each");
    return spreadOverThreads(*loop, values.thread, values.threadCount, begin, end);
  }

  /// How a reduction over the workgroup combines its threads' partials,
  /// for the strategy's phrase.
  static std::string combiningPhrase(const Reduction &reduction, const ThreadValues &values) {
    if (reduction.selects())
      return ", a chunk per thread in order";
    return combinesBySubgroups(reduction, values) ? ", by subgroups" : "";
  }

  /// The row reduction `loop` is, when a workgroup's threads should share
  /// each row's reduction: few rows per workgroup, long rows, a combine
  /// that may be reordered or a selection, and workgroup memory for the
  /// partials.
  static std::optional<Reduction> cooperativeRowReduction(scf::ParallelOp loop, bool splitRows,
                                                          int64_t rows, int64_t threads,
                                                          const WorkgroupMemory &memory) {
    std::optional<Reduction> reduction = matchRowReduction(loop);
    if (!reduction || !reduction->spreadable() ||
        !iterationsWriteApart(loop))
      return std::nullopt;
    auto iterations = iterationsPerWorkgroup(loop, splitRows, rows);
    if (!iterations || *iterations * kRowsPerCooperativeFraction > threads)
      return std::nullopt;
    auto trips = constantTrips(*reduction);
    if (trips && *trips < kMinCooperativeTrips)
      return std::nullopt;
    if (!memory.fits(partialTypes(*reduction), threads))
      return std::nullopt;
    return reduction;
  }

  /// Each of a sequential loop's steps spread over the threads, a barrier
  /// after each.
  static void spreadSteps(ArrayRef<scf::ParallelOp> steps, const ThreadValues &values) {
    for (scf::ParallelOp step : steps) {
      Operation *spread =
          spreadOverThreads(step, values.thread, values.threadCount, Value(), Value());
      OpBuilder b(spread->getContext());
      b.setInsertionPointAfter(spread);
      gpu::BarrierOp::create(b, spread->getLoc());
    }
  }

  /// Whether a loop's iteration count is a constant.
  static bool constantRows(scf::ParallelOp loop) {
    for (auto [lb, ub, step] :
         llvm::zip(loop.getLowerBound(), loop.getUpperBound(), loop.getStep()))
      if (!constantTrips(lb, ub, step))
        return false;
    return true;
  }

  /// The scan `loop` is, when its threads should share each row's scan:
  /// few rows, a long axis, and workgroup memory for the chunks' totals.
  /// (Many rows go a step at a time, the rows over the threads.)
  static std::optional<Scan> scanByBlocks(scf::ForOp loop, ArrayRef<scf::ParallelOp> steps,
                                          int64_t threads, const WorkgroupMemory &memory) {
    std::optional<Scan> scan = matchScan(loop, steps);
    if (!scan || (constantRows(steps.front()) &&
                  iterations(steps.front(), 0, threads) * kRowsPerCooperativeFraction > threads))
      return std::nullopt;
    auto trips = constantTrips(loop.getLowerBound(), loop.getUpperBound(), loop.getStep());
    if (trips && *trips < kMinCooperativeTrips)
      return std::nullopt;
    if (!memory.fits(scan->accumulator.type(), threads + 1))
      return std::nullopt;
    return scan;
  }

  /// The reduction into one element `outer` is, when the workgroup's
  /// threads may share it: a combine that may be reordered or a
  /// selection, and workgroup memory for the partials.
  static std::optional<Reduction> scalarReduction(scf::ForOp outer, int64_t threads,
                                                  const WorkgroupMemory &memory) {
    std::optional<Reduction> reduction = matchReduction(outer);
    if (!reduction || !reduction->spreadable() ||
        !memory.fits(partialTypes(*reduction), threads))
      return std::nullopt;
    return reduction;
  }

  /// `for (l = thread; l < trips; l += threads)` over the loop's linearized
  /// iteration space, the first dimension clamped to [begin, end) when set.
  static Operation *spreadOverThreads(scf::ParallelOp loop, Value thread, Value threadCount,
                                Value begin, Value end) {
    if (begin)
      clampFirstDim(loop, begin, end);
    OpBuilder b(loop);
    Location loc = loop.getLoc();
    Value total;
    SmallVector<Value> trips = tripCounts(b, loc, loop, 0, loop.getNumLoops(), total);
    auto spread = scf::ForOp::create(b, loc, thread, total, threadCount);
    b.setInsertionPointToStart(spread.getBody());
    // Consecutive threads touch consecutive elements.
    SmallVector<Value> ivs = delinearize(b, loc, spread.getInductionVar(), trips, loop, 0);
    Block &old = *loop.getBody();
    old.getTerminator()->erase();
    spread.getBody()->getOperations().splice(Block::iterator(spread.getBody()->getTerminator()),
                                             old.getOperations());
    for (auto [from, to] : llvm::zip(loop.getInductionVars(), ivs))
      from.replaceAllUsesWith(to);
    loop.erase();
    return spread;
  }

  /// Narrows a serial loop to [lb, ub) ∩ [begin, end).
  static void clamp(scf::ForOp loop, Value begin, Value end) {
    OpBuilder b(loop);
    Location loc = loop.getLoc();
    loop.getLowerBoundMutable().assign(
        arith::MaxUIOp::create(b, loc, loop.getLowerBound(), begin).getResult());
    loop.getUpperBoundMutable().assign(
        arith::MinUIOp::create(b, loc, loop.getUpperBound(), end).getResult());
  }
};

} // namespace
