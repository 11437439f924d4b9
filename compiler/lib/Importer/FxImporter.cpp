// JSON FX graph -> kiln_graph.
//
// Each ATen overload maps to a small builder. Type promotion is made explicit
// here: operands are converted to the node's result dtype (taken from the FX
// node's fake-tensor metadata) so graph ops never promote implicitly.
#include "kiln/Importer/FxImporter.h"
#include "kiln/Dialect/Graph/IR/GraphOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/JSON.h"

#include <cmath>
#include <functional>
#include <optional>
#include <type_traits>
#include <set>

using namespace mlir;
using namespace kiln;
namespace json = llvm::json;

namespace {

/// The result metadata of one FX node output. A symbolic dim is kDynamic in
/// `shape`, and `dims` holds every dim as an expression over the graph's
/// size symbols (empty when the shape is static).
struct TensorMeta {
  SmallVector<int64_t> shape;
  Type element;
  SmallVector<AffineExpr> dims;

  RankedTensorType type() const {
    if (dims.empty())
      return RankedTensorType::get(shape, element);
    return graph::symbolicTensorType(dims, element);
  }
};

/// A Python number of the graph. An integer keeps its exact 64-bit value
/// (a double holds 53 bits: 2**53 + 1 would become 2**53), which integer
/// constants use; float constants use `value`.
struct Scalar {
  double value = 0;
  std::optional<int64_t> integer;

  Scalar(double value) : value(value) {}
  template <typename T, std::enable_if_t<std::is_integral_v<T>, int> = 0>
  Scalar(T integer) : value((double)integer), integer((int64_t)integer) {}
  operator double() const { return value; }
  /// The value as an integer constant (a float is truncated, as ATen does).
  int64_t asInteger() const { return integer ? *integer : (int64_t)value; }
};

class Importer;
using Handler = std::function<LogicalResult(Importer &)>;

class Importer {
public:
  Importer(MLIRContext &ctx) : ctx(ctx), b(&ctx) {}

  OwningOpRef<ModuleOp> run(StringRef text);

  // --- accessors used by the op handlers -----------------------------------
  Location loc() const { return nodeLoc; }
  OpBuilder &builder() { return b; }
  const TensorMeta &out(unsigned i = 0) const { return outputs[i]; }
  RankedTensorType outType(unsigned i = 0) const { return outputs[i].type(); }
  size_t numArgs() const { return args ? args->size() : 0; }
  bool deterministic() const { return deterministicGraph; }

  /// Positional argument `i`, or keyword `name`, or null if absent.
  const json::Value *arg(unsigned i, StringRef name = "") const {
    if (args && i < args->size())
      return &(*args)[i];
    if (kwargs && !name.empty())
      if (const json::Value *v = kwargs->get(name))
        return v;
    return nullptr;
  }
  bool isTensor(const json::Value *v) const {
    return v && v->getAsObject() && v->getAsObject()->get("ref");
  }
  bool isNull(const json::Value *v) const { return !v || v->kind() == json::Value::Null; }

  FailureOr<Value> tensor(unsigned i, StringRef name = "") {
    const json::Value *v = arg(i, name);
    if (!isTensor(v))
      return fail("argument " + std::to_string(i) + " must be a tensor");
    return tensorOf(*v);
  }
  FailureOr<Value> tensorOf(const json::Value &v) {
    const json::Object *ref = v.getAsObject();
    auto target = ref ? ref->getString("ref") : std::nullopt;
    int64_t index = ref ? ref->getInteger("index").value_or(0) : 0;
    auto it = values.find(target.value_or(""));
    if (!target || it == values.end())
      return fail("reference to unknown value '" + target.value_or("").str() + "'");
    if (index < 0 || index >= (int64_t)it->second.size())
      return fail("'" + target->str() + "' has no result " + std::to_string(index));
    return it->second[index];
  }
  FailureOr<Scalar> number(const json::Value *v, StringRef what) {
    if (v) {
      // -0.0 is integral, but its sign matters (x / -0.0).
      if (auto d = v->getAsNumber(); d && *d == 0 && std::signbit(*d))
        return Scalar(*d);
      if (auto i = v->getAsInteger())
        return Scalar(*i);
      if (auto d = v->getAsNumber())
        return Scalar(*d);
      if (auto flag = v->getAsBoolean())
        return Scalar(*flag ? 1 : 0);
      if (auto *o = v->getAsObject())
        if (auto s = o->getString("float")) {
          if (*s == "inf") return Scalar((double)INFINITY);
          if (*s == "-inf") return Scalar(-(double)INFINITY);
          if (*s == "nan") return Scalar((double)NAN);
        }
      if (sizeArg(v))
        return fail(what.str() + " is a symbolic integer, which this op takes only as a "
                                 "constant (compile with static shapes)");
    }
    return fail(what.str() + " must be a number");
  }
  FailureOr<int64_t> integer(const json::Value *v, StringRef what) {
    if (v)
      if (auto i = v->getAsInteger())
        return *i;
    return fail(what.str() + " must be an integer");
  }
  FailureOr<SmallVector<int64_t>> intList(const json::Value *v, StringRef what) {
    SmallVector<int64_t> list;
    if (v)
      if (auto i = v->getAsInteger())
        return SmallVector<int64_t>{*i};
    const json::Array *array = v ? v->getAsArray() : nullptr;
    if (!array)
      return fail(what.str() + " must be a list of integers");
    for (const json::Value &e : *array) {
      auto i = e.getAsInteger();
      if (!i)
        return fail(what.str() + " must be a list of integers");
      list.push_back(*i);
    }
    return list;
  }
  /// A list of sizes: integers, or SymInts ({"size": EXPR}) as expressions
  /// over the graph's symbols.
  FailureOr<SmallVector<AffineExpr>> sizeList(const json::Value *v, StringRef what) {
    const json::Array *array = v ? v->getAsArray() : nullptr;
    if (!array)
      return fail(what.str() + " must be a list of sizes");
    SmallVector<AffineExpr> list;
    for (const json::Value &e : *array) {
      if (auto i = e.getAsInteger()) {
        list.push_back(getAffineConstantExpr(*i, b.getContext()));
        continue;
      }
      const json::Value *size = sizeArg(&e);
      if (!size)
        return fail(what.str() + " must be a list of sizes");
      auto expr = parseSize(*size, nodeLoc);
      if (failed(expr))
        return failure();
      list.push_back(*expr);
    }
    return list;
  }
  /// A dim argument normalized against `rank` (negative dims count from the
  /// back, as in ATen); `missing` when it is absent or None.
  FailureOr<int64_t> dim(unsigned i, StringRef name, int64_t rank,
                         std::optional<int64_t> missing = std::nullopt) {
    const json::Value *v = arg(i, name);
    if (isNull(v) && missing)
      return *missing;
    auto d = integer(v, name);
    if (failed(d))
      return failure();
    int64_t bound = std::max<int64_t>(rank, 1); // ATen accepts 0 and -1 for scalars
    if (*d < -bound || *d >= bound)
      return fail(name.str() + " " + std::to_string(*d) + " is out of range for rank " +
                  std::to_string(rank));
    return *d < 0 ? *d + bound : *d;
  }
  /// Whether the node reads or makes a tensor with a symbolic dim.
  bool touchesSymbolicSizes() {
    for (const TensorMeta &meta : outputs)
      if (!meta.dims.empty())
        return true;
    auto symbolic = [&](const json::Value &v) {
      if (!isTensor(&v))
        return false;
      auto it = values.find(v.getAsObject()->getString("ref").value_or(""));
      if (it == values.end())
        return false; // the handler reports the unknown reference
      return llvm::any_of(it->second,
                          [](Value value) { return graph::isSymbolic(value.getType()); });
    };
    if (args)
      for (const json::Value &v : *args) {
        if (symbolic(v))
          return true;
        if (const json::Array *list = v.getAsArray())
          for (const json::Value &e : *list)
            if (symbolic(e))
              return true;
      }
    if (kwargs)
      for (const auto &kv : *kwargs)
        if (symbolic(kv.second))
          return true;
    return false;
  }
  bool flag(unsigned i, StringRef name, bool defaultValue) {
    const json::Value *v = arg(i, name);
    if (isNull(v))
      return defaultValue;
    return v->getAsBoolean().value_or(defaultValue);
  }

  /// A scalar or tensor operand as a tensor of element type `element`.
  FailureOr<Value> operandAs(unsigned i, Type element, StringRef name = "") {
    const json::Value *v = arg(i, name);
    if (isTensor(v)) {
      auto t = tensor(i, name);
      if (failed(t))
        return failure();
      return convert(*t, element);
    }
    if (const json::Value *size = sizeArg(v)) { // a SymInt operand: s0 * 2
      auto expr = parseSize(*size, nodeLoc);
      if (failed(expr))
        return failure();
      return sizeValue(*expr, element);
    }
    auto n = number(v, "argument " + std::to_string(i));
    if (failed(n))
      return failure();
    return splat({}, element, *n);
  }
  /// The expression of a SymInt argument ({"size": EXPR}), else null.
  static const json::Value *sizeArg(const json::Value *v) {
    const json::Object *o = v ? v->getAsObject() : nullptr;
    return o ? o->get("size") : nullptr;
  }
  /// The element type two operands are compared in.
  FailureOr<Type> commonType(unsigned i, unsigned j) {
    int rank = 0; // 0 bool, 1 int, 2 float
    Type floatType;
    for (unsigned k : {i, j}) {
      const json::Value *v = arg(k);
      if (isTensor(v)) {
        auto t = tensor(k);
        if (failed(t))
          return failure();
        Type e = cast<RankedTensorType>(t->getType()).getElementType();
        if (isa<FloatType>(e)) {
          rank = 2;
          if (!floatType || e.getIntOrFloatBitWidth() > floatType.getIntOrFloatBitWidth())
            floatType = e; // compare in the widest float type
        }
        else if (!e.isInteger(1))
          rank = std::max(rank, 1);
      } else if (v && v->kind() == json::Value::Number && !v->getAsInteger()) {
        rank = 2;
      } else if (v && (v->getAsObject() || (v->getAsInteger() && !v->getAsBoolean()))) {
        rank = std::max(rank, v->getAsObject() && !sizeArg(v) ? 2 : 1); // SymInts: int
      }
    }
    if (rank == 2)
      return floatType ? floatType : Type(b.getF32Type());
    return rank == 1 ? Type(b.getI64Type()) : Type(b.getI1Type());
  }

  Value convert(Value v, Type element) {
    auto type = cast<RankedTensorType>(v.getType());
    if (type.getElementType() == element)
      return v;
    return graph::ConvertOp::create(b, nodeLoc, type.clone(element), v);
  }
  Value splat(ArrayRef<int64_t> shape, Type element, Scalar value) {
    auto type = RankedTensorType::get(shape, element);
    Attribute scalar;
    if (isa<FloatType>(element))
      scalar = b.getFloatAttr(element, value.value);
    else if (element.isInteger(1))
      scalar = b.getBoolAttr(value.integer ? *value.integer != 0 : value.value != 0);
    else
      scalar = b.getIntegerAttr(element, value.asInteger());
    return graph::ConstantOp::create(b, nodeLoc, DenseElementsAttr::get(type, scalar));
  }
  /// `type` filled with `value`: a constant, or for a symbolic shape the
  /// scalar expanded to it.
  Value splat(RankedTensorType type, Scalar value) {
    if (!graph::isSymbolic(type))
      return splat(type.getShape(), type.getElementType(), value);
    return graph::ExpandOp::create(b, nodeLoc, type, splat({}, type.getElementType(), value));
  }
  /// The node's result filled with `value`.
  Value splatOut(Scalar value) { return splat(outType(), value); }
  Value reshape(Value v, RankedTensorType type) {
    if (v.getType() == type)
      return v;
    return graph::ReshapeOp::create(b, nodeLoc, type, v);
  }

  LogicalResult define(ValueRange results) {
    if (results.size() != outputs.size())
      return fail("produced " + std::to_string(results.size()) + " results, the FX node has " +
                  std::to_string(outputs.size()));
    for (auto [value, meta] : llvm::zip(results, outputs)) {
      RankedTensorType type = meta.type();
      if (value.getType() != type) {
        emitError(nodeLoc) << "internal importer error: " << target << " built "
                           << value.getType() << " but the FX node has " << type;
        return failure();
      }
    }
    if (!values.try_emplace(nodeName, results.begin(), results.end()).second)
      return fail("the graph defines '" + nodeName + "' twice");
    return success();
  }

  LogicalResult fail(const std::string &message) {
    emitError(nodeLoc) << target << ": " << message;
    return failure();
  }

  /// A size as a value (a 0-d tensor of `element`): a constant, or for a
  /// symbolic size a kiln_graph.size (i64 converted for other types).
  Value sizeValue(AffineExpr size, Type element) {
    if (auto constant = dyn_cast<AffineConstantExpr>(size))
      return splat({}, element, (double)constant.getValue());
    bool direct = isa<FloatType>(element) || element.isInteger(64) || element.isInteger(32);
    Value value = graph::SizeOp::create(
        b, nodeLoc, RankedTensorType::get({}, direct ? element : b.getI64Type()),
        AffineMapAttr::get(graph::symbolMap(b.getContext(), {size})));
    return convert(value, element);
  }

  /// A size for a message, with Dynamo's names for the symbols: `s77 * 4`.
  std::string describe(AffineExpr size) {
    if (auto constant = dyn_cast<AffineConstantExpr>(size))
      return std::to_string(constant.getValue());
    if (auto symbol = dyn_cast<AffineSymbolExpr>(size))
      return symbol.getPosition() < symbolNames.size() ? symbolNames[symbol.getPosition()]
                                                       : graph::describeSize(size);
    auto binary = cast<AffineBinaryOpExpr>(size);
    StringRef op = binary.getKind() == AffineExprKind::Add        ? " + "
                   : binary.getKind() == AffineExprKind::Mul      ? " * "
                   : binary.getKind() == AffineExprKind::FloorDiv ? " // "
                   : binary.getKind() == AffineExprKind::CeilDiv  ? " ceildiv "
                                                                  : " % ";
    auto operand = [&](AffineExpr e) {
      std::string text = describe(e);
      return isa<AffineBinaryOpExpr>(e) ? "(" + text + ")" : text;
    };
    return operand(binary.getLHS()) + op.str() + operand(binary.getRHS());
  }

  /// Guards an indexing op: at run time every element of `indices` (an
  /// integer tensor) must lie in [-size, size) when negative indices count
  /// from the back, else in [0, size); otherwise the run raises IndexError
  /// naming this node's op and source line (kiln_graph.assert). A symbolic
  /// size is compared as the value of its symbols at run time.
  void assertInRange(Value indices, int64_t size, bool negativeAllowed,
                     StringRef what = "index") {
    assertInRange(indices, getAffineConstantExpr(size, b.getContext()), negativeAllowed, what);
  }
  void assertInRange(Value indices, AffineExpr size, bool negativeAllowed,
                     StringRef what = "index") {
    auto type = cast<RankedTensorType>(indices.getType());
    if (type.hasStaticShape() && type.getNumElements() == 0)
      return;
    auto boolType = graph::withElementType(type, b.getI1Type());
    Type element = type.getElementType();
    Value low = negativeAllowed ? sizeValue(-size, element) : splat({}, element, 0);
    Value high = sizeValue(size, element);
    Value aboveLow = graph::GeOp::create(b, nodeLoc, boolType, indices, low);
    Value belowHigh = graph::LtOp::create(b, nodeLoc, boolType, indices, high);
    Value inRange = graph::WhereOp::create(b, nodeLoc, boolType, aboveLow, belowHigh,
                                           splat({}, b.getI1Type(), 0));
    auto scalar = RankedTensorType::get({}, b.getI1Type());
    Value all = graph::AllOp::create(b, nodeLoc, scalar, inRange, b.getDenseI64ArrayAttr({}),
                                     false);
    std::string bound = describe(size);
    std::string range =
        negativeAllowed
            ? "[-" + (isa<AffineBinaryOpExpr>(size) ? "(" + bound + ")" : bound) + ", " + bound + ")"
            : "[0, " + bound + ")";
    std::string message = what.str() + " out of range in " + target + " (node " + nodeName +
                          ") at " + sourceLine() + ": every " + what.str() +
                          " must be in " + range;
    graph::AssertOp::create(b, nodeLoc, all, b.getStringAttr(message), graph::CheckKind::Index);
  }

  /// Guards an integer divisor: at run time no element may be 0, or the run
  /// raises RuntimeError(`what`) naming this node (kiln_graph.assert).
  void assertNonZero(Value divisor, StringRef what) {
    auto type = cast<RankedTensorType>(divisor.getType());
    if (type.hasStaticShape() && type.getNumElements() == 0)
      return;
    auto boolType = type.clone(b.getI1Type());
    Value nonzero = graph::NeOp::create(b, nodeLoc, boolType, divisor,
                                        splat({}, type.getElementType(), 0));
    Value all = graph::AllOp::create(b, nodeLoc, RankedTensorType::get({}, b.getI1Type()),
                                     nonzero, b.getDenseI64ArrayAttr({}), false);
    std::string message = what.str() + " in " + target + " (node " + nodeName + ") at " +
                          sourceLine() + ": integer division by zero";
    graph::AssertOp::create(b, nodeLoc, all, b.getStringAttr(message),
                            graph::CheckKind::Runtime);
  }

  /// "file:line" of the node being imported, for run-time messages.
  std::string sourceLine() const {
    std::string text = "<unknown source line>";
    nodeLoc->walk([&](Location l) {
      if (auto file = dyn_cast<FileLineColLoc>(l)) {
        text = file.getFilename().str() + ":" + std::to_string(file.getLine());
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    return text;
  }

private:
  LogicalResult fail(Location l, const Twine &message) {
    emitError(l) << message;
    return failure();
  }
  FailureOr<Type> parseDType(const json::Value *v, Location l);
  FailureOr<TensorMeta> parseMeta(const json::Value *v, Location l);
  FailureOr<AffineExpr> parseSize(const json::Value &v, Location l);
  LogicalResult parseSymbols(const json::Object &graph, func::FuncOp func);
  LogicalResult parseInputWrites(const json::Object &graph, func::FuncOp func,
                                 ArrayRef<int64_t> resultOf);
  Location parseLoc(const json::Object &node, StringRef name);
  LogicalResult importNode(const json::Object &node);

  MLIRContext &ctx;
  OpBuilder b;
  llvm::StringMap<SmallVector<Value>> values;
  // State of the node being imported.
  Location nodeLoc = UnknownLoc::get(&ctx);
  std::string nodeName, target;
  const json::Array *args = nullptr;
  const json::Object *kwargs = nullptr;
  SmallVector<TensorMeta> outputs;
  int64_t numSymbols = 0; // size symbols of the graph
  // "deterministic": torch.use_deterministic_algorithms was on, so float
  // scatter sums add in order (kiln_graph.scatter's `ordered`).
  bool deterministicGraph = false;
  SmallVector<std::string> symbolNames; // Dynamo's, for messages
};

//===----------------------------------------------------------------------===//
// Op handlers
//===----------------------------------------------------------------------===//

template <typename Op>
LogicalResult binary(Importer &im) {
  Type element = im.out().element;
  auto lhs = im.operandAs(0, element), rhs = im.operandAs(1, element);
  if (failed(lhs) || failed(rhs))
    return failure();
  return im.define(Op::create(im.builder(), im.loc(), im.outType(), *lhs, *rhs)->getResults());
}

/// ATen raises for an integer divisor (operand 1) of 0: a scalar 0 is
/// refused here (the op then runs in eager, which raises), a tensor divisor
/// gets an assert.
LogicalResult checkIntegerDivisor(Importer &im, Value divisor) {
  // A tensor or a symbolic size (positive, unless its expression can be 0).
  if (im.isTensor(im.arg(1)) || Importer::sizeArg(im.arg(1))) {
    im.assertNonZero(divisor, "ZeroDivisionError");
    return success();
  }
  auto value = im.number(im.arg(1), "other");
  if (failed(value) || *value == 0)
    return im.fail("integer division by zero");
  return success();
}

/// A division-like op built by `build` from operands 0 and 1 in the result
/// type, with the divisor checked (see checkIntegerDivisor).
template <typename BuildFn>
LogicalResult division(Importer &im, BuildFn build) {
  Type element = im.out().element;
  auto lhs = im.operandAs(0, element), rhs = im.operandAs(1, element);
  if (failed(lhs) || failed(rhs))
    return failure();
  if (isa<IntegerType>(element) && failed(checkIntegerDivisor(im, *rhs)))
    return failure();
  return im.define(build(*lhs, *rhs)->getResults());
}

/// fmod and remainder.
template <typename Op>
LogicalResult remainder(Importer &im) {
  return division(im, [&](Value lhs, Value rhs) {
    return Op::create(im.builder(), im.loc(), im.outType(), lhs, rhs);
  });
}

/// aten.div with a rounding_mode: none is true division; trunc and floor
/// also divide integers.
LogicalResult divide(Importer &im, std::optional<StringRef> roundingMode = std::nullopt) {
  std::string mode;
  if (roundingMode)
    mode = roundingMode->str();
  else if (const json::Value *v = im.arg(2, "rounding_mode"))
    if (auto s = v->getAsString())
      mode = s->str();
  if (mode.empty())
    return binary<graph::DivOp>(im);
  std::optional<graph::RoundingMode> rounding = graph::symbolizeRoundingMode(mode);
  if (!rounding)
    return im.fail("rounding_mode must be None, 'trunc' or 'floor'");
  return division(im, [&](Value lhs, Value rhs) {
    return graph::DivRoundOp::create(im.builder(), im.loc(), im.outType(), lhs, rhs, *rounding);
  });
}

/// add/sub with `alpha`: a op (alpha * b).
template <typename Op>
LogicalResult binaryAlpha(Importer &im) {
  Type element = im.out().element;
  auto lhs = im.operandAs(0, element), rhs = im.operandAs(1, element);
  if (failed(lhs) || failed(rhs))
    return failure();
  Value right = *rhs;
  const json::Value *alpha = im.arg(2, "alpha");
  if (!im.isNull(alpha)) {
    auto value = im.number(alpha, "alpha");
    if (failed(value))
      return failure();
    if (*value != 1.0) {
      auto type = cast<RankedTensorType>(right.getType());
      right = graph::MulOp::create(im.builder(), im.loc(), type, right,
                                   im.splat({}, element, *value));
    }
  }
  return im.define(Op::create(im.builder(), im.loc(), im.outType(), *lhs, right)->getResults());
}

/// A comparison of operands 0 and 1, or of operand 0 with itself (isnan is
/// x != x).
template <typename Op>
LogicalResult compare(Importer &im, bool sameOperand = false) {
  unsigned other = sameOperand ? 0 : 1;
  auto common = im.commonType(0, other);
  if (failed(common))
    return failure();
  auto lhs = im.operandAs(0, *common), rhs = im.operandAs(other, *common);
  if (failed(lhs) || failed(rhs))
    return failure();
  return im.define(Op::create(im.builder(), im.loc(), im.outType(), *lhs, *rhs)->getResults());
}

template <typename Op>
LogicalResult unary(Importer &im) {
  auto input = im.operandAs(0, im.out().element);
  if (failed(input))
    return failure();
  return im.define(Op::create(im.builder(), im.loc(), im.outType(), *input)->getResults());
}

/// floor, ceil, trunc, round: integers are already integral (ATen returns them).
template <typename Op>
LogicalResult rounding(Importer &im) {
  if (isa<FloatType>(im.out().element))
    return unary<Op>(im);
  auto input = im.operandAs(0, im.out().element);
  if (failed(input))
    return failure();
  return im.define(graph::CloneOp::create(im.builder(), im.loc(), im.outType(), *input)
                       ->getResults());
}

/// Operand i as bool: nonzero is true (ATen's truthiness; NaN is true).
FailureOr<Value> truth(Importer &im, unsigned i) {
  auto t = im.tensor(i);
  if (failed(t))
    return failure();
  auto type = cast<RankedTensorType>(t->getType());
  if (type.getElementType().isInteger(1))
    return *t;
  Value zero = im.splat({}, type.getElementType(), 0);
  return Value(graph::NeOp::create(im.builder(), im.loc(), type.clone(im.builder().getI1Type()),
                                   *t, zero));
}

/// logical_not/and/or/xor as comparisons and selects on bools, which fuse as
/// any elementwise op does. The result may be another dtype (out=): convert.
LogicalResult logical(Importer &im, StringRef kind) {
  OpBuilder &b = im.builder();
  auto lhs = truth(im, 0);
  if (failed(lhs))
    return failure();
  auto boolType = im.outType().clone(b.getI1Type());
  Value result;
  if (kind == "not") {
    result = graph::EqOp::create(b, im.loc(), boolType, *lhs, im.splat({}, b.getI1Type(), 0));
  } else {
    auto rhs = truth(im, 1);
    if (failed(rhs))
      return failure();
    if (kind == "xor")
      result = graph::NeOp::create(b, im.loc(), boolType, *lhs, *rhs);
    else if (kind == "and") // lhs ? rhs : false
      result = graph::WhereOp::create(b, im.loc(), boolType, *lhs, *rhs,
                                      im.splat({}, b.getI1Type(), 0));
    else // or: lhs ? true : rhs
      result = graph::WhereOp::create(b, im.loc(), boolType, *lhs,
                                      im.splat({}, b.getI1Type(), 1), *rhs);
  }
  return im.define(im.convert(result, im.out().element));
}

/// clamp and friends: minimum(maximum(x, lo), hi), each bound optional. NaN
/// propagates and lo > hi gives hi, as in ATen.
LogicalResult clamp(Importer &im, std::optional<unsigned> loArg, std::optional<unsigned> hiArg,
                    std::optional<double> loDefault = std::nullopt,
                    std::optional<double> hiDefault = std::nullopt) {
  Type element = im.out().element;
  auto value = im.operandAs(0, element);
  if (failed(value))
    return failure();
  Value result = *value;
  auto bound = [&](std::optional<unsigned> i, std::optional<double> fallback)
      -> FailureOr<std::optional<Value>> {
    if (!i)
      return std::optional<Value>();
    if (im.isNull(im.arg(*i))) {
      if (!fallback)
        return std::optional<Value>();
      return std::optional<Value>(im.splat({}, element, *fallback));
    }
    auto v = im.operandAs(*i, element);
    if (failed(v))
      return failure();
    return std::optional<Value>(*v);
  };
  auto lo = bound(loArg, loDefault), hi = bound(hiArg, hiDefault);
  if (failed(lo) || failed(hi))
    return failure();
  // Each step has the broadcast shape of its own operands (a tensor bound
  // may broadcast x), not necessarily the node's.
  auto step = [&](auto op, Value bound) -> Value {
    auto shape = graph::broadcastShapes(cast<RankedTensorType>(result.getType()).getShape(),
                                        cast<RankedTensorType>(bound.getType()).getShape());
    // (A symbolic step keeps the shape of its tensor operand.)
    RankedTensorType type =
        failed(shape) || ArrayRef<int64_t>(*shape) == ArrayRef<int64_t>(im.out().shape)
            ? im.outType().clone(element)
        : !graph::isSymbolic(result.getType())
            ? RankedTensorType::get(*shape, element)
            : cast<RankedTensorType>(result.getType());
    return decltype(op)::create(im.builder(), im.loc(), type, result, bound);
  };
  if (*lo)
    result = step(graph::MaximumOp(), **lo);
  if (*hi)
    result = step(graph::MinimumOp(), **hi);
  return im.define(result);
}

LogicalResult gelu(Importer &im) {
  auto input = im.operandAs(0, im.out().element);
  if (failed(input))
    return failure();
  std::string approximate = "none";
  if (const json::Value *v = im.arg(1, "approximate"))
    if (auto s = v->getAsString())
      approximate = s->str();
  std::optional<graph::GeluApproximation> how = graph::symbolizeGeluApproximation(approximate);
  if (!how)
    return im.fail("approximate must be 'none' or 'tanh'");
  return im.define(
      graph::GeluOp::create(im.builder(), im.loc(), im.outType(), *input, *how)->getResults());
}

LogicalResult convert(Importer &im) {
  auto input = im.tensor(0);
  if (failed(input))
    return failure();
  Value v = *input;
  // A dtype-preserving _to_copy / clone must still produce a fresh tensor.
  if (cast<RankedTensorType>(v.getType()).getElementType() == im.out().element)
    return im.define(graph::CloneOp::create(im.builder(), im.loc(), im.outType(), v)->getResults());
  return im.define(graph::ConvertOp::create(im.builder(), im.loc(), im.outType(), v)->getResults());
}

LogicalResult where(Importer &im) {
  auto condition = im.operandAs(0, im.builder().getI1Type());
  auto onTrue = im.operandAs(1, im.out().element);
  auto onFalse = im.operandAs(2, im.out().element);
  if (failed(condition) || failed(onTrue) || failed(onFalse))
    return failure();
  return im.define(graph::WhereOp::create(im.builder(), im.loc(), im.outType(),
                                          *condition, *onTrue, *onFalse)
                       ->getResults());
}

LogicalResult matmul(Importer &im) {
  auto lhs = im.tensor(0), rhs = im.tensor(1);
  if (failed(lhs) || failed(rhs))
    return failure();
  return im.define(graph::MatmulOp::create(im.builder(), im.loc(), im.outType(),
                                           im.convert(*lhs, im.out().element),
                                           im.convert(*rhs, im.out().element))
                       ->getResults());
}

/// addmm(bias, a, b, beta, alpha) = beta * bias + alpha * (a @ b): the matmul
/// with a pointwise epilogue that fusion keeps in the matmul's kernel.
LogicalResult addmm(Importer &im) {
  Type element = im.out().element;
  auto bias = im.tensor(0), lhs = im.tensor(1), rhs = im.tensor(2);
  if (failed(bias) || failed(lhs) || failed(rhs))
    return failure();
  OpBuilder &b = im.builder();
  RankedTensorType type = im.outType();
  Value product = graph::MatmulOp::create(b, im.loc(), type, im.convert(*lhs, element),
                                          im.convert(*rhs, element));
  Value addend = im.convert(*bias, element);
  for (auto [index, name, operand] :
       {std::tuple<unsigned, StringRef, Value *>{3, "beta", &addend},
        std::tuple<unsigned, StringRef, Value *>{4, "alpha", &product}}) {
    const json::Value *v = im.arg(index, name);
    if (im.isNull(v))
      continue;
    auto scale = im.number(v, name);
    if (failed(scale))
      return failure();
    if (*scale != 1.0)
      *operand = graph::MulOp::create(b, im.loc(), operand->getType(), *operand,
                                      im.splat({}, element, *scale));
  }
  return im.define(graph::AddOp::create(b, im.loc(), type, product, addend)->getResults());
}

template <typename Op>
LogicalResult reduce(Importer &im, bool allDims) {
  auto input = im.tensor(0);
  if (failed(input))
    return failure();
  SmallVector<int64_t> dims;
  if (!allDims && !im.isNull(im.arg(1, "dim"))) {
    auto list = im.intList(im.arg(1, "dim"), "dim");
    if (failed(list))
      return failure();
    dims = *list;
  }
  bool keepdim = !allDims && im.flag(2, "keepdim", false);
  // any/all reduce bools; of uint8 they return uint8 (0 or 1), as in ATen.
  constexpr bool isLogical = std::is_same_v<Op, graph::AnyOp> || std::is_same_v<Op, graph::AllOp>;
  Type element = isLogical ? im.builder().getI1Type() : im.out().element;
  Value v = im.convert(*input, element);
  if constexpr (std::is_same_v<Op, graph::AmaxOp> || std::is_same_v<Op, graph::AminOp>) {
    auto type = cast<RankedTensorType>(v.getType());
    for (int64_t d : graph::reducedDims(v, dims))
      if (d >= 0 && d < type.getRank() && type.getDimSize(d) == 0)
        return im.fail("cannot reduce over an empty dim (ATen raises)");
  }
  Value result = Op::create(im.builder(), im.loc(), im.outType().clone(element), v,
                            im.builder().getDenseI64ArrayAttr(dims), keepdim);
  return im.define(im.convert(result, im.out().element));
}

/// argmax / argmin (dim None: over the flattened input) and, `withValues`,
/// max.dim / min.dim (the values, then the indices).
template <typename ArgOp, typename ValueOp>
LogicalResult argReduce(Importer &im, bool withValues) {
  auto input = im.tensor(0);
  if (failed(input))
    return failure();
  auto type = cast<RankedTensorType>(input->getType());
  int64_t rank = type.getRank();
  bool keepdim = im.flag(2, "keepdim", false);
  Value v = *input;
  int64_t dim = 0;
  if (im.isNull(im.arg(1, "dim"))) {
    if (rank > 1)
      v = graph::ReshapeOp::create(
          im.builder(), im.loc(),
          RankedTensorType::get({type.getNumElements()}, type.getElementType()), v);
  } else {
    auto d = im.dim(1, "dim", rank);
    if (failed(d))
      return failure();
    dim = rank == 0 ? 0 : *d;
  }
  auto reducedType = cast<RankedTensorType>(v.getType());
  if (reducedType.getRank() > 0 && reducedType.getDimSize(dim) == 0)
    return im.fail("cannot reduce over an empty dim (ATen raises)");
  RankedTensorType indexType = im.outType(withValues ? 1 : 0);
  bool flat = v != *input;
  Value index = ArgOp::create(im.builder(), im.loc(),
                              flat ? RankedTensorType::get({}, indexType.getElementType()) : indexType,
                              v, dim, flat ? false : keepdim);
  if (flat)
    index = graph::ReshapeOp::create(im.builder(), im.loc(), indexType, index);
  if (!withValues)
    return im.define(index);
  SmallVector<int64_t> dims{dim};
  Value values = ValueOp::create(im.builder(), im.loc(), im.outType(0), v,
                                 im.builder().getDenseI64ArrayAttr(dims), keepdim);
  return im.define(ValueRange{values, index});
}

template <typename Op>
LogicalResult softmax(Importer &im) {
  // The dim stays as written (ops normalize it: getNormalizedDim).
  auto input = im.tensor(0);
  auto dim = im.integer(im.arg(1, "dim"), "dim");
  if (failed(input) || failed(dim))
    return failure();
  return im.define(Op::create(im.builder(), im.loc(), im.outType(),
                              im.convert(*input, im.out().element), *dim)
                       ->getResults());
}

LogicalResult layerNorm(Importer &im) {
  auto input = im.tensor(0);
  // normalized_shape: its length is what counts (the dims are the input's
  // last ones, and may be symbolic sizes).
  const json::Array *normalized = im.arg(1, "normalized_shape")
                                      ? im.arg(1, "normalized_shape")->getAsArray()
                                      : nullptr;
  auto eps = im.number(im.arg(4, "eps"), "eps");
  if (failed(input) || failed(eps))
    return failure();
  auto inputType = cast<RankedTensorType>(input->getType());
  if (!normalized || normalized->empty() || normalized->size() > (size_t)inputType.getRank())
    return im.fail("normalized_shape must list the input's last dims");
  Type element = im.out().element;
  auto affineType = graph::symbolicTensorType(
      ArrayRef<AffineExpr>(graph::dimExprs(inputType)).take_back(normalized->size()), element);
  Value affine[2];
  for (unsigned i : {0u, 1u}) {
    const json::Value *v = im.arg(2 + i, i ? "bias" : "weight");
    if (im.isTensor(v)) {
      auto t = im.tensor(2 + i, i ? "bias" : "weight");
      if (failed(t))
        return failure();
      affine[i] = *t;
    } else { // no weight (bias): ones (zeros) of the normalized dims
      affine[i] = im.splat(affineType, i ? 0.0 : 1.0);
    }
  }
  auto op = graph::LayerNormOp::create(
      im.builder(), im.loc(), TypeRange{im.outType(0), im.outType(1), im.outType(2)},
      *input, affine[0], affine[1], im.builder().getI64IntegerAttr(normalized->size()),
      im.builder().getF64FloatAttr(*eps));
  return im.define(op->getResults());
}

/// aten._scaled_dot_product_flash_attention_for_cpu(q, k, v, dropout_p,
/// is_causal, *, attn_mask, scale) -> (output, logsumexp): what Dynamo and
/// aot_autograd make of F.scaled_dot_product_attention on CPU.
LogicalResult attention(Importer &im) {
  auto q = im.tensor(0), k = im.tensor(1), v = im.tensor(2);
  if (failed(q) || failed(k) || failed(v))
    return failure();
  const json::Value *dropout = im.arg(3, "dropout_p");
  if (!im.isNull(dropout)) {
    auto p = im.number(dropout, "dropout_p");
    if (failed(p))
      return failure();
    if (*p != 0.0)
      return im.fail("dropout_p must be 0: the fused attention kernel has no dropout "
                     "(F.scaled_dot_product_attention with dropout runs as math attention "
                     "and Kiln's dropout)");
  }
  bool causal = im.flag(4, "is_causal", false);
  auto qType = cast<RankedTensorType>(q->getType());
  auto kType = cast<RankedTensorType>(k->getType());
  auto vType = cast<RankedTensorType>(v->getType());
  if (qType.getRank() != 4 || kType.getRank() != 4 || vType.getRank() != 4)
    return im.fail("query, key and value must be 4-D ([batch, heads, length, head size])");
  for (RankedTensorType t : {qType, kType, vType}) {
    // Heads and head sizes shape the kernel; batch and lengths may be symbolic.
    if (t.isDynamicDim(1) || t.isDynamicDim(3))
      return im.fail("symbolic head counts or head sizes are not supported (only the batch "
                     "and the sequence lengths may be symbolic)");
    if (t.hasStaticShape() && t.getNumElements() == 0)
      return im.fail("empty query, key or value");
  }
  Type element = qType.getElementType();
  double scale = 1.0 / std::sqrt((double)qType.getDimSize(3));
  const json::Value *scaleArg = im.arg(6, "scale");
  if (!im.isNull(scaleArg)) {
    auto given = im.number(scaleArg, "scale");
    if (failed(given))
      return failure();
    scale = *given;
  }
  Value mask;
  const json::Value *maskArg = im.arg(5, "attn_mask");
  if (im.isTensor(maskArg)) {
    auto t = im.tensorOf(*maskArg);
    if (failed(t))
      return failure();
    auto type = cast<RankedTensorType>(t->getType());
    if (type.getRank() > 4)
      return im.fail("attn_mask has more than 4 dims");
    // A boolean mask keeps the keys where it is true: 0 there, -inf elsewhere.
    if (type.getElementType().isInteger(1)) {
      OpBuilder &b = im.builder();
      *t = graph::WhereOp::create(b, im.loc(), graph::withElementType(type, element), *t,
                                  im.splat({}, element, 0.0),
                                  im.splat({}, element, -INFINITY));
    }
    MLIRContext *context = im.builder().getContext();
    SmallVector<AffineExpr> shape(4 - type.getRank(), getAffineConstantExpr(1, context));
    llvm::append_range(shape, graph::dimExprs(type));
    AffineExpr full[] = {graph::dimExpr(qType, 0), graph::dimExpr(qType, 1),
                         graph::dimExpr(qType, 2), graph::dimExpr(kType, 2)};
    for (int64_t d = 0; d < 4; ++d)
      if (shape[d] != getAffineConstantExpr(1, context) && !graph::sameSize(shape[d], full[d]))
        return im.fail("attn_mask dim " + std::to_string(d) + " has size " + graph::describeSize(shape[d]) +
                       ", which does not broadcast to " + graph::describeSize(full[d]));
    mask = im.reshape(im.convert(*t, element), graph::symbolicTensorType(shape, element));
  }
  OpBuilder &b = im.builder();
  auto op = graph::AttentionOp::create(b, im.loc(), TypeRange{im.outType(0), im.outType(1)},
                                       *q, *k, *v, mask, b.getF64FloatAttr(scale),
                                       b.getBoolAttr(causal));
  return im.define(op->getResults());
}

/// aten.convolution, for what kiln_graph.conv2d computes: 1-D (as 2-D with
/// height 1) and 2-D, grouped or not, not transposed. Kiln's decomposition of
/// aten.convolution leaves exactly these in the graph (the others become
/// gathers and matmuls). Padding becomes a kiln_graph.pad.
LogicalResult convolution(Importer &im) {
  auto input = im.tensor(0), weight = im.tensor(1);
  auto stride = im.intList(im.arg(3, "stride"), "stride");
  auto padding = im.intList(im.arg(4, "padding"), "padding");
  auto dilation = im.intList(im.arg(5, "dilation"), "dilation");
  auto groups = im.integer(im.arg(8, "groups"), "groups");
  if (failed(input) || failed(weight) || failed(stride) || failed(padding) ||
      failed(dilation) || failed(groups))
    return failure();
  if (im.flag(6, "transposed", false))
    return im.fail("only 1-D and 2-D convolutions that are not transposed are imported (Kiln "
                   "decomposes the others)");
  auto inputType = cast<RankedTensorType>(input->getType());
  auto weightType = cast<RankedTensorType>(weight->getType());
  int64_t spatial = inputType.getRank() - 2;
  if ((spatial != 1 && spatial != 2) || weightType.getRank() != inputType.getRank())
    return im.fail("only 1-D and 2-D convolutions are imported");
  // The batch may be symbolic; channels, image sizes and the kernel shape the
  // loop nest and must be static.
  for (int64_t d = 1; d < inputType.getRank(); ++d)
    if (inputType.isDynamicDim(d))
      return im.fail("symbolic channels or image sizes (only the batch of a convolution may "
                     "be symbolic)");
  if (!weightType.hasStaticShape())
    return im.fail("a symbolic weight shape");
  if (*groups < 1 || weightType.getDimSize(0) % *groups != 0 ||
      weightType.getDimSize(1) * *groups != inputType.getDimSize(1))
    return im.fail("groups must divide the output channels, and the input's channels must be "
                   "the weight's times groups");
  if ((inputType.hasStaticShape() && inputType.getNumElements() == 0) ||
      weightType.getNumElements() == 0)
    return im.fail("empty input or weight");
  AffineExpr batch = graph::dimExpr(inputType, 0);
  // A type of the input's element with the input's batch and static `shape[1:]`.
  auto batched = [&](ArrayRef<int64_t> shape) {
    SmallVector<AffineExpr> dims{batch};
    for (int64_t size : shape.drop_front())
      dims.push_back(getAffineConstantExpr(size, im.builder().getContext()));
    return graph::symbolicTensorType(dims, inputType.getElementType());
  };
  // Per spatial dim, as lists of 2 (a 1-D convolution gets height 1).
  auto perDim = [&](SmallVector<int64_t> values, int64_t unit) {
    if (values.size() == 1)
      values.assign(spatial, values[0]);
    if (spatial == 1 && values.size() == 1)
      values.insert(values.begin(), unit);
    return values;
  };
  SmallVector<int64_t> strides = perDim(*stride, 1), pads = perDim(*padding, 0),
                       dilations = perDim(*dilation, 1);
  if (strides.size() != 2 || pads.size() != 2 || dilations.size() != 2)
    return im.fail("stride, padding and dilation need one value per spatial dim");
  OpBuilder &b = im.builder();
  Value x = *input, w = *weight;
  if (spatial == 1) {
    x = im.reshape(x, batched({0, inputType.getDimSize(1), 1, inputType.getDimSize(2)}));
    w = im.reshape(w, RankedTensorType::get({weightType.getDimSize(0), weightType.getDimSize(1),
                                             1, weightType.getDimSize(2)},
                                            weightType.getElementType()));
  }
  auto xType = cast<RankedTensorType>(x.getType());
  auto wType = cast<RankedTensorType>(w.getType());
  if (pads[0] || pads[1]) {
    SmallVector<int64_t> shape(xType.getShape()), low{0, 0, pads[0], pads[1]};
    shape[2] += 2 * pads[0];
    shape[3] += 2 * pads[1];
    x = graph::PadOp::create(b, im.loc(), batched(shape), x,
                             b.getDenseI64ArrayAttr(low), b.getDenseI64ArrayAttr(low),
                             b.getF64FloatAttr(0.0));
    xType = cast<RankedTensorType>(x.getType());
  }
  SmallVector<int64_t> outShape{xType.getDimSize(0), wType.getDimSize(0)};
  for (int64_t d = 0; d < 2; ++d) {
    int64_t span = dilations[d] * (wType.getDimSize(2 + d) - 1) + 1;
    if (xType.getDimSize(2 + d) < span)
      return im.fail("the kernel is larger than the padded input");
    outShape.push_back((xType.getDimSize(2 + d) - span) / strides[d] + 1);
  }
  Value bias;
  if (im.isTensor(im.arg(2, "bias"))) {
    auto t = im.tensor(2, "bias");
    if (failed(t))
      return failure();
    bias = *t;
  }
  Value result = graph::Conv2dOp::create(b, im.loc(), batched(outShape),
                                         x, w, bias, b.getDenseI64ArrayAttr(strides),
                                         b.getDenseI64ArrayAttr(dilations), *groups);
  return im.define(im.reshape(result, im.outType()));
}

/// view, reshape, squeeze, unsqueeze, flatten: the result shape is the node's.
LogicalResult reshape(Importer &im) {
  auto input = im.tensor(0);
  if (failed(input))
    return failure();
  return im.define(graph::ReshapeOp::create(im.builder(), im.loc(), im.outType(), *input)
                       ->getResults());
}

LogicalResult permute(Importer &im, std::function<FailureOr<SmallVector<int64_t>>(int64_t)> dimsOf) {
  auto input = im.tensor(0);
  if (failed(input))
    return failure();
  int64_t rank = cast<RankedTensorType>(input->getType()).getRank();
  auto dims = dimsOf(rank);
  if (failed(dims))
    return failure();
  for (int64_t &d : *dims)
    if (d < 0)
      d += rank;
  return im.define(graph::PermuteOp::create(im.builder(), im.loc(), im.outType(), *input,
                                            im.builder().getDenseI64ArrayAttr(*dims))
                       ->getResults());
}

LogicalResult expand(Importer &im) {
  auto input = im.tensor(0);
  if (failed(input))
    return failure();
  return im.define(graph::ExpandOp::create(im.builder(), im.loc(), im.outType(), *input)
                       ->getResults());
}

/// Normalizes a Python slice bound like ATen does.
int64_t sliceBound(std::optional<int64_t> bound, int64_t size, int64_t missing) {
  if (!bound)
    return missing;
  int64_t b = *bound < 0 ? *bound + size : *bound;
  return std::clamp<int64_t>(b, 0, size);
}

LogicalResult slice(Importer &im) {
  auto input = im.tensor(0);
  if (failed(input))
    return failure();
  auto type = cast<RankedTensorType>(input->getType());
  auto dimArg = im.dim(1, "dim", type.getRank(), 0);
  if (failed(dimArg))
    return failure();
  int64_t dim = *dimArg, step = 1;
  if (!im.isNull(im.arg(4, "step"))) {
    auto s = im.integer(im.arg(4, "step"), "step");
    if (failed(s) || *s < 1)
      return im.fail("step must be a positive integer");
    step = *s;
  }
  std::optional<int64_t> start;
  if (!im.isNull(im.arg(2, "start")))
    if (auto s = im.arg(2, "start")->getAsInteger())
      start = *s;
  if (type.isDynamicDim(dim)) {
    // A symbolic dim: the start must be known and count from the front (the
    // length is the node's).
    if (!im.isNull(im.arg(2, "start")) && (!start || *start < 0))
      return im.fail("slicing a symbolic dim needs a non-negative constant start");
    return im.define(graph::SliceOp::create(im.builder(), im.loc(), im.outType(), *input, dim,
                                            start.value_or(0), step)
                         ->getResults());
  }
  int64_t begin = sliceBound(start, type.getDimSize(dim), 0);
  if (begin >= type.getDimSize(dim))
    begin = 0; // the result is empty; any in-range start will do
  return im.define(graph::SliceOp::create(im.builder(), im.loc(), im.outType(), *input,
                                          dim, begin, step)
                       ->getResults());
}

LogicalResult select(Importer &im) {
  auto input = im.tensor(0);
  if (failed(input))
    return failure();
  auto type = cast<RankedTensorType>(input->getType());
  auto dimArg = im.dim(1, "dim", type.getRank());
  auto indexArg = im.integer(im.arg(2, "index"), "index");
  if (type.getRank() == 0)
    return im.fail("cannot select from a 0-d tensor");
  if (failed(dimArg) || failed(indexArg))
    return failure();
  int64_t dim = *dimArg;
  int64_t index = *indexArg;
  if (type.isDynamicDim(dim)) {
    // Dynamo guarded the index against the symbolic size when it traced.
    if (index < 0)
      return im.fail("a negative index into a symbolic dim is not supported");
  } else {
    index = index < 0 ? index + type.getDimSize(dim) : index;
    if (index < 0 || index >= type.getDimSize(dim))
      return im.fail("index out of range");
  }
  SmallVector<AffineExpr> shape = graph::dimExprs(type);
  shape[dim] = getAffineConstantExpr(1, im.builder().getContext());
  Value slice = graph::SliceOp::create(im.builder(), im.loc(),
                                       graph::symbolicTensorType(shape, type.getElementType()),
                                       *input, dim, index, 1);
  return im.define(im.reshape(slice, im.outType()));
}

LogicalResult concat(Importer &im) {
  const json::Value *list = im.arg(0, "tensors");
  const json::Array *array = list ? list->getAsArray() : nullptr;
  if (!array || array->empty())
    return im.fail("expects a non-empty list of tensors");
  RankedTensorType type = im.outType();
  auto dimArg = im.dim(1, "dim", type.getRank(), 0);
  if (failed(dimArg))
    return failure();
  int64_t dim = *dimArg;
  SmallVector<Value> inputs;
  for (const json::Value &entry : *array) {
    auto input = im.tensorOf(entry);
    if (failed(input))
      return failure();
    auto inputType = cast<RankedTensorType>(input->getType());
    // ATen skips 1-D empty tensors in cat (legacy behaviour); so do we.
    if (inputType.getRank() == 1 && inputType.getDimSize(0) == 0 && type.getRank() != 1)
      continue;
    inputs.push_back(im.convert(*input, type.getElementType()));
  }
  return im.define(graph::ConcatOp::create(im.builder(), im.loc(), type, inputs, dim)
                       ->getResults());
}

LogicalResult embedding(Importer &im) {
  auto weight = im.tensor(0), indices = im.tensor(1);
  if (failed(weight) || failed(indices))
    return failure();
  if (cast<RankedTensorType>(weight->getType()).isDynamicDim(0))
    return im.fail("the table's rows are a symbolic size (indices are checked against "
                   "static ones)");
  Value rows = im.convert(*indices, im.builder().getI64Type());
  im.assertInRange(rows, cast<RankedTensorType>(weight->getType()).getDimSize(0),
                   /*negativeAllowed=*/false);
  return im.define(graph::EmbeddingOp::create(im.builder(), im.loc(), im.outType(), *weight,
                                              rows)
                       ->getResults());
}

LogicalResult full(Importer &im, unsigned valueIndex, StringRef name) {
  auto value = im.number(im.arg(valueIndex, name), name);
  if (failed(value))
    return failure();
  return im.define(im.splatOut(*value));
}

/// aten.arange (.default: end; .start: start, end; .start_step: start, end,
/// step). The length comes from the node's metadata.
LogicalResult arange(Importer &im, bool hasStart, bool hasStep) {
  OpBuilder &b = im.builder();
  Type element = im.out().element;
  unsigned stepIndex = 2;
  const json::Value *start = hasStart ? im.arg(0, "start") : nullptr;
  const json::Value *step = hasStep ? im.arg(stepIndex, "step") : nullptr;
  TypedAttr startAttr, stepAttr;
  if (isa<FloatType>(element)) {
    auto first = start ? im.number(start, "start") : FailureOr<Scalar>(Scalar(0.0));
    auto delta = step ? im.number(step, "step") : FailureOr<Scalar>(Scalar(1.0));
    if (failed(first) || failed(delta))
      return failure();
    startAttr = b.getF64FloatAttr(first->value);
    stepAttr = b.getF64FloatAttr(delta->value);
  } else {
    // ATen computes integer aranges in int64 from start and step truncated
    // toward zero (bools and floats too); the length is the metadata's.
    auto first = start ? im.number(start, "start") : FailureOr<Scalar>(Scalar(0));
    auto delta = step ? im.number(step, "step") : FailureOr<Scalar>(Scalar(1));
    if (failed(first) || failed(delta))
      return failure();
    for (const Scalar &bound : {*first, *delta})
      if (!bound.integer && std::abs(bound.value) >= 0x1p63)
        return im.fail("integer arange needs start and step within int64");
    startAttr = b.getI64IntegerAttr(first->asInteger());
    stepAttr = b.getI64IntegerAttr(delta->asInteger());
  }
  return im.define(graph::IotaOp::create(b, im.loc(), im.outType(), startAttr, stepAttr)
                       ->getResults());
}

/// aten.constant_pad_nd: `pad` lists (before, after) pairs from the last dim
/// backwards.
LogicalResult constantPad(Importer &im) {
  auto input = im.tensor(0);
  auto pad = im.intList(im.arg(1, "pad"), "pad");
  if (failed(input) || failed(pad))
    return failure();
  double value = 0;
  if (!im.isNull(im.arg(2, "value"))) {
    auto v = im.number(im.arg(2, "value"), "value");
    if (failed(v))
      return failure();
    value = *v;
  }
  int64_t rank = cast<RankedTensorType>(input->getType()).getRank();
  if (pad->size() % 2 != 0 || (int64_t)pad->size() / 2 > rank)
    return im.fail("pad must hold an even number of entries, two per dim at most");
  SmallVector<int64_t> low(rank, 0), high(rank, 0);
  for (size_t k = 0; k < pad->size() / 2; ++k) {
    low[rank - 1 - k] = (*pad)[2 * k];
    high[rank - 1 - k] = (*pad)[2 * k + 1];
  }
  OpBuilder &b = im.builder();
  return im.define(graph::PadOp::create(b, im.loc(), im.outType(), *input,
                                        b.getDenseI64ArrayAttr(low), b.getDenseI64ArrayAttr(high),
                                        b.getF64FloatAttr(value))
                       ->getResults());
}

/// aten.index.Tensor: the index tensors (None entries keep a dim whole) are
/// converted to i64, broadcast to one shape and range-checked.
/// The integer index tensors of an advanced index (aten.index, index_put):
/// the dims they index (null entries are full slices), their broadcast
/// shape, and each as i64 guarded by an assert (negative indices count from
/// the back).
struct AdvancedIndices {
  SmallVector<int64_t> dims;
  SmallVector<AffineExpr> broadcastShape; // symbolic dims as expressions
  SmallVector<Value> indices;
  /// The broadcast shape when it is static, else failure.
  FailureOr<SmallVector<int64_t>> staticBroadcastShape() const {
    SmallVector<int64_t> shape;
    for (AffineExpr d : broadcastShape) {
      auto constant = dyn_cast<AffineConstantExpr>(d);
      if (!constant)
        return failure();
      shape.push_back(constant.getValue());
    }
    return shape;
  }
};

FailureOr<AdvancedIndices> advancedIndices(Importer &im, unsigned arg, RankedTensorType inputType) {
  const json::Array *list = im.arg(arg, "indices") ? im.arg(arg, "indices")->getAsArray() : nullptr;
  if (!list)
    return im.fail("indices must be a list");
  AdvancedIndices result;
  for (auto [d, entry] : llvm::enumerate(*list)) {
    if (entry.kind() == json::Value::Null)
      continue;
    auto index = im.tensorOf(entry);
    if (failed(index))
      return failure();
    auto type = cast<RankedTensorType>(index->getType());
    if (!isa<IntegerType>(type.getElementType()) || type.getElementType().isInteger(1) ||
        type.getElementType().isUnsignedInteger())
      return im.fail("only integer index tensors are supported (a bool or uint8 mask has a "
                     "data-dependent shape)");
    if ((int64_t)d >= inputType.getRank())
      return im.fail("too many indices for a tensor of rank " +
                     std::to_string(inputType.getRank()));
    auto next = graph::broadcastDims(result.broadcastShape, graph::dimExprs(type));
    if (failed(next))
      return im.fail("index shapes are not broadcast-compatible");
    result.broadcastShape = *next;
    result.dims.push_back(d);
    result.indices.push_back(im.convert(*index, im.builder().getI64Type()));
  }
  if (result.indices.empty())
    return im.fail("needs at least one index tensor");
  for (size_t k = 0; k < result.indices.size(); ++k)
    im.assertInRange(result.indices[k], graph::dimExpr(inputType, result.dims[k]),
                     /*negativeAllowed=*/true);
  return result;
}

LogicalResult indexTensor(Importer &im) {
  auto input = im.tensor(0);
  if (failed(input))
    return failure();
  auto index = advancedIndices(im, 1, cast<RankedTensorType>(input->getType()));
  if (failed(index))
    return failure();
  // The index op broadcasts its indices itself (materializing them could
  // take far more memory than the input: im2col's are [N, out..., C, k...]).
  OpBuilder &b = im.builder();
  return im.define(graph::IndexOp::create(b, im.loc(), im.outType(), *input, index->indices,
                                          b.getDenseI64ArrayAttr(index->dims))
                       ->getResults());
}

/// `v` (rank <= `shape`'s) broadcast to `shape`, NumPy style.
Value broadcastTo(Importer &im, Value v, ArrayRef<int64_t> shape) {
  auto type = cast<RankedTensorType>(v.getType());
  SmallVector<int64_t> padded(shape.size() - type.getRank(), 1);
  llvm::append_range(padded, type.getShape());
  v = im.reshape(v, RankedTensorType::get(padded, type.getElementType()));
  auto target = RankedTensorType::get(shape, type.getElementType());
  if (v.getType() == target)
    return v;
  return graph::ExpandOp::create(im.builder(), im.loc(), target, v);
}

/// A scatter along `dim` of `src` (the index's shape) into `input` at `index`
/// (i64, the input's rank, already guarded). mean is a sum over a count of
/// the values written (plus one for the input's own, `includeSelf`), floor
/// divided for integers, as in ATen.
Value buildScatter(Importer &im, Value input, Value index, Value src, int64_t dim,
                   StringRef reduce, bool includeSelf) {
  OpBuilder &b = im.builder();
  auto type = cast<RankedTensorType>(input.getType());
  auto create = [&](Value into, Value values, StringRef how, bool self) -> Value {
    return graph::ScatterOp::create(b, im.loc(), type, into, index, values, dim,
                                    *graph::symbolizeScatterReduction(how), self,
                                    im.deterministic());
  };
  if (reduce != "mean")
    return create(input, src, reduce, includeSelf);
  Type element = type.getElementType();
  auto indexShape = cast<RankedTensorType>(index.getType()).getShape();
  Value sum = create(input, src, "sum", includeSelf);
  Value count = create(im.splat(type.getShape(), element, includeSelf ? 1.0 : 0.0),
                       im.splat(indexShape, element, 1.0), "sum", true);
  Value none = graph::EqOp::create(b, im.loc(), type.clone(b.getI1Type()), count,
                                   im.splat({}, element, 0.0));
  count = graph::WhereOp::create(b, im.loc(), type, none, im.splat({}, element, 1.0), count);
  if (isa<FloatType>(element))
    return graph::DivOp::create(b, im.loc(), type, sum, count);
  return graph::DivRoundOp::create(b, im.loc(), type, sum, count, graph::RoundingMode::Floor);
}

/// aten.scatter / scatter_add / scatter_reduce: operand 3 is src (a tensor,
/// of which ATen reads the index's shape) or a scalar value.
LogicalResult scatter(Importer &im, StringRef reduce, bool includeSelf = true) {
  OpBuilder &b = im.builder();
  auto input = im.tensor(0), index = im.tensor(2, "index");
  if (failed(input) || failed(index))
    return failure();
  Type element = im.out().element;
  Value self = im.convert(*input, element);
  auto selfType = cast<RankedTensorType>(self.getType());
  auto dim = im.dim(1, "dim", selfType.getRank());
  if (failed(dim))
    return failure();
  Value rows = im.convert(*index, b.getI64Type());
  auto rowsType = cast<RankedTensorType>(rows.getType());
  if (rowsType.getNumElements() == 0) // nothing written
    return im.define(graph::CloneOp::create(b, im.loc(), im.outType(), self)->getResults());
  if (selfType.getRank() == 0) { // ATen treats the scalar as a 1-element vector
    selfType = RankedTensorType::get({1}, element);
    self = im.reshape(self, selfType);
    rows = im.reshape(rows, RankedTensorType::get({1}, b.getI64Type()));
    rowsType = cast<RankedTensorType>(rows.getType());
  }
  if (rowsType.getRank() != selfType.getRank())
    return im.fail("index must have the input's rank");
  Value src;
  if (im.isTensor(im.arg(3))) {
    auto given = im.tensor(3, "src");
    if (failed(given))
      return failure();
    src = im.convert(*given, element);
    if (cast<RankedTensorType>(src.getType()).getRank() == 0)
      src = im.reshape(src, RankedTensorType::get({1}, element));
    for (int64_t d = 0; d < rowsType.getRank(); ++d) {
      auto srcType = cast<RankedTensorType>(src.getType());
      if (srcType.getRank() != rowsType.getRank() || srcType.getDimSize(d) < rowsType.getDimSize(d))
        return im.fail("src must cover the index's shape");
      if (srcType.getDimSize(d) > rowsType.getDimSize(d)) {
        SmallVector<int64_t> shape(srcType.getShape());
        shape[d] = rowsType.getDimSize(d);
        src = graph::SliceOp::create(b, im.loc(), srcType.clone(shape), src, d, 0, 1);
      }
    }
  } else {
    auto value = im.number(im.arg(3), "value");
    if (failed(value))
      return failure();
    src = im.splat(rowsType.getShape(), element, *value);
  }
  im.assertInRange(rows, selfType.getDimSize(*dim), /*negativeAllowed=*/false);
  Value result = buildScatter(im, self, rows, src, *dim, reduce, includeSelf);
  return im.define(im.reshape(result, im.outType()));
}

/// scatter_reduce.two's reduce names and scatter.reduce's older ones.
FailureOr<StringRef> scatterReduction(Importer &im, unsigned i) {
  const json::Value *v = im.arg(i, "reduce");
  std::optional<StringRef> name = v ? v->getAsString() : std::nullopt;
  if (name == "sum" || name == "add")
    return StringRef("sum");
  if (name == "prod" || name == "multiply")
    return StringRef("prod");
  if (name == "mean" || name == "amax" || name == "amin")
    return *name;
  return im.fail("reduce must be sum, prod, mean, amax or amin");
}

/// torch's functional collectives (`_c10d_functional.*`, what DTensor and
/// SimpleFSDP-style code put in a graph): a kiln_graph.collective each.
/// all_reduce names no group size (0: not checked); all_to_all_single takes
/// even splits only (none given, or all equal: one per rank).
LogicalResult collective(Importer &im, graph::CollectiveKind kind) {
  using graph::CollectiveKind;
  FailureOr<Value> input = im.tensor(0, "input");
  if (failed(input))
    return failure();
  graph::ReduceOp reduce = graph::ReduceOp::Sum;
  if (kind == CollectiveKind::AllReduce || kind == CollectiveKind::ReduceScatter) {
    const json::Value *v = im.arg(1, "reduce_op");
    std::optional<StringRef> name = v ? v->getAsString() : std::nullopt;
    std::optional<graph::ReduceOp> parsed =
        name ? graph::symbolizeReduceOp(*name) : std::nullopt;
    if (!parsed)
      return im.fail("reduce_op must be sum, avg, product, min or max" +
                     (name ? ", not '" + name->str() + "'" : std::string()));
    reduce = *parsed;
  }
  int64_t groupSize = 0;
  unsigned groupArg = 2;
  if (kind == CollectiveKind::AllGather || kind == CollectiveKind::ReduceScatter) {
    unsigned at = kind == CollectiveKind::AllGather ? 1 : 2;
    FailureOr<int64_t> size = im.integer(im.arg(at, "group_size"), "group_size");
    if (failed(size))
      return failure();
    groupSize = *size;
    groupArg = at + 1;
  }
  if (kind == CollectiveKind::AllToAll) {
    FailureOr<SmallVector<int64_t>> outputSplits =
        im.intList(im.arg(1, "output_split_sizes"), "output_split_sizes");
    FailureOr<SmallVector<int64_t>> inputSplits =
        im.intList(im.arg(2, "input_split_sizes"), "input_split_sizes");
    if (failed(outputSplits) || failed(inputSplits))
      return failure();
    auto even = [](ArrayRef<int64_t> splits) {
      return llvm::all_of(splits, [&](int64_t n) { return n == splits.front(); });
    };
    if (*outputSplits != *inputSplits || !even(*inputSplits))
      return im.fail("all_to_all_single takes even splits only (the same size for every rank)");
    groupSize = inputSplits->size();
    groupArg = 3;
  }
  const json::Value *group = im.arg(groupArg, "group_name");
  std::optional<StringRef> groupName = group ? group->getAsString() : std::nullopt;
  if (!groupName || groupName->empty())
    return im.fail("group_name must name a process group");
  MLIRContext *ctx = im.builder().getContext();
  Value result = graph::CollectiveOp::create(
      im.builder(), im.loc(), im.outType(), *input, graph::CollectiveKindAttr::get(ctx, kind),
      graph::ReduceOpAttr::get(ctx, reduce), im.builder().getStringAttr(*groupName),
      im.builder().getI64IntegerAttr(groupSize));
  return im.define(result);
}

/// aten.index_put: a scatter into the flattened input at the linear offsets
/// of the positions input[indices] reads (the advanced index's result shape,
/// as kiln_graph.index defines it), of values broadcast to that shape;
/// accumulate sums duplicates. Where the indices pick leading rows and the
/// trailing dims are whole (an embedding's gradient, x[idx] += v), it
/// scatters rows instead: into the input as [rows, R] at [positions, R],
/// out[offset[n, r], r], which keeps each column's updates apart (a GPU
/// spreads the columns over its threads).
LogicalResult indexPut(Importer &im) {
  OpBuilder &b = im.builder();
  auto input = im.tensor(0);
  if (failed(input))
    return failure();
  Type element = im.out().element;
  Value self = im.convert(*input, element);
  auto type = cast<RankedTensorType>(self.getType());
  auto index = advancedIndices(im, 1, type);
  if (failed(index))
    return failure();
  int64_t rank = type.getRank();
  bool adjacent = index->dims.back() - index->dims.front() + 1 == (int64_t)index->dims.size();
  int64_t start = adjacent ? index->dims.front() : 0;
  int64_t broadcastRank = index->broadcastShape.size();
  // The shape of input[indices]: the non-indexed dims in order, with the
  // broadcast block inserted at `start` (before them when not adjacent).
  SmallVector<int64_t> positions;
  SmallVector<int64_t> positionDim(rank); // where each non-indexed dim lands
  for (int64_t d = 0; d < rank; ++d) {
    if (llvm::is_contained(index->dims, d))
      continue;
    int64_t j = positions.size();
    positionDim[d] = j < start ? j : j + broadcastRank;
    positions.push_back(type.getDimSize(d));
  }
  auto broadcastShape = index->staticBroadcastShape();
  if (failed(broadcastShape) || !type.hasStaticShape())
    return im.fail("index_put needs static shapes");
  positions.insert(positions.begin() + start, broadcastShape->begin(), broadcastShape->end());
  auto i64 = b.getI64Type();
  auto positionsType = RankedTensorType::get(positions, i64);
  int64_t count = positionsType.getNumElements();
  if (count == 0 || type.getNumElements() == 0)
    return im.define(graph::CloneOp::create(b, im.loc(), im.outType(), self)->getResults());
  int64_t indexedDims = index->dims.size();
  bool scatterRows = adjacent && start == 0 && indexedDims < rank;
  int64_t rowSize = 1; // R: the elements of a row when scattering rows
  for (int64_t d = scatterRows ? indexedDims : rank; d < rank; ++d)
    rowSize *= type.getDimSize(d);
  // offset = sum over dims of coordinate * row-major stride, at every
  // position (over the indexed dims alone when scattering rows).
  Value offset = im.splat(positions, i64, 0.0);
  int64_t stride = 1;
  for (int64_t d = (scatterRows ? indexedDims : rank) - 1; d >= 0; --d) {
    int64_t size = type.getDimSize(d);
    Value coordinate;
    auto k = llvm::find(index->dims, d) - index->dims.begin();
    if (k < (int64_t)index->dims.size()) {
      Value i = index->indices[k];
      auto iType = cast<RankedTensorType>(i.getType());
      Value negative = graph::LtOp::create(b, im.loc(), iType.clone(b.getI1Type()), i,
                                           im.splat({}, i64, 0.0));
      i = graph::WhereOp::create(b, im.loc(), iType, negative,
                                 graph::AddOp::create(b, im.loc(), iType, i,
                                                      im.splat({}, i64, (double)size)),
                                 i);
      // Index tensors align with the trailing dims of the broadcast block.
      SmallVector<int64_t> shape(start + broadcastRank - iType.getRank(), 1);
      llvm::append_range(shape, iType.getShape());
      shape.resize(positions.size(), 1);
      coordinate = im.reshape(i, RankedTensorType::get(shape, i64));
    } else {
      SmallVector<int64_t> shape(positions.size(), 1);
      shape[positionDim[d]] = size;
      coordinate = im.reshape(graph::IotaOp::create(b, im.loc(), RankedTensorType::get({size}, i64),
                                                    b.getI64IntegerAttr(0), b.getI64IntegerAttr(1)),
                              RankedTensorType::get(shape, i64));
    }
    Value scaled = graph::MulOp::create(b, im.loc(), coordinate.getType(), coordinate,
                                        im.splat({}, i64, (double)stride));
    offset = graph::AddOp::create(b, im.loc(), positionsType, offset, scaled);
    stride *= size;
  }
  auto values = im.tensor(2, "values");
  if (failed(values))
    return failure();
  Value src = broadcastTo(im, im.convert(*values, element), positions);
  auto flat = RankedTensorType::get({type.getNumElements() / rowSize, rowSize}, element);
  SmallVector<int64_t> updates{count / rowSize, rowSize};
  if (!scatterRows) {
    flat = RankedTensorType::get({type.getNumElements()}, element);
    updates = {count};
  }
  Value result = graph::ScatterOp::create(
      b, im.loc(), flat, im.reshape(self, flat),
      im.reshape(offset, RankedTensorType::get(updates, i64)),
      im.reshape(src, RankedTensorType::get(updates, element)), 0,
      im.flag(3, "accumulate", false) ? graph::ScatterReduction::Sum
                                      : graph::ScatterReduction::None,
      true, im.deterministic());
  return im.define(im.reshape(result, im.outType()));
}

/// aten.gather (sparse_grad is irrelevant to the forward value).
LogicalResult gather(Importer &im) {
  OpBuilder &b = im.builder();
  auto input = im.tensor(0), index = im.tensor(2, "index");
  if (failed(input) || failed(index))
    return failure();
  auto inputType = cast<RankedTensorType>(input->getType());
  auto dim = im.dim(1, "dim", inputType.getRank());
  if (failed(dim))
    return failure();
  Value source = *input;
  Value rows = im.convert(*index, b.getI64Type());
  auto rowsType = cast<RankedTensorType>(rows.getType());
  if (inputType.getRank() == 0) { // ATen treats the scalar as a 1-element vector
    if (!rowsType.hasStaticShape())
      return im.fail("gathering from a 0-d tensor needs a static index shape");
    source = im.reshape(source, RankedTensorType::get({1}, inputType.getElementType()));
    rows = im.reshape(rows, RankedTensorType::get({rowsType.getNumElements()}, b.getI64Type()));
  }
  auto sourceType = cast<RankedTensorType>(source.getType());
  rowsType = cast<RankedTensorType>(rows.getType());
  if (rowsType.hasStaticShape() && rowsType.getNumElements() == 0)
    return im.define(im.splatOut(0.0)); // nothing to gather (ATen accepts any rank then)
  if (rowsType.getRank() != sourceType.getRank())
    return im.fail("index must have the input's rank");
  // The other dims are read at the index's position: ATen checks at run time
  // that the index is no larger; symbolic sizes must be the same to be sure.
  for (int64_t d = 0; d < rowsType.getRank(); ++d)
    if (d != *dim && (rowsType.isDynamicDim(d) || sourceType.isDynamicDim(d)) &&
        !graph::sameSize(graph::dimExpr(rowsType, d), graph::dimExpr(sourceType, d)))
      return im.fail("index dim " + std::to_string(d) + " (" +
                     im.describe(graph::dimExpr(rowsType, d)) +
                     ") is not known to fit the input's (" +
                     im.describe(graph::dimExpr(sourceType, d)) + ")");
  im.assertInRange(rows, graph::dimExpr(sourceType, *dim), /*negativeAllowed=*/false);
  Value result = graph::GatherOp::create(
      b, im.loc(), graph::withElementType(rowsType, sourceType.getElementType()), source, rows,
      *dim);
  return im.define(im.reshape(result, im.outType()));
}

/// aten.index_select: an index op on one dim, with ATen's range (no
/// negative indices).
LogicalResult indexSelect(Importer &im) {
  OpBuilder &b = im.builder();
  auto input = im.tensor(0), index = im.tensor(2, "index");
  if (failed(input) || failed(index))
    return failure();
  auto inputType = cast<RankedTensorType>(input->getType());
  auto indexType = cast<RankedTensorType>(index->getType());
  if (indexType.getRank() > 1)
    return im.fail("needs an index of rank <= 1");
  auto dim = im.dim(1, "dim", inputType.getRank());
  if (failed(dim))
    return failure();
  Value source = *input;
  if (inputType.getRank() == 0) // ATen treats the scalar as a 1-element vector
    source = im.reshape(source, RankedTensorType::get({1}, inputType.getElementType()));
  auto sourceType = cast<RankedTensorType>(source.getType());
  Value rows = im.convert(*index, b.getI64Type());
  if (indexType.getRank() == 0)
    rows = im.reshape(rows, RankedTensorType::get({1}, b.getI64Type()));
  im.assertInRange(rows, graph::dimExpr(sourceType, *dim), /*negativeAllowed=*/false);
  SmallVector<AffineExpr> shape = graph::dimExprs(sourceType);
  shape[*dim] = graph::dimExpr(cast<RankedTensorType>(rows.getType()), 0);
  Value result = graph::IndexOp::create(
      b, im.loc(), graph::symbolicTensorType(shape, sourceType.getElementType()), source, rows,
      b.getDenseI64ArrayAttr({*dim}));
  return im.define(im.reshape(result, im.outType()));
}

/// aten.cumsum, in the result's dtype (integers and bool accumulate in int64).
LogicalResult cumsum(Importer &im) {
  auto input = im.tensor(0);
  if (failed(input))
    return failure();
  auto dim = im.dim(1, "dim", cast<RankedTensorType>(input->getType()).getRank());
  if (failed(dim))
    return failure();
  return im.define(graph::CumsumOp::create(im.builder(), im.loc(), im.outType(),
                                           im.convert(*input, im.out().element), *dim)
                       ->getResults());
}

/// The (values, indices) of a stable sort of `input` along `dim`.
std::pair<Value, Value> sortAlong(Importer &im, Value input, int64_t dim, bool descending) {
  auto type = cast<RankedTensorType>(input.getType());
  auto indexType = graph::symbolicTensorType(graph::dimExprs(type), im.builder().getI64Type());
  auto sort = graph::SortOp::create(im.builder(), im.loc(), TypeRange{type, indexType}, input,
                                    dim, descending, /*k=*/nullptr);
  return {sort.getValues(), sort.getIndices()};
}

/// The last dim (0 for a scalar): where sort and topk go by default.
int64_t lastDim(Value v) {
  return std::max<int64_t>(cast<RankedTensorType>(v.getType()).getRank() - 1, 0);
}

/// aten.sort and aten.sort.stable (whose flags are keywords only): Kiln's
/// sort is always stable, one of the orders an unstable sort may give.
LogicalResult sort(Importer &im) {
  auto input = im.tensor(0);
  if (failed(input))
    return failure();
  auto dim = im.dim(1, "dim", cast<RankedTensorType>(input->getType()).getRank(),
                    lastDim(*input));
  if (failed(dim))
    return failure();
  auto [values, indices] = sortAlong(im, *input, *dim, im.flag(2, "descending", false));
  return im.define(ValueRange{values, indices});
}

/// aten.topk: the first k of a sort (a sort with k, which a target may
/// select without sorting the rest), largest first unless `largest` is
/// false; equal values in index order (ATen leaves their order open).
LogicalResult topk(Importer &im) {
  auto input = im.tensor(0);
  if (failed(input))
    return failure();
  auto type = cast<RankedTensorType>(input->getType());
  auto k = im.integer(im.arg(1, "k"), "k");
  auto dim = im.dim(2, "dim", type.getRank(), lastDim(*input));
  if (failed(k) || failed(dim))
    return failure();
  int64_t length = type.getRank() ? type.getDimSize(*dim) : 1;
  if (*k < 0 || (!ShapedType::isDynamic(length) && *k > length))
    return im.fail("k " + std::to_string(*k) + " is out of range for a dim of " +
                   std::to_string(length) + " (ATen raises)");
  bool largest = im.flag(3, "largest", true);
  if (type.getRank() == 0) {
    auto [values, indices] = sortAlong(im, *input, *dim, largest);
    return im.define(ValueRange{values, indices});
  }
  auto sort = graph::SortOp::create(im.builder(), im.loc(), TypeRange{im.outType(0), im.outType(1)},
                                    *input, *dim, largest, im.builder().getI64IntegerAttr(*k));
  return im.define(sort->getResults());
}

/// aten.as_strided, where it only restates a row-major layout: Kiln values
/// are dense and row-major, so an as_strided with the value's own element
/// count, row-major strides (ignoring size-1 dims, whose stride is never
/// used) and no storage offset is a reshape. Decompositions emit these (e.g.
/// adaptive average pooling). Anything else reads memory outside the value,
/// and graph inputs may be views of larger storage: both are refused.
LogicalResult asStrided(Importer &im) {
  auto input = im.tensor(0);
  auto size = im.sizeList(im.arg(1, "size"), "size");
  auto stride = im.sizeList(im.arg(2, "stride"), "stride");
  if (failed(input) || failed(size) || failed(stride))
    return failure();
  if (isa<BlockArgument>(*input))
    return im.fail("as_strided of a graph input (it may view a larger storage)");
  if (!im.isNull(im.arg(3, "storage_offset"))) {
    auto offset = im.integer(im.arg(3, "storage_offset"), "storage_offset");
    if (failed(offset) || *offset != 0)
      return im.fail("only as_strided with storage offset 0 is supported");
  }
  if (size->size() != stride->size())
    return im.fail("size and stride differ in length");
  // Sizes and strides may be symbolic: compared as expressions.
  MLIRContext *context = im.builder().getContext();
  AffineExpr one = getAffineConstantExpr(1, context), expected = one;
  for (int64_t d = (int64_t)size->size() - 1; d >= 0; --d) {
    if ((*size)[d] != one && !graph::sameSize((*stride)[d], expected))
      return im.fail("only row-major as_strided layouts are supported");
    expected = expected * (*size)[d];
  }
  if (!graph::sameSize(expected,
                       graph::numElementsExpr(cast<RankedTensorType>(input->getType()))))
    return im.fail("only as_strided views of every element are supported");
  return im.define(im.reshape(*input, im.outType()));
}

/// The ops whose handlers take a SymInt as a scalar operand (`x * s0`): they
/// read their operands through Importer::operandAs, which makes it a
/// kiln_graph.size. Other handlers read scalars as constants (alpha, beta).
const llvm::StringSet<> &symintScalarTargets() {
  static const llvm::StringSet<> targets = {
      "aten.add.Tensor", "aten.add.Scalar", "aten.sub.Tensor", "aten.sub.Scalar",
      "aten.mul.Tensor", "aten.mul.Scalar", "aten.div.Tensor", "aten.div.Scalar",
      "aten.true_divide.Tensor", "aten.div.Tensor_mode", "aten.div.Scalar_mode",
      "aten.remainder.Tensor", "aten.remainder.Scalar", "aten.fmod.Tensor", "aten.fmod.Scalar",
      "aten.maximum.default", "aten.minimum.default", "aten.eq.Tensor", "aten.eq.Scalar",
      "aten.ne.Tensor", "aten.ne.Scalar", "aten.lt.Tensor", "aten.lt.Scalar", "aten.le.Tensor",
      "aten.le.Scalar", "aten.gt.Tensor", "aten.gt.Scalar", "aten.ge.Tensor", "aten.ge.Scalar",
      "aten.where.self", "aten.clamp.default", "aten.clamp.Tensor", "aten.clamp_min.default",
      "aten.clamp_min.Tensor", "aten.clamp_max.default", "aten.clamp_max.Tensor"};
  return targets;
}

/// The ops whose handlers build from the node's (possibly symbolic) types and
/// whose graph ops lower with symbolic sizes; the others need static shapes.
const llvm::StringSet<> &symbolicTargets() {
  static const llvm::StringSet<> targets = {
      // Elementwise arithmetic, comparisons, selection and casts.
      "aten.add.Tensor", "aten.add.Scalar", "aten.sub.Tensor", "aten.sub.Scalar",
      "aten.mul.Tensor", "aten.mul.Scalar", "aten.div.Tensor", "aten.div.Scalar",
      "aten.true_divide.Tensor", "prims.convert_element_type.default",
      "aten.pow.Tensor_Scalar", "aten.pow.Tensor_Tensor", "aten.maximum.default",
      "aten.minimum.default", "aten.atan2.default", "aten.clamp.default", "aten.clamp.Tensor",
      "aten.clamp_min.default", "aten.clamp_min.Tensor", "aten.clamp_max.default",
      "aten.clamp_max.Tensor", "aten.hardtanh.default", "aten.logical_not.default",
      "aten.logical_and.default", "aten.logical_or.default", "aten.logical_xor.default",
      "aten.eq.Tensor", "aten.eq.Scalar", "aten.ne.Tensor", "aten.ne.Scalar", "aten.lt.Tensor",
      "aten.lt.Scalar", "aten.le.Tensor", "aten.le.Scalar", "aten.gt.Tensor", "aten.gt.Scalar",
      "aten.ge.Tensor", "aten.ge.Scalar", "aten.where.self", "aten.neg.default",
      "aten.reciprocal.default", "aten.relu.default", "aten.tanh.default", "aten.exp.default",
      "aten.log.default", "aten.sqrt.default", "aten.rsqrt.default", "aten.sigmoid.default",
      "aten.abs.default", "aten.sin.default", "aten.cos.default", "aten.tan.default",
      "aten.sign.default", "aten.frac.default", "aten.exp2.default", "aten.expm1.default",
      "aten.log1p.default", "aten.log2.default", "aten.log10.default", "aten.erf.default",
      "aten.atan.default", "aten.sinh.default", "aten.cosh.default", "aten.asin.default",
      "aten.acos.default", "aten.asinh.default", "aten.acosh.default", "aten.atanh.default",
      "aten.isnan.default", "aten.floor.default", "aten.ceil.default", "aten.trunc.default",
      "aten.round.default", "aten.gelu.default", "aten.clone.default", "aten._to_copy.default",
      "aten.lift_fresh_copy.default", "aten.bitwise_not.default",
      // Contractions, reductions and row ops.
      "aten.mm.default", "aten.bmm.default", "aten.addmm.default", "aten.sum.dim_IntList",
      "aten.sum.default", "aten.mean.dim", "aten.mean.default", "aten.amax.default",
      "aten.amin.default", "aten.prod.default", "aten.prod.dim_int", "aten.any.dim",
      "aten.any.dims", "aten.all.dim", "aten.all.dims", "aten._softmax.default",
      "aten._log_softmax.default", "aten.native_layer_norm.default",
      // Views.
      "aten.view.default", "aten._unsafe_view.default", "aten.reshape.default",
      "aten.squeeze.dim", "aten.squeeze.dims", "aten.squeeze.default", "aten.unsqueeze.default",
      "aten.flatten.using_ints", "aten.alias.default", "aten.permute.default", "aten.t.default",
      "aten.as_strided.default",
      "aten.transpose.int", "aten.expand.default", "aten.slice.Tensor", "aten.cat.default",
      "aten.select.int",
      // Bitwise ops, gathers of rows and ranges.
      "aten.bitwise_and.Tensor", "aten.bitwise_and.Scalar", "aten.bitwise_or.Tensor",
      "aten.bitwise_or.Scalar", "aten.bitwise_xor.Tensor", "aten.bitwise_xor.Scalar",
      "aten.embedding.default", "aten.arange.default", "aten.arange.start",
      "aten._scaled_dot_product_flash_attention_for_cpu.default",
      // Gathers and scans: index checks compare with the symbols' values.
      "aten.index.Tensor", "aten.index_select.default", "aten.gather.default",
      "aten.cumsum.default", "aten.constant_pad_nd.default", "aten.sort.default",
      "aten.sort.stable", "aten.topk.default",
      // Direct convolution with a symbolic batch.
      "aten.convolution.default",
      "aten.arange.start_step",
      // Fills (a scalar expanded to the symbolic shape) and integer division
      // (its divisor assert is symbolic too).
      "aten.full.default", "aten.full_like.default", "aten.zeros_like.default",
      "aten.ones_like.default", "aten.empty.memory_format", "aten.empty_like.default",
      "aten.div.Tensor_mode", "aten.div.Scalar_mode", "aten.floor_divide.default",
      "aten.floor_divide.Scalar", "aten.fmod.Tensor", "aten.fmod.Scalar",
      "aten.remainder.Tensor", "aten.remainder.Scalar"};
  return targets;
}

const llvm::StringMap<Handler> &handlers() {
  static const llvm::StringMap<Handler> table = [] {
    llvm::StringMap<Handler> t;
    auto add = [&](std::initializer_list<const char *> names, Handler h) {
      for (const char *name : names)
        t[name] = h;
    };
    using namespace graph;
    add({"aten.add.Tensor", "aten.add.Scalar"}, binaryAlpha<AddOp>);
    add({"aten.sub.Tensor", "aten.sub.Scalar"}, binaryAlpha<SubOp>);
    add({"aten.mul.Tensor", "aten.mul.Scalar"}, binary<MulOp>);
    // true_divide and prims.convert_element_type come from Dynamo's SymFloat
    // arithmetic (a float it made dynamic, as a 0-d float64 input).
    add({"aten.div.Tensor", "aten.div.Scalar", "aten.true_divide.Tensor"}, binary<DivOp>);
    add({"aten.div.Tensor_mode", "aten.div.Scalar_mode"}, [](Importer &im) { return divide(im); });
    add({"aten.floor_divide.default", "aten.floor_divide.Scalar"},
        [](Importer &im) { return divide(im, StringRef("floor")); });
    add({"aten.atan2.default"}, binary<Atan2Op>);
    add({"aten.pow.Tensor_Scalar", "aten.pow.Tensor_Tensor"}, binary<PowOp>);
    add({"aten.maximum.default"}, binary<MaximumOp>);
    add({"aten.fmod.Tensor", "aten.fmod.Scalar"}, remainder<FmodOp>);
    add({"aten.remainder.Tensor", "aten.remainder.Scalar"}, remainder<RemainderOp>);
    add({"aten.bitwise_and.Tensor", "aten.bitwise_and.Scalar"}, binary<BitwiseAndOp>);
    add({"aten.bitwise_or.Tensor", "aten.bitwise_or.Scalar"}, binary<BitwiseOrOp>);
    add({"aten.bitwise_xor.Tensor", "aten.bitwise_xor.Scalar"}, binary<BitwiseXorOp>);
    add({"aten.bitwise_not.default"}, unary<BitwiseNotOp>);
    t["aten.arange.default"] = [](Importer &im) { return arange(im, false, false); };
    t["aten.arange.start"] = [](Importer &im) { return arange(im, true, false); };
    t["aten.arange.start_step"] = [](Importer &im) { return arange(im, true, true); };
    add({"aten.constant_pad_nd.default"}, constantPad);
    add({"aten.index.Tensor"}, indexTensor);
    add({"aten.index_select.default"}, indexSelect);
    add({"aten.gather.default"}, gather);
    add({"aten.scatter.src", "aten.scatter.value"}, [](Importer &im) { return scatter(im, "none"); });
    add({"aten.scatter_add.default"}, [](Importer &im) { return scatter(im, "sum"); });
    add({"aten.scatter.reduce", "aten.scatter.value_reduce"}, [](Importer &im) -> LogicalResult {
      auto reduce = scatterReduction(im, 4);
      return failed(reduce) ? failure() : scatter(im, *reduce);
    });
    add({"aten.scatter_reduce.two"}, [](Importer &im) -> LogicalResult {
      auto reduce = scatterReduction(im, 4);
      return failed(reduce) ? failure() : scatter(im, *reduce, im.flag(5, "include_self", true));
    });
    add({"aten.index_put.default"}, indexPut);
    add({"aten.cumsum.default"}, cumsum);
    add({"aten.sort.default", "aten.sort.stable"}, sort);
    add({"aten.topk.default"}, topk);
    add({"aten.as_strided.default"}, asStrided);
    add({"aten.minimum.default"}, binary<MinimumOp>);
    add({"aten.clamp.default", "aten.clamp.Tensor"},
        [](Importer &im) { return clamp(im, 1, 2); });
    add({"aten.clamp_min.default", "aten.clamp_min.Tensor"},
        [](Importer &im) { return clamp(im, 1, std::nullopt); });
    add({"aten.clamp_max.default", "aten.clamp_max.Tensor"},
        [](Importer &im) { return clamp(im, std::nullopt, 1); });
    add({"aten.hardtanh.default"}, [](Importer &im) { return clamp(im, 1, 2, -1.0, 1.0); });
    add({"aten.logical_not.default"}, [](Importer &im) { return logical(im, "not"); });
    add({"aten.logical_and.default"}, [](Importer &im) { return logical(im, "and"); });
    add({"aten.logical_or.default"}, [](Importer &im) { return logical(im, "or"); });
    add({"aten.logical_xor.default"}, [](Importer &im) { return logical(im, "xor"); });
    add({"aten.eq.Tensor", "aten.eq.Scalar"}, [](Importer &im) { return compare<EqOp>(im); });
    add({"aten.ne.Tensor", "aten.ne.Scalar"}, [](Importer &im) { return compare<NeOp>(im); });
    add({"aten.lt.Tensor", "aten.lt.Scalar"}, [](Importer &im) { return compare<LtOp>(im); });
    add({"aten.le.Tensor", "aten.le.Scalar"}, [](Importer &im) { return compare<LeOp>(im); });
    add({"aten.gt.Tensor", "aten.gt.Scalar"}, [](Importer &im) { return compare<GtOp>(im); });
    add({"aten.ge.Tensor", "aten.ge.Scalar"}, [](Importer &im) { return compare<GeOp>(im); });
    add({"aten.where.self"}, where);
    add({"aten.neg.default"}, unary<NegOp>);
    t["aten.reciprocal.default"] = [](Importer &im) -> LogicalResult {
      auto input = im.operandAs(0, im.out().element);
      if (failed(input))
        return failure();
      Value one = im.splat({}, im.out().element, 1.0);
      return im.define(DivOp::create(im.builder(), im.loc(), im.outType(), one, *input)
                           ->getResults());
    };
    add({"aten.relu.default"}, unary<ReluOp>);
    add({"aten.tanh.default"}, unary<TanhOp>);
    add({"aten.exp.default"}, unary<ExpOp>);
    add({"aten.log.default"}, unary<LogOp>);
    add({"aten.sqrt.default"}, unary<SqrtOp>);
    add({"aten.rsqrt.default"}, unary<RsqrtOp>);
    add({"aten.sigmoid.default"}, unary<SigmoidOp>);
    add({"aten.abs.default"}, unary<AbsOp>);
    add({"aten.sin.default"}, unary<SinOp>);
    add({"aten.cos.default"}, unary<CosOp>);
    add({"aten.tan.default"}, unary<TanOp>);
    add({"aten.sign.default"}, unary<SignOp>);
    add({"aten.frac.default"}, unary<FracOp>);
    add({"aten.exp2.default"}, unary<Exp2Op>);
    add({"aten.expm1.default"}, unary<Expm1Op>);
    add({"aten.log1p.default"}, unary<Log1pOp>);
    add({"aten.log2.default"}, unary<Log2Op>);
    add({"aten.log10.default"}, unary<Log10Op>);
    add({"aten.erf.default"}, unary<ErfOp>);
    add({"aten.atan.default"}, unary<AtanOp>);
    add({"aten.sinh.default"}, unary<SinhOp>);
    add({"aten.cosh.default"}, unary<CoshOp>);
    add({"aten.asin.default"}, unary<AsinOp>);
    add({"aten.acos.default"}, unary<AcosOp>);
    add({"aten.asinh.default"}, unary<AsinhOp>);
    add({"aten.acosh.default"}, unary<AcoshOp>);
    add({"aten.atanh.default"}, unary<AtanhOp>);
    add({"aten.isnan.default"}, [](Importer &im) { return compare<NeOp>(im, /*sameOperand=*/true); });
    add({"aten.floor.default"}, rounding<FloorOp>);
    add({"aten.ceil.default"}, rounding<CeilOp>);
    add({"aten.trunc.default"}, rounding<TruncOp>);
    add({"aten.round.default"}, rounding<RoundOp>);
    add({"aten.gelu.default"}, gelu);
    add({"aten.clone.default", "aten._to_copy.default", "aten.lift_fresh_copy.default",
         "prims.convert_element_type.default"},
        convert);
    add({"aten.mm.default", "aten.bmm.default"}, matmul);
    add({"aten.addmm.default"}, addmm);
    t["aten.sum.dim_IntList"] = [](Importer &im) { return reduce<SumOp>(im, false); };
    t["aten.sum.default"] = [](Importer &im) { return reduce<SumOp>(im, true); };
    t["aten.mean.dim"] = [](Importer &im) { return reduce<MeanOp>(im, false); };
    t["aten.mean.default"] = [](Importer &im) { return reduce<MeanOp>(im, true); };
    t["aten.amax.default"] = [](Importer &im) { return reduce<AmaxOp>(im, false); };
    t["aten.amin.default"] = [](Importer &im) { return reduce<AminOp>(im, false); };
    t["aten.argmax.default"] = [](Importer &im) { return argReduce<ArgmaxOp, AmaxOp>(im, false); };
    t["aten.argmin.default"] = [](Importer &im) { return argReduce<ArgminOp, AminOp>(im, false); };
    t["aten.max.dim"] = [](Importer &im) { return argReduce<ArgmaxOp, AmaxOp>(im, true); };
    t["aten.min.dim"] = [](Importer &im) { return argReduce<ArgminOp, AminOp>(im, true); };
    t["aten.max.default"] = [](Importer &im) { return reduce<AmaxOp>(im, true); };
    t["aten.min.default"] = [](Importer &im) { return reduce<AminOp>(im, true); };
    t["aten.prod.default"] = [](Importer &im) { return reduce<ProdOp>(im, true); };
    t["aten.prod.dim_int"] = [](Importer &im) { return reduce<ProdOp>(im, false); };
    // any/all: the input is converted to bool (nonzero, NaN included, is true).
    t["aten.any.default"] = [](Importer &im) { return reduce<AnyOp>(im, true); };
    add({"aten.any.dim", "aten.any.dims"}, [](Importer &im) { return reduce<AnyOp>(im, false); });
    t["aten.all.default"] = [](Importer &im) { return reduce<AllOp>(im, true); };
    add({"aten.all.dim", "aten.all.dims"}, [](Importer &im) { return reduce<AllOp>(im, false); });
    add({"aten._softmax.default"}, softmax<SoftmaxOp>);
    add({"aten._log_softmax.default"}, softmax<LogSoftmaxOp>);
    add({"aten.native_layer_norm.default"}, layerNorm);
    add({"aten._scaled_dot_product_flash_attention_for_cpu.default"}, attention);
    add({"aten.convolution.default"}, convolution);
    t["_c10d_functional.all_reduce.default"] = [](Importer &im) {
      return collective(im, CollectiveKind::AllReduce);
    };
    t["_c10d_functional.all_gather_into_tensor.default"] = [](Importer &im) {
      return collective(im, CollectiveKind::AllGather);
    };
    t["_c10d_functional.reduce_scatter_tensor.default"] = [](Importer &im) {
      return collective(im, CollectiveKind::ReduceScatter);
    };
    t["_c10d_functional.all_to_all_single.default"] = [](Importer &im) {
      return collective(im, CollectiveKind::AllToAll);
    };
    // The collectives above complete in plan order: waiting for one of them
    // is the identity. A wait for anything else (a collective run outside
    // this graph, still in flight) cannot be compiled.
    t["_c10d_functional.wait_tensor.default"] = [](Importer &im) -> LogicalResult {
      FailureOr<Value> tensor = im.tensor(0, "tensor");
      if (failed(tensor))
        return failure();
      if (!tensor->getDefiningOp<graph::CollectiveOp>())
        return im.fail("waits for a collective that is not in this graph");
      return im.define(*tensor);
    };
    add({"aten.view.default", "aten._unsafe_view.default", "aten.reshape.default",
         "aten.squeeze.dim", "aten.squeeze.dims", "aten.squeeze.default",
         "aten.unsqueeze.default", "aten.flatten.using_ints",
         // alias: a view with the same shape; the reshape folds away, so the
         // result aliases its input exactly as in ATen.
         "aten.alias.default"},
        reshape);
    t["aten.permute.default"] = [](Importer &im) {
      return permute(im, [&](int64_t) { return im.intList(im.arg(1, "dims"), "dims"); });
    };
    t["aten.t.default"] = [](Importer &im) {
      return permute(im, [](int64_t rank) -> FailureOr<SmallVector<int64_t>> {
        if (rank < 2)
          return SmallVector<int64_t>(rank == 1 ? 1 : 0, 0);
        return SmallVector<int64_t>{1, 0};
      });
    };
    t["aten.transpose.int"] = [](Importer &im) {
      return permute(im, [&](int64_t rank) -> FailureOr<SmallVector<int64_t>> {
        auto d0 = im.dim(1, "dim0", rank), d1 = im.dim(2, "dim1", rank);
        if (failed(d0) || failed(d1))
          return failure();
        auto dims = llvm::to_vector(llvm::seq<int64_t>(0, rank));
        if (rank > 0)
          std::swap(dims[*d0], dims[*d1]);
        return dims;
      });
    };
    add({"aten.expand.default"}, expand);
    add({"aten.slice.Tensor"}, slice);
    add({"aten.select.int"}, select);
    add({"aten.cat.default"}, concat);
    add({"aten.embedding.default"}, embedding);
    t["aten.full.default"] = [](Importer &im) { return full(im, 1, "fill_value"); };
    t["aten.scalar_tensor.default"] = [](Importer &im) { return full(im, 0, "s"); };
    t["aten.full_like.default"] = [](Importer &im) { return full(im, 1, "fill_value"); };
    // Uninitialized memory in ATen; zeros here, which is one valid content.
    add({"aten.empty.memory_format", "aten.empty_strided.default", "aten.empty_like.default",
         "aten.new_empty.default", "aten.new_empty_strided.default"},
        [](Importer &im) { return im.define(im.splatOut(0.0)); });
    t["aten.zeros_like.default"] = [](Importer &im) {
      return im.define(im.splatOut(0.0));
    };
    t["aten.ones_like.default"] = [](Importer &im) {
      return im.define(im.splatOut(1.0));
    };
    return t;
  }();
  return table;
}

//===----------------------------------------------------------------------===//
// Graph structure
//===----------------------------------------------------------------------===//

FailureOr<Type> Importer::parseDType(const json::Value *v, Location l) {
  std::optional<StringRef> name = v ? v->getAsString() : std::nullopt;
  if (name) {
    if (*name == "float32") return Type(b.getF32Type());
    if (*name == "float64") return Type(b.getF64Type());
    if (*name == "float16") return Type(b.getF16Type());
    if (*name == "bfloat16") return Type(b.getBF16Type());
    if (*name == "int64") return Type(b.getI64Type());
    if (*name == "int32") return Type(b.getI32Type());
    if (*name == "int8") return Type(b.getIntegerType(8));
    if (*name == "uint8") return Type(b.getIntegerType(8, /*isSigned=*/false));
    if (*name == "bool") return Type(b.getI1Type());
  }
  (void)fail(l, "unsupported dtype '" + name.value_or("?") +
                    "' (Kiln compiles float32, float64, float16, bfloat16, int64, int32, int8, uint8 "
                    "and bool)");
  return failure();
}

/// A size expression: an integer, ["s", i] for symbol i, or [op, a, b] with
/// op one of + * // % (what Dynamo's shapes use; floor division and modulo
/// as in Python).
FailureOr<AffineExpr> Importer::parseSize(const json::Value &v, Location l) {
  if (auto constant = v.getAsInteger())
    return b.getAffineConstantExpr(*constant);
  const json::Array *list = v.getAsArray();
  std::optional<StringRef> op = list && !list->empty() ? (*list)[0].getAsString() : std::nullopt;
  if (!op)
    return failure();
  if (*op == "s" && list->size() == 2) {
    auto index = (*list)[1].getAsInteger();
    if (!index || *index < 0 || *index >= numSymbols)
      return failure();
    return b.getAffineSymbolExpr(*index);
  }
  if (list->size() != 3)
    return failure();
  auto lhs = parseSize((*list)[1], l), rhs = parseSize((*list)[2], l);
  if (failed(lhs) || failed(rhs))
    return failure();
  if (*op == "+")
    return *lhs + *rhs;
  if (*op == "*")
    return *lhs * *rhs;
  // Sizes divide by positive constants; anything else stays out of the types.
  auto divisor = dyn_cast<AffineConstantExpr>(*rhs);
  if (!divisor || divisor.getValue() <= 0)
    return failure();
  if (*op == "//")
    return lhs->floorDiv(*rhs);
  if (*op == "%")
    return *lhs % *rhs;
  return failure();
}

FailureOr<TensorMeta> Importer::parseMeta(const json::Value *v, Location l) {
  const json::Object *o = v ? v->getAsObject() : nullptr;
  if (!o) {
    (void)fail(l, "expected {\"shape\": [...], \"dtype\": ...}");
    return failure();
  }
  TensorMeta meta;
  auto dtype = parseDType(o->get("dtype"), l);
  if (failed(dtype))
    return failure();
  meta.element = *dtype;
  const json::Array *shape = o->getArray("shape");
  if (!shape) {
    (void)fail(l, "missing shape");
    return failure();
  }
  bool symbolic = false;
  for (const json::Value &d : *shape) {
    auto size = d.getAsInteger();
    if (size && *size >= 0) {
      meta.shape.push_back(*size);
      meta.dims.push_back(b.getAffineConstantExpr(*size));
      continue;
    }
    auto expr = size ? FailureOr<AffineExpr>(failure()) : parseSize(d, l);
    if (failed(expr)) {
      (void)fail(l, "a dim must be a non-negative integer or a size expression over the "
                    "graph's symbols");
      return failure();
    }
    if (auto constant = dyn_cast<AffineConstantExpr>(*expr)) {
      meta.shape.push_back(constant.getValue()); // e.g. s0 - s0
    } else {
      meta.shape.push_back(ShapedType::kDynamic);
      symbolic = true;
    }
    meta.dims.push_back(*expr);
  }
  if (!symbolic)
    meta.dims.clear();
  // Element counts and byte sizes are int64 everywhere after this.
  int64_t bytes = std::max<int64_t>(1, llvm::divideCeil(meta.element.getIntOrFloatBitWidth(), 8));
  for (int64_t size : meta.shape)
    if (!ShapedType::isDynamic(size) && __builtin_mul_overflow(bytes, size, &bytes)) {
      (void)fail(l, "the shape has more bytes than an int64 counts");
      return failure();
    }
  return meta;
}

Location Importer::parseLoc(const json::Object &node, StringRef name) {
  Location inner = UnknownLoc::get(&ctx);
  if (const json::Object *loc = node.getObject("loc")) {
    auto file = loc->getString("file");
    auto line = loc->getInteger("line");
    if (file && line)
      inner = FileLineColLoc::get(&ctx, *file, *line, 0);
  }
  return NameLoc::get(StringAttr::get(&ctx, name), inner);
}

/// "input_writes": [{"output": 3, "input": 0}, ...]: graph output 3 is the
/// new value of input 0, which the graph overwrites (an in-place op on it,
/// functionalized); kept as the function's kiln_graph.input_writes, by
/// result index.
LogicalResult Importer::parseInputWrites(const json::Object &graph, func::FuncOp func,
                                         ArrayRef<int64_t> resultOf) {
  const json::Array *writes = graph.getArray("input_writes");
  if (!writes || writes->empty())
    return success();
  SmallVector<Attribute> pairs;
  std::set<int64_t> written;
  for (const json::Value &entry : *writes) {
    const json::Object *o = entry.getAsObject();
    std::optional<int64_t> output = o ? o->getInteger("output") : std::nullopt;
    std::optional<int64_t> input = o ? o->getInteger("input") : std::nullopt;
    if (!output || !input || *output < 0 || *output >= (int64_t)resultOf.size() ||
        resultOf[*output] < 0 || *input < 0 || *input >= (int64_t)func.getNumArguments()) {
      emitError(func.getLoc()) << "every input write names a tensor output and an input of "
                               << "the graph by index";
      return failure();
    }
    int64_t result = resultOf[*output];
    if (func.getResultTypes()[result] != func.getArgumentTypes()[*input]) {
      emitError(func.getLoc()) << "output " << *output << " (" << func.getResultTypes()[result]
                               << ") cannot be the new value of input " << *input << " ("
                               << func.getArgumentTypes()[*input] << "): their types differ";
      return failure();
    }
    if (!written.insert(*input).second) {
      emitError(func.getLoc()) << "input " << *input << " is written more than once";
      return failure();
    }
    pairs.push_back(b.getDenseI64ArrayAttr({result, *input}));
  }
  func->setAttr(graph::kInputWritesAttr, b.getArrayAttr(pairs));
  return success();
}

/// "symbols": [{"name": "s77", "min": 2, "max": 1024}, ...], in the order the
/// size expressions number them; kept as the function's kiln_graph.symbols.
LogicalResult Importer::parseSymbols(const json::Object &graph, func::FuncOp func) {
  const json::Array *symbols = graph.getArray("symbols");
  if (!symbols || symbols->empty())
    return success();
  SmallVector<Attribute> entries;
  for (const json::Value &entry : *symbols) {
    const json::Object *o = entry.getAsObject();
    auto name = o ? o->getString("name") : std::nullopt;
    if (!name) {
      emitError(func.getLoc()) << "every size symbol needs a name";
      return failure();
    }
    int64_t min = o->getInteger("min").value_or(0);
    int64_t max = o->getInteger("max").value_or(INT64_MAX);
    if (min < 0 || min > max) {
      emitError(func.getLoc()) << "size symbol " << *name << " has the empty range [" << min
                               << ", " << max << "]";
      return failure();
    }
    symbolNames.push_back(name->str());
    entries.push_back(b.getDictionaryAttr({b.getNamedAttr("name", b.getStringAttr(*name)),
                                           b.getNamedAttr("min", b.getI64IntegerAttr(min)),
                                           b.getNamedAttr("max", b.getI64IntegerAttr(max))}));
  }
  func->setAttr(graph::kSymbolsAttr, b.getArrayAttr(entries));
  return success();
}

LogicalResult Importer::importNode(const json::Object &node) {
  nodeName = node.getString("name").value_or("").str();
  target = node.getString("target").value_or("").str();
  nodeLoc = parseLoc(node, nodeName);
  args = node.getArray("args");
  kwargs = node.getObject("kwargs");
  outputs.clear();
  if (nodeName.empty())
    return fail("node has no name");
  if (values.count(nodeName))
    return fail("the graph defines '" + nodeName + "' twice");
  if (const json::Array *metas = node.getArray("outputs")) {
    for (const json::Value &m : *metas) {
      if (m.kind() == json::Value::Null) {
        outputs.push_back({{}, b.getF32Type()});
        continue;
      }
      auto meta = parseMeta(&m, nodeLoc);
      if (failed(meta))
        return failure();
      outputs.push_back(*meta);
    }
  }
  if (outputs.empty())
    return fail("node has no tensor outputs");
  auto it = handlers().find(target);
  if (it == handlers().end() || !it->second)
    return fail("op is not supported by Kiln");
  if (!symbolicTargets().contains(target) && touchesSymbolicSizes())
    return fail("symbolic sizes are not supported for this op yet (it compiles with static "
                "shapes, e.g. torch.compile(..., dynamic=False))");
  return it->second(*this);
}

OwningOpRef<ModuleOp> Importer::run(StringRef text) {
  Location fileLoc = FileLineColLoc::get(&ctx, "<fx graph json>", 0, 0);
  auto parsed = json::parse(text);
  if (!parsed) {
    emitError(fileLoc) << "invalid graph JSON: " << llvm::toString(parsed.takeError());
    return nullptr;
  }
  const json::Object *graph = parsed->getAsObject();
  if (!graph) {
    emitError(fileLoc) << "graph JSON must be an object";
    return nullptr;
  }
  if (graph->getInteger("version").value_or(0) != 1) {
    emitError(fileLoc) << "unsupported graph JSON version (expected 1)";
    return nullptr;
  }
  std::string name = graph->getString("name").value_or("graph").str();
  deterministicGraph = graph->getBoolean("deterministic").value_or(false);
  const json::Array *symbols = graph->getArray("symbols");
  numSymbols = symbols ? symbols->size() : 0;
  OwningOpRef<ModuleOp> module = ModuleOp::create(fileLoc);
  b.setInsertionPointToEnd(module->getBody());
  if (std::optional<StringRef> precision = graph->getString("float32_matmul_precision")) {
    if (*precision != "highest" && *precision != "high" && *precision != "medium") {
      emitError(fileLoc) << "float32_matmul_precision must be highest, high or medium (as "
                            "torch.set_float32_matmul_precision), not '"
                         << *precision << "'";
      return nullptr;
    }
    if (*precision != "highest")
      (*module)->setAttr(graph::kAllowTf32Attr, b.getUnitAttr());
  }

  SmallVector<Type> inputTypes;
  SmallVector<std::string> inputNames;
  SmallVector<std::optional<int64_t>> symbolInputs; // "symbol": the input is its value
  SmallVector<bool> parameterInputs;                // "parameter": a module's tensor
  if (const json::Array *inputs = graph->getArray("inputs")) {
    for (const json::Value &input : *inputs) {
      const json::Object *o = input.getAsObject();
      std::string inputName = o ? o->getString("name").value_or("").str() : "";
      auto meta = parseMeta(&input, NameLoc::get(b.getStringAttr(inputName)));
      if (failed(meta))
        return nullptr;
      inputTypes.push_back(meta->type());
      inputNames.push_back(inputName);
      std::optional<int64_t> symbol = o ? o->getInteger("symbol") : std::nullopt;
      if (symbol && (*symbol < 0 || *symbol >= numSymbols || !meta->shape.empty() ||
                     !meta->element.isInteger(64))) {
        emitError(NameLoc::get(b.getStringAttr(inputName)))
            << "a symbol's value is a 0-d int64 input naming one of the graph's symbols";
        return nullptr;
      }
      symbolInputs.push_back(symbol);
      parameterInputs.push_back(o && o->getBoolean("parameter").value_or(false));
    }
  }
  auto func = func::FuncOp::create(b, fileLoc, name, b.getFunctionType(inputTypes, {}));
  if (failed(parseSymbols(*graph, func)))
    return nullptr;
  for (auto [i, symbol] : llvm::enumerate(symbolInputs))
    if (symbol)
      func.setArgAttr(i, graph::kSymbolArgAttr, b.getI64IntegerAttr(*symbol));
  for (auto [i, parameter] : llvm::enumerate(parameterInputs))
    if (parameter)
      func.setArgAttr(i, graph::kParameterArgAttr, b.getUnitAttr());
  Block *entry = func.addEntryBlock();
  for (auto [i, inputName] : llvm::enumerate(inputNames)) {
    Location where = NameLoc::get(b.getStringAttr(inputName));
    if (inputName.empty()) {
      emitError(fileLoc) << "input " << i << " has no name";
      return nullptr;
    }
    if (!values.try_emplace(inputName, SmallVector<Value>{entry->getArgument(i)}).second) {
      emitError(where) << "the graph has two inputs named '" << inputName << "'";
      return nullptr;
    }
  }
  b.setInsertionPointToStart(entry);

  if (const json::Array *nodes = graph->getArray("nodes")) {
    for (const json::Value &node : *nodes) {
      const json::Object *o = node.getAsObject();
      if (!o) {
        emitError(fileLoc) << "every node must be an object";
        return nullptr;
      }
      if (failed(importNode(*o)))
        return nullptr;
    }
  }

  SmallVector<Value> results;
  SmallVector<int64_t> resultOf; // graph output -> result index, -1 for literals
  if (const json::Array *outputsList = graph->getArray("outputs")) {
    for (const json::Value &output : *outputsList) {
      // None and Python scalars are not tensors the plan produces: the
      // caller puts them back in place.
      resultOf.push_back(output.getAsObject() ? (int64_t)results.size() : -1);
      if (!output.getAsObject())
        continue;
      const json::Object *ref = output.getAsObject();
      auto refName = ref ? ref->getString("ref") : std::nullopt;
      int64_t index = ref ? ref->getInteger("index").value_or(0) : 0;
      auto it = values.find(refName.value_or(""));
      if (!refName || it == values.end() || index < 0 || index >= (int64_t)it->second.size()) {
        emitError(fileLoc) << "graph output refers to unknown value '"
                           << refName.value_or("") << "'";
        return nullptr;
      }
      results.push_back(it->second[index]);
    }
  }
  func::ReturnOp::create(b, fileLoc, results);
  func.setFunctionType(b.getFunctionType(inputTypes, TypeRange(ValueRange(results))));
  if (failed(parseInputWrites(*graph, func, resultOf)))
    return nullptr;
  if (failed(verify(*module)))
    return nullptr;
  return module;
}

} // namespace

OwningOpRef<ModuleOp> kiln::importFxGraph(StringRef json, MLIRContext &context) {
  context.loadDialect<graph::GraphDialect, func::FuncDialect>();
  return Importer(context).run(json);
}

static std::vector<std::string> sortedNames(const llvm::StringSet<> &set) {
  std::vector<std::string> names;
  for (const auto &entry : set)
    names.push_back(entry.getKey().str());
  llvm::sort(names);
  return names;
}

std::vector<std::string> kiln::symbolicFxTargets() { return sortedNames(symbolicTargets()); }

std::vector<std::string> kiln::symintScalarFxTargets() {
  return sortedNames(symintScalarTargets());
}

std::vector<std::string> kiln::supportedFxTargets() {
  std::vector<std::string> names;
  for (const auto &entry : handlers())
    if (entry.second)
      names.push_back(entry.first().str());
  llvm::sort(names);
  return names;
}
