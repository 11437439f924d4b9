#include "kiln/Dialect/Graph/IR/SymbolicShapes.h"

#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;

namespace kiln::graph {

static AffineMap encodingMap(RankedTensorType type) {
  if (auto map = dyn_cast_or_null<AffineMapAttr>(type.getEncoding()))
    return map.getValue();
  return {};
}

SmallVector<AffineExpr> dimExprs(ShapedType type) {
  SmallVector<AffineExpr> dims;
  AffineMap map;
  if (auto tensor = dyn_cast<RankedTensorType>(type))
    map = encodingMap(tensor);
  unsigned next = 0;
  for (int64_t size : type.getShape()) {
    if (!ShapedType::isDynamic(size))
      dims.push_back(getAffineConstantExpr(size, type.getContext()));
    else if (map && next < map.getNumResults())
      dims.push_back(map.getResult(next++));
    else
      dims.push_back(AffineExpr()); // an unnamed `?`: rejected by verifiers
  }
  return dims;
}

AffineExpr dimExpr(ShapedType type, unsigned dim) { return dimExprs(type)[dim]; }

SmallVector<AffineExpr> dynamicDimExprs(RankedTensorType type) {
  AffineMap map = encodingMap(type);
  if (!map)
    return {};
  return SmallVector<AffineExpr>(map.getResults());
}

AffineMap symbolMap(MLIRContext *context, ArrayRef<AffineExpr> exprs) {
  unsigned numSymbols = 0;
  for (AffineExpr expr : exprs)
    expr.walk([&](AffineExpr e) {
      if (auto symbol = dyn_cast<AffineSymbolExpr>(e))
        numSymbols = std::max(numSymbols, symbol.getPosition() + 1);
    });
  return AffineMap::get(0, numSymbols, exprs, context);
}

RankedTensorType symbolicTensorType(ArrayRef<AffineExpr> dims, Type element) {
  SmallVector<int64_t> shape;
  SmallVector<AffineExpr> dynamic;
  for (AffineExpr dim : dims) {
    if (auto constant = dyn_cast<AffineConstantExpr>(dim)) {
      shape.push_back(constant.getValue());
    } else {
      shape.push_back(ShapedType::kDynamic);
      dynamic.push_back(dim);
    }
  }
  if (dynamic.empty())
    return RankedTensorType::get(shape, element);
  return RankedTensorType::get(
      shape, element, AffineMapAttr::get(symbolMap(element.getContext(), dynamic)));
}

RankedTensorType withElementType(RankedTensorType type, Type element) {
  return RankedTensorType::get(type.getShape(), element, type.getEncoding());
}

bool hasValidSymbolicShape(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor)
    return true;
  AffineMap map = encodingMap(tensor);
  if (tensor.hasStaticShape())
    return !map;
  if (!map || map.getNumDims() != 0 ||
      map.getNumResults() != (unsigned)tensor.getNumDynamicDims())
    return false;
  if (map != symbolMap(tensor.getContext(), map.getResults()))
    return false;
  return llvm::none_of(map.getResults(), [](AffineExpr e) { return isa<AffineConstantExpr>(e); });
}

AffineExpr numElementsExpr(ShapedType type) {
  AffineExpr product = getAffineConstantExpr(1, type.getContext());
  for (AffineExpr dim : dimExprs(type))
    product = product * dim;
  return product;
}

bool sameSize(AffineExpr a, AffineExpr b) {
  if (a == b)
    return true;
  if (!a || !b)
    return false;
  MLIRContext *context = a.getContext();
  unsigned numSymbols = symbolMap(context, {a, b}).getNumSymbols();
  // Distinct primes, in several orders, so that no two symbols are confused.
  static const int64_t primes[] = {3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41};
  for (unsigned trial = 0; trial < 3; ++trial) {
    SmallVector<AffineExpr> values;
    for (unsigned i = 0; i < numSymbols; ++i)
      values.push_back(getAffineConstantExpr(primes[(i * 5 + trial * 7) % 12] + 40 * (i / 12),
                                             context));
    auto x = dyn_cast<AffineConstantExpr>(a.replaceSymbols(values));
    auto y = dyn_cast<AffineConstantExpr>(b.replaceSymbols(values));
    if (!x || !y || x.getValue() != y.getValue())
      return false;
  }
  return true;
}

bool sameShape(RankedTensorType a, RankedTensorType b) {
  if (a.getRank() != b.getRank())
    return false;
  for (auto [x, y] : llvm::zip(dimExprs(a), dimExprs(b)))
    if (!sameSize(x, y))
      return false;
  return true;
}

RankedTensorType withoutEncoding(RankedTensorType type) {
  return RankedTensorType::get(type.getShape(), type.getElementType());
}

} // namespace kiln::graph

std::string kiln::graph::describeSize(AffineExpr size) {
  std::string text;
  llvm::raw_string_ostream(text) << size;
  return text;
}

FailureOr<SmallVector<AffineExpr>> kiln::graph::broadcastDims(ArrayRef<AffineExpr> a,
                                                              ArrayRef<AffineExpr> b) {
  size_t rank = std::max(a.size(), b.size());
  auto isOne = [](AffineExpr e) {
    auto constant = dyn_cast<AffineConstantExpr>(e);
    return constant && constant.getValue() == 1;
  };
  SmallVector<AffineExpr> result;
  for (size_t i = 0; i < rank; ++i) {
    AffineExpr da = i < rank - a.size() ? AffineExpr() : a[i - (rank - a.size())];
    AffineExpr db = i < rank - b.size() ? AffineExpr() : b[i - (rank - b.size())];
    if (!da || isOne(da))
      result.push_back(db ? db : da);
    else if (!db || isOne(db) || sameSize(da, db))
      result.push_back(da);
    else
      return failure();
  }
  return result;
}
