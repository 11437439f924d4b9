#ifndef KILN_KERNEL_DIALECT
#define KILN_KERNEL_DIALECT

include "mlir/IR/DialectBase.td"

def Kernel_Dialect : Dialect {
  let name = "kiln_kernel";
  let cppNamespace = "::kiln::kernel";
  let summary = "Graph ops grouped by fusion into single launches";
  let description = [{
    A `kiln_kernel.kernel` is one launch: its region holds the `kiln_graph`
    ops fusion put together, isolated from above. `workgroup_extent` is the
    size of the leading parallel dimension every op in the kernel shares;
    workgroups split that dimension. An extent of 0 means the kernel runs as
    a single workgroup. A symbolic extent is written as the map of its
    expression over the graph's size symbols, `extent(affine_map<()[s0] ->
    (s0 * 4)>)`, and stored in `symbolic_extent` (`workgroup_extent` is then
    -1).
  }];
  // Attributes: #kiln_kernel.target (on the module) and
  // #kiln_kernel.packed_rhs (on kernel arguments), both verified.
  let useDefaultAttributePrinterParser = 1;
  let hasOperationAttrVerify = 1;
  let hasRegionArgAttrVerify = 1;
  let extraClassDeclaration = [{
    /// The name of the module attribute holding the target.
    static constexpr ::llvm::StringLiteral kTargetAttrName = "kiln_kernel.target";
    /// The name of the kernel argument attribute of packed weights.
    static constexpr ::llvm::StringLiteral kPackedRhsAttrName = "kiln_kernel.packed_rhs";
  }];
}

#endif // KILN_KERNEL_DIALECT
