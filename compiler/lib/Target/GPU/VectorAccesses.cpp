// An elementwise loop nest by groups of consecutive elements of its
// innermost dimension: loads and stores that are contiguous along it become
// vector loads and stores (one wide memory access per thread instead of
// several), everything else runs once per element of the group. Guarded at
// run time by the alignment of the buffers those accesses reach, the loop
// as it was in the other branch. See Mapping.h.
#include "Mapping.h"

#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace kiln::gpu;

namespace {

/// Elements of a group, and bits per element, of a vector access.
constexpr unsigned kElementBits = 32;

/// The buffer and indices of an element load or store, nullopt for any
/// other op.
std::optional<std::pair<Value, ValueRange>> elementAccess(Operation *op) {
  if (auto load = dyn_cast<memref::LoadOp>(op))
    return std::pair(load.getMemRef(), load.getIndices());
  if (auto store = dyn_cast<memref::StoreOp>(op))
    return std::pair(store.getMemRef(), store.getIndices());
  return std::nullopt;
}

/// Whether `access` (a load or a store at the top of the loop's body) is
/// contiguous along `iv` by groups of `width`: a 32-bit element, `iv` the
/// last index, the others the same for every element of a group, the last
/// dimension dense, and every other stride and the view's offset (static)
/// multiples of `width`, so that an aligned buffer gives aligned groups.
bool contiguous(Operation *access, Value iv, int64_t width, const DenseSet<Value> &varying) {
  auto element = elementAccess(access);
  if (!element)
    return false;
  auto [memref, indices] = *element;
  auto type = cast<MemRefType>(memref.getType());
  if (indices.empty() || indices.back() != iv ||
      type.getElementTypeBitWidth() != kElementBits ||
      !isa<FloatType, IntegerType>(type.getElementType()) || type.getMemorySpace() ||
      !isa<BlockArgument>(rootBuffer(memref)))
    return false;
  if (llvm::any_of(indices.drop_back(), [&](Value index) { return varying.contains(index); }))
    return false;
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(type.getStridesAndOffset(strides, offset)) || strides.back() != 1 ||
      ShapedType::isDynamic(offset) || offset % width != 0)
    return false;
  return llvm::all_of(ArrayRef(strides).drop_back(), [&](int64_t stride) {
    return !ShapedType::isDynamic(stride) && stride % width == 0;
  });
}

} // namespace

std::optional<VectorAccessNest> kiln::gpu::vectorizeAccesses(scf::ParallelOp loop,
                                                            int64_t vectorBits,
                                                            int64_t firstDimAlignment) {
  int64_t width = vectorBits / kElementBits;
  if (width < 2 || loop.getNumResults() != 0)
    return std::nullopt;
  unsigned last = loop.getNumLoops() - 1;
  auto lb = getConstantIntValue(loop.getLowerBound()[last]);
  auto ub = getConstantIntValue(loop.getUpperBound()[last]);
  auto step = getConstantIntValue(loop.getStep()[last]);
  // Groups of `width` from a multiple of it; a first dimension that the
  // workgroups split must split at multiples of it too.
  if (!lb || !ub || !step || *step != 1 || *lb % width != 0 || (*ub - *lb) % width != 0 ||
      *ub <= *lb || (last == 0 && firstDimAlignment % width != 0))
    return std::nullopt;
  Block &body = *loop.getBody();
  Value iv = loop.getInductionVars()[last];

  // What differs between the elements of a group: what depends on iv.
  DenseSet<Value> varying{iv};
  auto readsVarying = [&](Operation *op) {
    bool found = false;
    op->walk([&](Operation *inner) {
      for (Value operand : inner->getOperands())
        found |= varying.contains(operand);
    });
    return found;
  };
  SmallVector<Operation *> accesses;
  for (Operation &op : body.without_terminator()) {
    if (readsVarying(&op))
      varying.insert(op.getResults().begin(), op.getResults().end());
    if (contiguous(&op, iv, width, varying))
      accesses.push_back(&op);
  }
  if (accesses.empty())
    return std::nullopt;

  OpBuilder b(loop);
  Location loc = loop.getLoc();
  // Each buffer those accesses reach, aligned to a group: its address (a
  // binding's byte offset on Vulkan) a multiple of the group's bytes.
  SetVector<Value> roots;
  for (Operation *access : accesses)
    roots.insert(rootBuffer(elementAccess(access)->first));
  Value groupBytes = arith::ConstantIndexOp::create(b, loc, width * kElementBits / 8);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value aligned;
  for (Value root : roots) {
    Value address = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, root);
    Value rest = arith::RemUIOp::create(b, loc, address, groupBytes);
    Value isAligned = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, rest, zero);
    aligned = aligned ? arith::AndIOp::create(b, loc, aligned, isAligned).getResult() : isAligned;
  }
  auto guard = scf::IfOp::create(b, loc, aligned, /*withElseRegion=*/true);

  // Else: the loop as it was.
  loop->moveBefore(guard.elseBlock()->getTerminator());

  // Then: groups of `width`, iv the group's first element.
  b.setInsertionPoint(guard.thenBlock()->getTerminator());
  SmallVector<Value> steps(loop.getStep());
  steps[last] = arith::ConstantIndexOp::create(b, loc, width);
  auto groups = scf::ParallelOp::create(b, loc, loop.getLowerBound(), loop.getUpperBound(), steps);
  b.setInsertionPointToStart(groups.getBody());
  // lanes[k] maps the old loop's values to those of the group's k-th element.
  SmallVector<IRMapping> lanes(width);
  for (auto [k, lane] : llvm::enumerate(lanes)) {
    for (auto [from, to] : llvm::zip(loop.getInductionVars(), groups.getInductionVars()))
      lane.map(from, to);
    if (k > 0)
      lane.map(iv, arith::AddIOp::create(b, loc, groups.getInductionVars()[last],
                                         arith::ConstantIndexOp::create(b, loc, k)));
  }
  auto vectorType = [&](Type element) { return VectorType::get({width}, element); };
  for (Operation &op : body.without_terminator()) {
    if (llvm::is_contained(accesses, &op)) {
      IRMapping &first = lanes.front();
      if (auto load = dyn_cast<memref::LoadOp>(op)) {
        SmallVector<Value> indices = llvm::map_to_vector(
            load.getIndices(), [&](Value index) { return first.lookupOrDefault(index); });
        Value group = vector::LoadOp::create(b, load.getLoc(), vectorType(load.getType()),
                                             load.getMemRef(), indices);
        for (auto [k, lane] : llvm::enumerate(lanes))
          lane.map(load.getResult(),
                   vector::ExtractOp::create(b, load.getLoc(), group, int64_t(k)).getResult());
        continue;
      }
      auto store = cast<memref::StoreOp>(op);
      SmallVector<Value> elements = llvm::map_to_vector(
          lanes, [&](IRMapping &lane) { return lane.lookupOrDefault(store.getValueToStore()); });
      Value group = vector::FromElementsOp::create(
          b, store.getLoc(), vectorType(store.getValueToStore().getType()), elements);
      SmallVector<Value> indices = llvm::map_to_vector(
          store.getIndices(), [&](Value index) { return first.lookupOrDefault(index); });
      vector::StoreOp::create(b, store.getLoc(), group, store.getMemRef(), indices);
      continue;
    }
    if (!readsVarying(&op)) { // the same for the whole group: once
      Operation *clone = b.clone(op, lanes.front());
      for (IRMapping &lane : llvm::drop_begin(lanes))
        lane.map(op.getResults(), clone->getResults());
      continue;
    }
    for (IRMapping &lane : lanes)
      b.clone(op, lane);
  }
  return VectorAccessNest{guard, groups, loop, width};
}
