#ifndef KILN_GRAPH_INTERFACES
#define KILN_GRAPH_INTERFACES

include "mlir/IR/OpBase.td"

// Ops that compute each result element from the operand elements at the same
// (NumPy-broadcast) index. Fusion and lowering ask for this trait; no op list.
def Graph_Elementwise : NativeOpTrait<"Elementwise"> {
  let cppNamespace = "::kiln::graph";
}

// Element types of elementwise ops, when they are not all the result's:
// comparisons give i1 from operands of one element type; FloatOnly ops need a
// floating-point result, IntegerOnly an integer or bool one; OwnElementTypes ops check element types themselves.
def Graph_Comparison : NativeOpTrait<"Comparison"> { let cppNamespace = "::kiln::graph"; }
def Graph_FloatOnly : NativeOpTrait<"FloatOnly"> { let cppNamespace = "::kiln::graph"; }
def Graph_IntegerOnly : NativeOpTrait<"IntegerOnly"> { let cppNamespace = "::kiln::graph"; }
def Graph_OwnElementTypes : NativeOpTrait<"OwnElementTypes"> {
  let cppNamespace = "::kiln::graph";
}

def Graph_FusableOpInterface : OpInterface<"FusableOpInterface"> {
  let cppNamespace = "::kiln::graph";
  let description = [{
    How an op iterates its leading (outermost) dimension, which is what
    kiln-form-kernels needs to know: a kernel's workgroups each own a
    contiguous slice of that dimension, so an op may join a kernel when its
    outermost loop is parallel with the kernel's extent and it reads every
    value made inside the kernel at the same leading index it writes.
  }];
  let methods = [
    InterfaceMethod<[{
        The op's leading-dimension iteration: `extent` is set when its
        outermost loop is parallel, and `aligned[i]` says whether operand i is
        read at the leading index the op writes. The default is the rule for
        elementwise ops (operands of the result's rank and leading size are
        aligned; broadcast ones are not).
      }],
      "::kiln::graph::LeadingDim", "getLeadingDim", (ins), [{}],
      [{ return ::kiln::graph::elementwiseLeadingDim($_op); }]>,
  ];
}

#endif // KILN_GRAPH_INTERFACES
