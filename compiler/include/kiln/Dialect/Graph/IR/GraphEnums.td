#ifndef KILN_GRAPH_ENUMS
#define KILN_GRAPH_ENUMS

include "mlir/IR/EnumAttr.td"
include "kiln/Dialect/Graph/IR/GraphDialect.td"

// ATen's string-valued arguments as enums: a value outside the list does not
// parse, and code compares enum cases, not strings.

class Graph_EnumAttr<EnumAttrInfo info, string mnemonic>
    : EnumAttr<Graph_Dialect, info, mnemonic> {
  let assemblyFormat = "`<` $value `>`";
}

def Graph_RoundingMode : I32EnumAttr<"RoundingMode", "aten.div's rounding_mode", [
    I32EnumAttrCase<"Trunc", 0, "trunc">, I32EnumAttrCase<"Floor", 1, "floor">]> {
  let cppNamespace = "::kiln::graph";
  let genSpecializedAttr = 0;
}
def Graph_RoundingModeAttr : Graph_EnumAttr<Graph_RoundingMode, "rounding_mode">;

def Graph_GeluApproximation : I32EnumAttr<"GeluApproximation", "aten.gelu's approximate", [
    I32EnumAttrCase<"None", 0, "none">, I32EnumAttrCase<"Tanh", 1, "tanh">]> {
  let cppNamespace = "::kiln::graph";
  let genSpecializedAttr = 0;
}
def Graph_GeluApproximationAttr : Graph_EnumAttr<Graph_GeluApproximation, "gelu_approximation">;

def Graph_ScatterReduction : I32EnumAttr<"ScatterReduction", "aten.scatter_reduce's reduce", [
    I32EnumAttrCase<"None", 0, "none">, I32EnumAttrCase<"Sum", 1, "sum">,
    I32EnumAttrCase<"Prod", 2, "prod">, I32EnumAttrCase<"Amax", 3, "amax">,
    I32EnumAttrCase<"Amin", 4, "amin">]> {
  let cppNamespace = "::kiln::graph";
  let genSpecializedAttr = 0;
}
def Graph_ScatterReductionAttr : Graph_EnumAttr<Graph_ScatterReduction, "scatter_reduction">;

def Graph_CheckKind : I32EnumAttr<"CheckKind", "the exception a failed check raises", [
    I32EnumAttrCase<"Index", 0, "index">, I32EnumAttrCase<"Runtime", 1, "runtime">]> {
  let cppNamespace = "::kiln::graph";
  let genSpecializedAttr = 0;
}
def Graph_CheckKindAttr : Graph_EnumAttr<Graph_CheckKind, "check_kind">;

// Case values match the runtime's CollectiveKind and ReduceOp
// (kiln/runtime/Communicator.h), which the artifact stores.
def Graph_CollectiveKind : I32EnumAttr<"CollectiveKind", "a collective across the ranks", [
    I32EnumAttrCase<"AllReduce", 0, "all_reduce">, I32EnumAttrCase<"AllGather", 1, "all_gather">,
    I32EnumAttrCase<"ReduceScatter", 2, "reduce_scatter">,
    I32EnumAttrCase<"AllToAll", 3, "all_to_all">]> {
  let cppNamespace = "::kiln::graph";
  let genSpecializedAttr = 0;
}
def Graph_CollectiveKindAttr : Graph_EnumAttr<Graph_CollectiveKind, "collective">;

def Graph_ReduceOp : I32EnumAttr<"ReduceOp", "a collective's reduction (torch's reduce_op)", [
    I32EnumAttrCase<"Sum", 0, "sum">, I32EnumAttrCase<"Avg", 1, "avg">,
    I32EnumAttrCase<"Product", 2, "product">, I32EnumAttrCase<"Min", 3, "min">,
    I32EnumAttrCase<"Max", 4, "max">]> {
  let cppNamespace = "::kiln::graph";
  let genSpecializedAttr = 0;
}
def Graph_ReduceOpAttr : Graph_EnumAttr<Graph_ReduceOp, "reduce_op">;

#endif // KILN_GRAPH_ENUMS
