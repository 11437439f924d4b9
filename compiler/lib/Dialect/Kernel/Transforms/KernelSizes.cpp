// Sizes inside outlined kernel functions: symbolic dims are expressions over
// the size symbols that every kernel of a symbolic graph takes as its last
// `index` arguments (see kiln-outline-kernels).
#include "kiln/Dialect/Kernel/Transforms/Passes.h"

#include "mlir/Dialect/Affine/Utils.h"

using namespace mlir;

namespace kiln::kernel {

SmallVector<Value> symbolArguments(Operation *op) {
  auto func = dyn_cast<func::FuncOp>(op);
  if (!func)
    func = op->getParentOfType<func::FuncOp>();
  if (!func || func.isExternal())
    return {};
  auto count = func->getAttrOfType<IntegerAttr>(kNumSymbolsAttr);
  if (!count)
    return {};
  Block &entry = func.getBody().front();
  unsigned n = count.getInt();
  assert(n <= entry.getNumArguments() && "kiln_kernel.num_symbols exceeds the arguments");
  return SmallVector<Value>(entry.getArguments().take_back(n));
}

Value sizeValue(OpBuilder &b, Location loc, AffineExpr size) {
  if (auto constant = dyn_cast<AffineConstantExpr>(size))
    return arith::ConstantIndexOp::create(b, loc, constant.getValue());
  Operation *scope = b.getInsertionBlock()->getParentOp();
  SmallVector<Value> symbols = symbolArguments(scope);
  Value value = affine::expandAffineExpr(b, loc, size, /*dimValues=*/{}, symbols);
  assert(value && "a symbolic size outside a kernel with size symbols");
  return value;
}

SmallVector<OpFoldResult> dimSizes(OpBuilder &b, Location loc, ArrayRef<AffineExpr> dims) {
  SmallVector<OpFoldResult> sizes;
  for (AffineExpr dim : dims) {
    if (auto constant = dyn_cast<AffineConstantExpr>(dim))
      sizes.push_back(b.getIndexAttr(constant.getValue()));
    else
      sizes.push_back(sizeValue(b, loc, dim));
  }
  return sizes;
}

} // namespace kiln::kernel
