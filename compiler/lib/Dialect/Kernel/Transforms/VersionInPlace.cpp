// A kernel body for calls whose output is one of their inputs (see Passes.td).
#include "kiln/Dialect/Kernel/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace kiln::kernel {
#define GEN_PASS_DEF_VERSIONINPLACEPASS
#include "kiln/Dialect/Kernel/Transforms/Passes.h.inc"
} // namespace kiln::kernel

using namespace mlir;

namespace {

constexpr size_t kMaxVersions = 3;

/// The function argument a memref value views (through casts, subviews,
/// reshapes), or null.
BlockArgument viewedArgument(Value memref) {
  while (Operation *op = memref.getDefiningOp()) {
    auto view = dyn_cast<ViewLikeOpInterface>(op);
    if (!view)
      return nullptr;
    memref = view.getViewSource();
  }
  auto arg = dyn_cast<BlockArgument>(memref);
  return arg && isa<func::FuncOp>(arg.getOwner()->getParentOp()) ? arg : nullptr;
}

/// (input, output) argument pairs worth a version: the same memref type,
/// the output stored to in a block where the input is loaded from.
SmallVector<std::pair<BlockArgument, BlockArgument>> accessPairs(func::FuncOp func) {
  DenseMap<Block *, SmallVector<BlockArgument>> loaded, stored;
  func.walk([&](Operation *op) {
    if (auto load = dyn_cast<memref::LoadOp>(op)) {
      if (BlockArgument arg = viewedArgument(load.getMemRef()))
        loaded[op->getBlock()].push_back(arg);
    } else if (auto store = dyn_cast<memref::StoreOp>(op)) {
      if (BlockArgument arg = viewedArgument(store.getMemRef()))
        stored[op->getBlock()].push_back(arg);
    }
  });
  SmallVector<std::pair<BlockArgument, BlockArgument>> pairs;
  for (auto &[block, outputs] : stored)
    for (BlockArgument output : outputs)
      for (BlockArgument input : loaded.lookup(block))
        if (input != output && input.getType() == output.getType() &&
            !llvm::is_contained(pairs, std::make_pair(input, output)))
          pairs.push_back({input, output});
  // Deterministic order: by argument number.
  llvm::sort(pairs, [](auto a, auto b) {
    return std::make_pair(a.first.getArgNumber(), a.second.getArgNumber()) <
           std::make_pair(b.first.getArgNumber(), b.second.getArgNumber());
  });
  return pairs;
}

/// The pairs the plan may bind to one buffer (binding indices count the
/// memref arguments).
SmallVector<std::pair<BlockArgument, BlockArgument>> markedPairs(func::FuncOp func) {
  SmallVector<std::pair<BlockArgument, BlockArgument>> pairs;
  auto marked = func->getAttrOfType<DenseI64ArrayAttr>(kiln::kernel::kInPlaceOperandsAttr);
  if (!marked)
    return pairs;
  SmallVector<BlockArgument> bindings;
  for (BlockArgument arg : func.getArguments())
    if (isa<MemRefType>(arg.getType()))
      bindings.push_back(arg);
  ArrayRef<int64_t> indices = marked.asArrayRef();
  for (size_t i = 0; i + 1 < indices.size(); i += 2)
    if (indices[i] < (int64_t)bindings.size() && indices[i + 1] < (int64_t)bindings.size())
      pairs.push_back({bindings[indices[i]], bindings[indices[i + 1]]});
  return pairs;
}

/// Whether equal aligned pointers mean the same memref: an identity layout
/// or a static offset, which the type then fixes.
bool pointerDecidesIdentity(Type type) {
  auto memref = dyn_cast<MemRefType>(type);
  if (!memref)
    return false;
  if (memref.getLayout().isIdentity())
    return true;
  int64_t offset;
  SmallVector<int64_t> strides;
  return succeeded(memref.getStridesAndOffset(strides, offset)) &&
         !ShapedType::isDynamic(offset) && llvm::none_of(strides, ShapedType::isDynamic);
}

struct VersionInPlacePass : kiln::kernel::impl::VersionInPlacePassBase<VersionInPlacePass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (!func->hasAttr(kiln::kernel::kKernelAttr) || func.isExternal() ||
        func.getNumResults() != 0 || !func.getBody().hasOneBlock())
      return;
    SmallVector<std::pair<BlockArgument, BlockArgument>> pairs = markedPairs(func);
    // With static sizes only the plan's own bindings alias (a compiled
    // graph's outputs are its own buffers); a kernel with symbolic sizes
    // may be an eager op's, called in place.
    auto symbols = func->getAttrOfType<IntegerAttr>(kiln::kernel::kNumSymbolsAttr);
    if (symbols && symbols.getInt() > 0)
      for (auto pair : accessPairs(func))
        if (!llvm::is_contained(pairs, pair))
          pairs.push_back(pair);
    llvm::erase_if(pairs, [](auto pair) { return !pointerDecidesIdentity(pair.first.getType()); });
    if (pairs.size() > kMaxVersions)
      pairs.resize(kMaxVersions);
    if (pairs.empty())
      return;

    Block &body = func.getBody().front();
    Operation *terminator = body.getTerminator();
    if (terminator->getNumOperands() != 0)
      return;
    OpBuilder builder(func.getContext());
    Location loc = func.getLoc();
    // The original body moves into a block of its own, then goes into the
    // innermost else-branch; each pair's copy is a then-branch.
    auto original = std::make_unique<Block>();
    original->getOperations().splice(original->end(), body.getOperations(), body.begin(),
                                     Block::iterator(terminator));
    Block *insertion = &body;
    Block::iterator point = Block::iterator(terminator);
    for (auto [input, output] : pairs) {
      builder.setInsertionPoint(insertion, point);
      Value inputPointer = memref::ExtractAlignedPointerAsIndexOp::create(builder, loc, input);
      Value outputPointer = memref::ExtractAlignedPointerAsIndexOp::create(builder, loc, output);
      Value same = arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::eq, inputPointer,
                                         outputPointer);
      auto branch = scf::IfOp::create(builder, loc, same, /*withElseRegion=*/true);
      IRMapping inPlace;
      inPlace.map(Value(input), Value(output));
      builder.setInsertionPoint(branch.thenBlock()->getTerminator());
      for (Operation &op : *original)
        builder.clone(op, inPlace);
      insertion = branch.elseBlock();
      point = Block::iterator(branch.elseBlock()->getTerminator());
    }
    insertion->getOperations().splice(point, original->getOperations());
  }
};

} // namespace
