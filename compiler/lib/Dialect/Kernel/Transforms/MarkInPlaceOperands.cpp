// Which kernel inputs an output may overwrite as it is computed (see
// Passes.td): the analysis behind writing mutated graph inputs in place.
#include "kiln/Dialect/Kernel/Transforms/Passes.h"

namespace kiln::kernel {
#define GEN_PASS_DEF_MARKINPLACEOPERANDSPASS
#include "kiln/Dialect/Kernel/Transforms/Passes.h.inc"
} // namespace kiln::kernel

using namespace mlir;

namespace {

/// An all-parallel generic whose results are written through identity maps
/// over `shape`: each element of its iteration space is one element of its
/// results.
bool isElementwiseOver(linalg::GenericOp generic, ArrayRef<int64_t> shape) {
  if (generic.getNumLoops() != shape.size() ||
      generic.getNumParallelLoops() != generic.getNumLoops())
    return false;
  for (OpOperand &init : generic.getDpsInitsMutable()) {
    auto type = dyn_cast<RankedTensorType>(init.get().getType());
    if (!type || type.getShape() != shape ||
        !generic.getMatchingIndexingMap(&init).isIdentity())
      return false;
  }
  return true;
}

/// The ops that read `input` (the tensor of an input binding), if each reads
/// it only at the element it writes: an elementwise generic over its shape
/// reading it through the identity map, or the copy of it into an output.
/// Empty when any other op reads it.
FailureOr<SmallVector<Operation *>> sameIndexReaders(Value input) {
  auto type = cast<RankedTensorType>(input.getType());
  SmallVector<Operation *> readers;
  for (OpOperand &use : input.getUses()) {
    Operation *user = use.getOwner();
    if (auto generic = dyn_cast<linalg::GenericOp>(user)) {
      if (!generic.isDpsInput(&use) || !isElementwiseOver(generic, type.getShape()) ||
          !generic.getMatchingIndexingMap(&use).isIdentity())
        return failure();
    } else if (!isa<bufferization::MaterializeInDestinationOp>(user)) {
      return failure();
    }
    readers.push_back(user);
  }
  return readers;
}

/// The op that computes what is written into an output binding: the
/// elementwise generic over its shape whose result it is, or the copy of an
/// input. Null when the value comes another way (a view, a matmul, ...).
Operation *sameIndexWriter(bufferization::MaterializeInDestinationOp write) {
  Value source = write.getSource();
  auto type = dyn_cast<RankedTensorType>(source.getType());
  if (!type)
    return nullptr;
  if (isa_and_nonnull<bufferization::ToTensorOp>(source.getDefiningOp()))
    return write;
  auto generic = source.getDefiningOp<linalg::GenericOp>();
  if (generic && isElementwiseOver(generic, type.getShape()))
    return generic;
  return nullptr;
}

struct MarkInPlaceOperandsPass
    : kiln::kernel::impl::MarkInPlaceOperandsPassBase<MarkInPlaceOperandsPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (!func->hasAttr(kiln::kernel::kKernelAttr) || func.isExternal())
      return;
    // Binding index of each memref argument (the index arguments before and
    // after them are the workgroup and the size symbols).
    DenseMap<Value, int64_t> binding;
    for (BlockArgument arg : func.getArguments())
      if (isa<MemRefType>(arg.getType()))
        binding[arg] = binding.size();

    struct Input {
      int64_t binding;
      Type type;
      SmallVector<Operation *> readers;
    };
    SmallVector<Input> inputs;
    SmallVector<std::tuple<int64_t, Type, Operation *>> outputs; // binding, type, writer
    Block &body = func.getBody().front();
    for (Operation &op : body) {
      if (auto toTensor = dyn_cast<bufferization::ToTensorOp>(op)) {
        auto it = binding.find(toTensor.getBuffer());
        auto readers = sameIndexReaders(toTensor.getResult());
        if (it != binding.end() && succeeded(readers))
          inputs.push_back({it->second, toTensor.getBuffer().getType(), std::move(*readers)});
      } else if (auto write = dyn_cast<bufferization::MaterializeInDestinationOp>(op)) {
        auto it = binding.find(write.getDest());
        if (it == binding.end())
          continue;
        if (Operation *writer = sameIndexWriter(write))
          outputs.push_back({it->second, write.getDest().getType(), writer});
      }
    }

    SmallVector<int64_t> pairs;
    for (const Input &input : inputs) {
      for (auto &[output, type, writer] : outputs) {
        if (type != input.type || !cast<MemRefType>(type).hasStaticShape() ||
            cast<MemRefType>(type).getNumElements() == 0)
          continue;
        // Every read of the input happens before the output is written,
        // or in the same op at the same element.
        if (llvm::all_of(input.readers, [&, writer = writer](Operation *reader) {
              return reader == writer || reader->isBeforeInBlock(writer);
            })) {
          pairs.push_back(input.binding);
          pairs.push_back(output);
        }
      }
    }
    if (pairs.empty())
      func->removeAttr(kiln::kernel::kInPlaceOperandsAttr);
    else
      func->setAttr(kiln::kernel::kInPlaceOperandsAttr,
                    DenseI64ArrayAttr::get(func.getContext(), pairs));
  }
};

} // namespace
