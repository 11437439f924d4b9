#ifndef KILN_GRAPH_DIALECT
#define KILN_GRAPH_DIALECT

include "mlir/IR/OpBase.td"

def Graph_Dialect : Dialect {
  let name = "kiln_graph";
  let cppNamespace = "::kiln::graph";
  let summary = "ATen semantics on ranked tensors";
  let description = [{
    One op per Core ATen op family. Operands and results are ranked tensors of
    float32, int64 or bool with static or symbolic shapes (a `?` dim is
    an expression over the graph's size symbols, kept in the type's encoding;
    see SymbolicShapes.h). Type promotion is explicit: the
    importer inserts `kiln_graph.convert` so that arithmetic ops see operands
    whose element type equals the result element type (comparisons compare in
    the operands' common type and produce i1).
  }];
  let hasConstantMaterializer = 1;
  let hasCanonicalizer = 1;
  let useDefaultAttributePrinterParser = 1; // the enums of GraphEnums.td
}

class Graph_Op<string mnemonic, list<Trait> traits = []>
    : Op<Graph_Dialect, mnemonic, traits>;

def Graph_ElementType : AnyTypeOf<[F32, F64, I64, I32, I1]>;
// Static dims, or `?` dims named by the type's encoding (SymbolicShapes.h).
def Graph_Tensor : ConfinedType<RankedTensorOf<[F32, F64, F16, BF16, I64, I32, I8, UI8, I1]>,
    [CPred<"::kiln::graph::hasValidSymbolicShape($_self)">],
    "ranked tensor of f32, f64, f16, bf16, i64, i32, i8, ui8 or i1 values whose `?` dims are named by an affine-map encoding over the graph's size symbols">;

#endif // KILN_GRAPH_DIALECT
