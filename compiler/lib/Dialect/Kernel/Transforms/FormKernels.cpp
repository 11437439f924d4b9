// Greedy fusion of kiln_graph ops into kiln_kernel.kernel ops.
//
// Every kernel is run by several workgroups that each own a contiguous slice
// of the kernel's leading dimension. That makes the legality rule local: an op
// may join a kernel if its own leading loop is parallel with the kernel's
// extent and it reads every value produced inside the kernel at the same
// leading index it writes ("aligned"). Values from outside are fully computed
// before the launch and may be read anywhere.
#include "kiln/Dialect/Graph/IR/GraphOps.h"
#include "kiln/Dialect/Kernel/IR/KernelOps.h"
#include "kiln/Dialect/Kernel/Transforms/Passes.h"

#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

namespace kiln::kernel {
#define GEN_PASS_DEF_FORMKERNELSPASS
#include "kiln/Dialect/Kernel/Transforms/Passes.h.inc"
} // namespace kiln::kernel

using namespace mlir;
using namespace kiln;
using namespace kiln::graph;

namespace {

/// How op iterates its leading dimension; ops that do not say cannot share
/// a parallel leading loop (they run in a single-workgroup kernel).
LeadingDim leadingDimOf(Operation *op) {
  if (auto fusable = dyn_cast<FusableOpInterface>(op))
    return fusable.getLeadingDim();
  LeadingDim info;
  info.aligned.assign(op->getNumOperands(), false);
  return info;
}

struct Kernel {
  // The leading dim that workgroups split (a constant or a symbolic size);
  // null: a single workgroup runs the kernel.
  AffineExpr extent;
  SmallVector<Operation *> ops;
};

/// Constants and sizes (no operands, cheap) are cloned into every kernel that
/// reads them rather than computed once and passed.
bool isRematerialized(Operation *op) { return isa<ConstantOp, SizeOp>(op); }

class Fusion {
public:
  explicit Fusion(Block &block) : block(block) {}

  void run() {
    for (Operation &op : block.without_terminator()) {
      if (!isa<GraphDialect>(op.getDialect()))
        continue;
      if (isRematerialized(&op) && onlyUsedByGraphOps(&op))
        continue; // rematerialized in every kernel that uses it
      if (isa<AssertOp>(op) || isBoundaryReshape(&op)) {
        boundary.insert(&op);
        continue;
      }
      if (isa<CollectiveOp>(op))
        collectives.push_back(&op);
      place(&op);
    }
    splitOpenEpilogues();
  }

  void materialize(OpBuilder &builder) {
    Operation *terminator = block.getTerminator();
    builder.setInsertionPoint(terminator);
    IRMapping outside; // original value -> value after fusion
    DenseSet<Operation *> done;
    for (Operation &op : block.without_terminator())
      emitUnitOf(builder, &op, outside, done);
    for (OpOperand &operand : terminator->getOpOperands())
      if (Value mapped = outside.lookupOrNull(operand.get()))
        operand.set(mapped);
    // Erase the originals, users first.
    SmallVector<Operation *> originals;
    for (Operation &op : block.without_terminator())
      if (isa<GraphDialect>(op.getDialect()) && !done.contains(&op))
        originals.push_back(&op);
    for (Operation *op : llvm::reverse(originals))
      op->erase();
  }

private:
  /// Whether every user is an op that kernels hold (a collective stays
  /// outside them, so its constant operand must be a unit of its own).
  bool onlyUsedByGraphOps(Operation *op) {
    return llvm::all_of(op->getUsers(), [](Operation *user) {
      return isa<GraphDialect>(user->getDialect()) && !isa<CollectiveOp>(user);
    });
  }

  /// A reshape that cannot join its producer's kernel stays outside kernels;
  /// on a contiguous buffer it is a free view.
  bool isBoundaryReshape(Operation *op) {
    auto reshape = dyn_cast<ReshapeOp>(op);
    if (!reshape)
      return false;
    Operation *producer = reshape.getInput().getDefiningOp();
    if (producer && isRematerialized(producer))
      return false; // stays with its constant in a kernel
    if (!producer || !kernelOf.count(producer))
      return true;
    LeadingDim info = leadingDimOf(op);
    return !info.aligned[0] ||
           !sameSize(kernels[kernelOf[producer]].extent, *info.extent);
  }

  /// The kernel a value comes from, looking through boundary reshapes;
  /// -1 for function arguments and unfused constants.
  int sourceKernel(Value value) {
    Operation *def = value.getDefiningOp();
    if (!def)
      return -1;
    if (auto it = kernelOf.find(def); it != kernelOf.end())
      return it->second;
    if (boundary.contains(def))
      return sourceKernel(def->getOperand(0));
    return -1;
  }

  /// Does kernel `k` read, directly or through other kernels, what kernel
  /// `e` makes?
  bool dependsOn(int k, int e, DenseSet<int> &seen) {
    if (k == e)
      return true;
    if (k < 0 || !seen.insert(k).second)
      return false;
    for (Operation *op : kernels[k].ops)
      for (Value operand : op->getOperands())
        if (dependsOn(sourceKernel(operand), e, seen))
          return true;
    return false;
  }

  /// The kernel `op` joins as a link of its epilogue, or -1: the kernel's
  /// first op takes an epilogue (TakesEpilogue) and `op` is elementwise,
  /// with the first op's result type, reads values made in the kernel only
  /// directly and at that type, reads nothing else of a type other than
  /// that (no bool masks: the epilogue reads vectors of that type), and
  /// reads nothing from a kernel that depends on this one. The lowering
  /// applies the links to each result element in registers.
  int epilogueKernelOf(Operation *op) {
    if (!isElementwise(op) || op->getNumResults() != 1)
      return -1;
    Type type = op->getResult(0).getType();
    Type element = cast<RankedTensorType>(type).getElementType();
    int found = -1;
    for (Value operand : op->getOperands()) {
      if (cast<RankedTensorType>(operand.getType()).getElementType() != element)
        return -1;
      int k = sourceKernel(operand);
      if (k >= 0 && kernels[k].ops.front()->hasTrait<TakesEpilogue>() &&
          kernels[k].ops.front()->getResult(0).getType() == type)
        found = std::max(found, k);
    }
    if (found < 0)
      return -1;
    for (Value operand : op->getOperands()) {
      int k = sourceKernel(operand);
      if (k == found) {
        Operation *def = operand.getDefiningOp();
        if (!def || !kernelOf.count(def) || operand.getType() != type)
          return -1; // through a reshape, or broadcast
        continue;
      }
      DenseSet<int> seen;
      if (k >= 0 && dependsOn(k, found, seen))
        return -1;
    }
    return found;
  }

  /// An epilogue must end in the one value that leaves its kernel; where an
  /// earlier link's value is used outside too, the links move to a kernel of
  /// their own (after the fact: kernel formation cannot know later users).
  void splitOpenEpilogues() {
    for (size_t k = 0; k < kernels.size(); ++k) {
      SmallVector<Operation *> &ops = kernels[k].ops;
      if (ops.size() < 2 || !ops.front()->hasTrait<TakesEpilogue>())
        continue;
      DenseSet<Operation *> members(ops.begin(), ops.end());
      bool closed = llvm::all_of(llvm::drop_end(ops), [&](Operation *op) {
        return llvm::all_of(op->getUsers(), [&](Operation *user) {
          return members.contains(user);
        });
      });
      if (closed)
        continue;
      Kernel links;
      auto result = cast<RankedTensorType>(ops.back()->getResult(0).getType());
      if (result.getRank() > 0 && isParallelExtent(dimExpr(result, 0)))
        links.extent = dimExpr(result, 0);
      links.ops.assign(ops.begin() + 1, ops.end());
      ops.resize(1);
      for (Operation *op : links.ops)
        kernelOf[op] = kernels.size();
      kernels.push_back(std::move(links));
    }
  }

  void place(Operation *op) {
    if (int epilogue = epilogueKernelOf(op); epilogue >= 0) {
      kernels[epilogue].ops.push_back(op);
      kernelOf[op] = epilogue;
      return;
    }
    LeadingDim info = leadingDimOf(op);
    // The newest kernel that an operand comes from is the only candidate:
    // joining an older one could create a cycle between kernels.
    int candidate = -1;
    for (Value operand : op->getOperands())
      candidate = std::max(candidate, sourceKernel(operand));
    // An op that reads nothing made in a kernel may join the newest kernel as
    // a sibling (it depends on no kernel, so no cycle can form), saving a
    // launch: e.g. the two bounds tests of an index check. Matmul kernels
    // keep their matmul-plus-epilogue shape.
    bool sibling = candidate < 0 && !kernels.empty() &&
                   !isa<MatmulOp>(kernels.back().ops.front());
    if (sibling)
      candidate = kernels.size() - 1;
    // An op that runs alone in its kernel neither joins one nor is joined.
    if (candidate >= 0 && (op->hasTrait<OwnKernel>() ||
                           kernels[candidate].ops.front()->hasTrait<OwnKernel>()))
      candidate = -1;
    // A kernel run by one workgroup (extent 0) executes its ops in order, so
    // any op joins it as long as it is small (extent at most 1) itself.
    bool parallelOp = info.extent && isParallelExtent(*info.extent);
    bool singleWorkgroup = candidate >= 0 && !kernels[candidate].extent && !parallelOp;
    bool join = candidate >= 0 && !isa<MatmulOp>(op) &&
                (singleWorkgroup || (parallelOp && sameSize(kernels[candidate].extent, *info.extent)));
    for (auto [i, operand] : llvm::enumerate(op->getOperands())) {
      if (!join || sourceKernel(operand) != candidate)
        continue;
      Operation *def = operand.getDefiningOp();
      if (!kernelOf.count(def) || (!singleWorkgroup && !info.aligned[i]))
        join = false;
    }
    if (!join) {
      candidate = kernels.size();
      kernels.emplace_back();
      if (parallelOp)
        kernels.back().extent = *info.extent;
    }
    kernels[candidate].ops.push_back(op);
    kernelOf[op] = candidate;
  }

  /// Emits the unit (kernel, collective, or boundary reshape) holding `op`
  /// after the units it reads from, depth first.
  void emitUnitOf(OpBuilder &builder, Operation *op, IRMapping &outside,
                  DenseSet<Operation *> &done) {
    auto it = kernelOf.find(op);
    if (it == kernelOf.end() && !boundary.contains(op))
      return; // not a unit: a constant cloned into kernels, or a non-graph op
    SmallVector<Operation *> members =
        it == kernelOf.end() ? SmallVector<Operation *>{op}
                             : kernels[it->second].ops;
    if (!emittedUnits.insert(members.front()).second)
      return;
    // Collectives keep the program's order (every rank must issue them
    // alike): the earlier ones go first, whatever fusion pulled forward.
    if (auto collective = dyn_cast<CollectiveOp>(members.front()))
      for (Operation *earlier : collectives) {
        if (earlier == collective.getOperation())
          break;
        emitUnitOf(builder, earlier, outside, done);
      }
    for (Operation *member : members)
      for (Value operand : member->getOperands())
        if (Operation *def = operand.getDefiningOp())
          if (def->getBlock() == &block &&
              !llvm::is_contained(members, def))
            emitUnitOf(builder, def, outside, done);
    // A collective is a unit of its own (OwnKernel) that the plan runs
    // between launches: it stays outside kernels, like a boundary op.
    bool host = it == kernelOf.end() || isa<CollectiveOp>(members.front());
    if (host) {
      Operation *clone = builder.clone(*op, outside);
      outside.map(op->getResults(), clone->getResults());
      done.insert(clone);
      return;
    }
    emitKernel(builder, it->second, outside);
  }

  void emitKernel(OpBuilder &builder, int index, IRMapping &outside) {
    Kernel &kernel = kernels[index];
    DenseSet<Operation *> members(kernel.ops.begin(), kernel.ops.end());
    llvm::SetVector<Value> inputs;
    llvm::SetVector<Operation *> constants;
    SmallVector<Value> results;
    for (Operation *op : kernel.ops) {
      for (Value operand : op->getOperands()) {
        Operation *def = operand.getDefiningOp();
        if (def && members.contains(def))
          continue;
        if (def && isRematerialized(def) && !kernelOf.count(def))
          constants.insert(def);
        else
          inputs.insert(operand);
      }
      for (Value result : op->getResults())
        if (llvm::any_of(result.getUsers(), [&](Operation *user) {
              return !members.contains(user);
            }))
          results.push_back(result);
    }

    Location loc = kernel.ops.front()->getLoc();
    SmallVector<Value> kernelInputs;
    for (Value input : inputs)
      kernelInputs.push_back(outside.lookupOrDefault(input)); // args map to themselves
    std::string name = "kernel_" + std::to_string(index) + "_" +
                       kernel.ops.front()->getName().stripDialect().str();
    int64_t extent = 0;
    AffineMapAttr symbolicExtent;
    if (auto constant = dyn_cast_or_null<AffineConstantExpr>(kernel.extent)) {
      extent = constant.getValue();
    } else if (kernel.extent) {
      extent = -1;
      symbolicExtent = AffineMapAttr::get(symbolMap(builder.getContext(), kernel.extent));
    }
    auto kernelOp = kernel::KernelOp::create(
        builder, loc, TypeRange(ValueRange(results)), kernelInputs,
        builder.getStringAttr(name), builder.getI64IntegerAttr(extent), symbolicExtent);
    Block *body = new Block();
    kernelOp.getBody().push_back(body);
    IRMapping inside;
    for (Value input : inputs)
      inside.map(input, body->addArgument(input.getType(), input.getLoc()));
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPointToStart(body);
    for (Operation *constant : constants)
      builder.clone(*constant, inside);
    for (Operation *op : kernel.ops)
      builder.clone(*op, inside);
    SmallVector<Value> yielded;
    for (Value result : results)
      yielded.push_back(inside.lookup(result));
    kernel::YieldOp::create(builder, loc, yielded);
    outside.map(results, kernelOp.getResults());
  }

  Block &block;
  SmallVector<Kernel> kernels;
  DenseMap<Operation *, int> kernelOf;
  // Ops that stay outside kernels: reshapes between kernels (plan views) and
  // asserts (plan checks).
  DenseSet<Operation *> boundary;
  DenseSet<Operation *> emittedUnits;
  SmallVector<Operation *> collectives; // in program order
};

/// A graph output that is an input, or a reshape of one, would hand the
/// caller its own input's memory; every graph output must be a fresh tensor
/// (folds like x * 1 -> x can produce such outputs), so copy them.
void copyOutputsThatAliasInputs(func::FuncOp func) {
  Operation *terminator = func.getBody().front().getTerminator();
  OpBuilder builder(terminator);
  for (OpOperand &operand : terminator->getOpOperands()) {
    Value value = operand.get();
    while (auto reshape = value.getDefiningOp<ReshapeOp>())
      value = reshape.getInput();
    if (!isa<BlockArgument>(value) || !isa<RankedTensorType>(value.getType()))
      continue;
    operand.set(CloneOp::create(builder, terminator->getLoc(),
                                operand.get().getType(), operand.get()));
  }
}

struct FormKernelsPass
    : kiln::kernel::impl::FormKernelsPassBase<FormKernelsPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    if (!func.getBody().hasOneBlock()) {
      func.emitOpError("kiln-form-kernels expects a single-block function");
      return signalPassFailure();
    }
    // Kernels are emitted at the end of the block, so a graph value used by
    // another op (e.g. a call) could not dominate it.
    for (Operation &op : func.getBody().front().without_terminator())
      if (!isa<GraphDialect>(op.getDialect()))
        return (void)(op.emitOpError("is not a kiln_graph op; kiln-form-kernels "
                                     "expects graph functions of kiln_graph ops only"),
                      signalPassFailure());
    copyOutputsThatAliasInputs(func);
    Fusion fusion(func.getBody().front());
    fusion.run();
    OpBuilder builder(func.getContext());
    fusion.materialize(builder);
  }
};

} // namespace
