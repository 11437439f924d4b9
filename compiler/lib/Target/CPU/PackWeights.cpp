// Packing weights once (BLIS's packed B, hoisted out of the call).
//
// A matmul microkernel reads B as panels of NR columns, contiguous along k.
// The matmul kernels copy B into such panels on every call (and, for
// `x @ w.t()`, transpose it on the way). When B is a module's weight, those
// copies compute the same panels every call: this pass makes them a kernel of
// their own, whose result lives in a persistent buffer and which the runtime
// re-runs only when the weight changed (see kiln_plan.launch's `cached`).
#include "kiln/Dialect/Graph/IR/GraphOps.h"
#include "kiln/Dialect/Graph/IR/SymbolicShapes.h"
#include "kiln/Dialect/Kernel/Transforms/Passes.h"
#include "kiln/Dialect/Plan/IR/PlanOps.h"
#include "kiln/Target/CPU/Passes.h"
#include "kiln/Target/CPU/TileSizes.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/IR/SymbolTable.h"

#include <functional>
#include <map>

namespace kiln::cpu {
#define GEN_PASS_DEF_PACKWEIGHTSPASS
#include "kiln/Target/CPU/Passes.h.inc"
} // namespace kiln::cpu

using namespace mlir;
namespace graph = kiln::graph;
namespace plan = kiln::plan;

namespace {

/// A matmul operand to pack: kernel argument `argument` (B, [K, N] or, when
/// transposed, [N, K]) of a kernel with `columns` output columns.
struct PackedOperand {
  unsigned argument;
  bool transposed;
  int64_t columns, depth; // N and K
};

struct PackWeightsPass : kiln::cpu::impl::PackWeightsPassBase<PackWeightsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto target = kiln::kernel::requireTarget(module, getArgument());
    if (failed(target))
      return signalPassFailure();
    // As wide as the f32 tile that reads the panels (kiln-vectorize-matmul
    // checks the width it finds against its own).
    panelWidth = kiln::cpu::matmulTiles(*target, Float32Type::get(&getContext()))
                     .broadcast.columns;
    SymbolTable symbols(module);
    for (auto entry : llvm::to_vector(module.getOps<func::FuncOp>()))
      if (entry->hasAttr(plan::kEntryAttr))
      {
        packEntry(module, symbols, entry);
        cacheParameterKernels(symbols, entry);
      }
  }

  int64_t panelWidth = 0;

  /// The operands of `kernel`'s matmuls worth packing once: a 2-D f32 B read
  /// straight from one of its inputs, with at least one full panel.
  SmallVector<PackedOperand> packable(func::FuncOp kernel, unsigned numInputs) {
    SmallVector<PackedOperand> found;
    kernel.walk([&](graph::MatmulOp matmul) {
      auto lhs = cast<RankedTensorType>(matmul.getLhs().getType());
      auto rhs = cast<RankedTensorType>(matmul.getRhs().getType());
      auto result = cast<RankedTensorType>(matmul.getResult().getType());
      if (lhs.getRank() != 2 || rhs.getRank() != 2 || !rhs.hasStaticShape() ||
          !rhs.getElementType().isF32() || result.isDynamicDim(1))
        return;
      auto load = matmul.getRhs().getDefiningOp<bufferization::ToTensorOp>();
      auto argument = load ? dyn_cast<BlockArgument>(load.getBuffer()) : BlockArgument();
      if (!argument || argument.getOwner() != &kernel.getBody().front() ||
          argument.getArgNumber() < 2 || argument.getArgNumber() >= 2 + numInputs)
        return;
      bool transposed = matmul.getTransposeRhs();
      int64_t columns = result.getDimSize(1), depth = rhs.getDimSize(transposed ? 1 : 0);
      if (columns < panelWidth)
        return;
      for (const PackedOperand &known : found)
        if (known.argument == argument.getArgNumber() && known.transposed == transposed)
          return;
      found.push_back({argument.getArgNumber(), transposed, columns, depth});
    });
    return found;
  }

  void packEntry(ModuleOp module, SymbolTable &symbols, func::FuncOp entry) {
    Block &body = entry.getBody().front();
    DenseMap<StringRef, int> launchesOf;
    for (auto launch : body.getOps<plan::LaunchOp>())
      ++launchesOf[launch.getKernel()];
    // Packing kernels and their buffers go first: they read only inputs.
    OpBuilder front = OpBuilder::atBlockBegin(&body);
    std::map<std::pair<unsigned, bool>, Value> packedOf; // (entry argument, transposed)
    for (auto launch : llvm::to_vector(body.getOps<plan::LaunchOp>())) {
      auto kernel = symbols.lookup<func::FuncOp>(launch.getKernel());
      if (!kernel || launchesOf[launch.getKernel()] != 1 || launch.getCached())
        continue;
      unsigned numInputs = launch.getNumInputs();
      SmallVector<Value> packedBuffers;
      SmallVector<PackedOperand> operands;
      for (const PackedOperand &operand : packable(kernel, numInputs)) {
        auto weight = dyn_cast<BlockArgument>(launch.getBindings()[operand.argument - 2]);
        if (!weight || weight.getOwner() != &body ||
            !entry.getArgAttr(weight.getArgNumber(), graph::kParameterArgAttr))
          continue;
        Value &packed = packedOf[{weight.getArgNumber(), operand.transposed}];
        if (!packed)
          packed = packWeight(module, symbols, front, weight, operand);
        packedBuffers.push_back(packed);
        operands.push_back(operand);
      }
      if (operands.empty())
        continue;
      // The panels are inputs after the kernel's own: (wg, count, inputs...,
      // panels..., outputs..., symbols...).
      for (auto [i, operand] : llvm::enumerate(operands)) {
        OpBuilder b(kernel);
        auto attr = kiln::kernel::PackedRhsAttr::get(b.getContext(), operand.argument,
                                                     operand.transposed, panelWidth);
        if (failed(kernel.insertArgument(
                2 + numInputs + i, packedBuffers[i].getType(),
                b.getDictionaryAttr(
                    b.getNamedAttr(kiln::kernel::KernelDialect::kPackedRhsAttrName, attr)),
                kernel.getLoc())))
          return signalPassFailure();
      }
      SmallVector<Value> bindings = llvm::to_vector(launch.getBindings());
      bindings.insert(bindings.begin() + numInputs, packedBuffers.begin(), packedBuffers.end());
      OpBuilder b(launch);
      auto widened = plan::LaunchOp::create(
          b, launch.getLoc(), launch.getKernel(), launch.getWorkgroups(),
          numInputs + operands.size(), bindings, launch.getSymbolicExtentAttr(),
          launch.getSymbolicWorkAttr(), /*cached=*/false, /*alignment=*/IntegerAttr(),
          /*grid=*/false);
      widened->setDiscardableAttrs(launch->getDiscardableAttrDictionary());
      launch.erase();
    }
  }

  /// A launch that reads only parameters (a packing kernel; batch norm's
  /// per-channel scale and shift) computes the same values until one of them
  /// changes: it becomes cached, its buffers persistent. Not when a
  /// result is (a view of) a graph output, which each call must own, nor
  /// for symbolic launches.
  void cacheParameterKernels(SymbolTable &symbols, func::FuncOp entry) {
    Block &body = entry.getBody().front();
    DenseSet<Value> returned;
    for (Value v : body.getTerminator()->getOperands())
      returned.insert(v);
    // Whether `buffer` or a view of it (transitively) is returned.
    std::function<bool(Value)> escapes = [&](Value buffer) {
      if (returned.contains(buffer))
        return true;
      for (Operation *user : buffer.getUsers())
        if (auto view = dyn_cast<plan::ViewOp>(user); view && escapes(view.getResult()))
          return true;
      return false;
    };
    for (auto launch : llvm::to_vector(body.getOps<plan::LaunchOp>())) {
      auto kernel = symbols.lookup<func::FuncOp>(launch.getKernel());
      if (launch.getCached() || launch.getSymbolicExtentAttr() || !kernel ||
          kernel->hasAttr(kiln::kernel::kNumSymbolsAttr))
        continue;
      unsigned numInputs = launch.getNumInputs();
      auto bindings = launch.getBindings();
      bool parametersOnly = numInputs > 0 && llvm::all_of(bindings.take_front(numInputs), [&](Value v) {
        auto arg = dyn_cast<BlockArgument>(v);
        return arg && arg.getOwner() == &body &&
               entry.getArgAttr(arg.getArgNumber(), kiln::graph::kParameterArgAttr);
      });
      bool freshBuffers = llvm::all_of(bindings.drop_front(numInputs), [&](Value v) {
        auto alloc = v.getDefiningOp<plan::AllocOp>();
        return alloc && !alloc.getPersistent() && alloc.getType().hasStaticShape() &&
               llvm::count(bindings, v) == 1 && !escapes(v);
      });
      if (!parametersOnly || !freshBuffers)
        continue;
      for (Value v : bindings.drop_front(numInputs))
        v.getDefiningOp<plan::AllocOp>().setPersistent(true);
      launch.setCached(true);
    }
  }

  /// A buffer [N / NR, K, NR] and the launch of a kernel that fills it from
  /// `weight`: panel p holds B[:, p * NR : (p + 1) * NR].
  Value packWeight(ModuleOp module, SymbolTable &symbols, OpBuilder &front,
                   BlockArgument weight, const PackedOperand &operand) {
    MLIRContext *context = module.getContext();
    Location loc = weight.getLoc();
    auto weightType = cast<MemRefType>(weight.getType());
    Type element = weightType.getElementType();
    int64_t nr = panelWidth, panels = operand.columns / nr, k = operand.depth;
    int64_t full = panels * nr;
    auto packedType = MemRefType::get({panels, k, nr}, element);

    OpBuilder b(context);
    b.setInsertionPointToEnd(module.getBody());
    std::string name = "pack_" + std::to_string(weight.getArgNumber()) +
                       (operand.transposed ? "_nk" : "_kn");
    Type index = b.getIndexType();
    auto kernel = func::FuncOp::create(
        b, loc, name, b.getFunctionType({index, index, weightType, packedType}, {}));
    kernel.setPrivate();
    symbols.insert(kernel); // may rename it to keep symbols unique
    kernel->setAttr(kiln::kernel::kKernelAttr, kernel.getSymNameAttr());
    kernel->setAttr(kiln::kernel::kExtentAttr, b.getI64IntegerAttr(panels));
    Block *block = kernel.addEntryBlock();
    b.setInsertionPointToStart(block);
    auto tensor = [&](ArrayRef<int64_t> shape) { return RankedTensorType::get(shape, element); };
    Value source = bufferization::ToTensorOp::create(
        b, loc, tensor(weightType.getShape()), block->getArgument(2), /*restrict=*/true);
    // Columns past the last full panel stay in B (the microkernel's column
    // edge reads them there).
    Value panelsValue;
    if (operand.transposed) { // [N, K] -> [P, NR, K] -> [P, K, NR]
      if (full != operand.columns)
        source = graph::SliceOp::create(b, loc, tensor({full, k}), source, 0, 0, 1);
      Value split = graph::ReshapeOp::create(b, loc, tensor({panels, nr, k}), source);
      panelsValue = graph::PermuteOp::create(b, loc, tensor({panels, k, nr}), split,
                                             b.getDenseI64ArrayAttr({0, 2, 1}));
    } else { // [K, N] -> [K, P, NR] -> [P, K, NR]
      if (full != operand.columns)
        source = graph::SliceOp::create(b, loc, tensor({k, full}), source, 1, 0, 1);
      Value split = graph::ReshapeOp::create(b, loc, tensor({k, panels, nr}), source);
      panelsValue = graph::PermuteOp::create(b, loc, tensor({panels, k, nr}), split,
                                             b.getDenseI64ArrayAttr({1, 0, 2}));
    }
    bufferization::MaterializeInDestinationOp::create(b, loc, TypeRange{}, panelsValue,
                                                      block->getArgument(3),
                                                      /*restrict=*/true, /*writable=*/true);
    func::ReturnOp::create(b, loc);

    // Reading only a parameter, the launch becomes cached and its buffer
    // persistent (cacheParameterKernels, after this).
    Value packed = plan::AllocOp::create(front, loc, packedType, AffineMapAttr());
    // One workgroup per few panels: packing runs seldom, but at the first
    // call it is on the latency path.
    int64_t workgroups = std::max<int64_t>(1, std::min<int64_t>(panels, 64));
    SmallVector<Value> bindings{weight, packed};
    plan::LaunchOp::create(front, loc, kernel.getSymName(), workgroups, /*num_inputs=*/1,
                           bindings, AffineMapAttr(), AffineMapAttr(), /*cached=*/false,
                           /*alignment=*/IntegerAttr(), /*grid=*/false);
    return packed;
  }
};

} // namespace
