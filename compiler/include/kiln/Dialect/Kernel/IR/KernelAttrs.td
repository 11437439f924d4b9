#ifndef KILN_KERNEL_ATTRS
#define KILN_KERNEL_ATTRS

include "mlir/IR/AttrTypeBase.td"
include "kiln/Dialect/Kernel/IR/KernelDialect.td"

class Kernel_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Kernel_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

def Kernel_TargetAttr : Kernel_Attr<"Target", "target"> {
  let summary = "The hardware a module's kernels are compiled for";
  let description = [{
    Set on the module as `kiln_kernel.target` by the compiler (or by
    `kiln-attach-target` in tests), from the target registry's description
    of a target name. Passes that make target-dependent choices (vector
    widths, micro-kernel tiles, panel widths) read it here and nowhere else:
    no pass queries the machine it runs on.

    ```mlir
    module attributes {kiln_kernel.target = #kiln_kernel.target<
        kind = "cpu", name = "cpu:x86-64-v3", format = "cpu-x86_64",
        triple = "x86_64-unknown-linux-gnu", chip = "x86-64-v3",
        features = "+avx,+avx2,+fma", vector_bits = 256, vector_registers = 16,
        l1_bytes = 32768, l2_bytes = 1048576>} { ... }
    ```

    `kind` names the registered target ("cpu"); `name` is the target option
    that produced it; `format` names the executable format of the artifact
    (the runtime picks the executable its device runs by it). GPU targets
    describe their subgroup width, the most threads of a workgroup and the
    shared memory of one; CPU targets leave them 0. On a GPU target
    `vector_bits` is the widest memory access of one thread (128: a vec4 of
    32-bit elements), and `vector_registers` may be 0.
  }];
  let parameters = (ins
    StringRefParameter<"registered target kind, e.g. \"cpu\"">:$kind,
    StringRefParameter<"the target option it was parsed from">:$name,
    StringRefParameter<"executable format in the artifact">:$format,
    StringRefParameter<"LLVM target triple">:$triple,
    StringRefParameter<"CPU or GPU model as LLVM names it">:$chip,
    StringRefParameter<"LLVM feature string, +a,+b">:$features,
    "int64_t":$vector_bits,
    "int64_t":$vector_registers,
    DefaultValuedParameter<"int64_t", "0">:$l1_bytes,
    DefaultValuedParameter<"int64_t", "0">:$l2_bytes,
    DefaultValuedParameter<"int64_t", "0">:$subgroup_size,
    DefaultValuedParameter<"int64_t", "0">:$max_workgroup_size,
    DefaultValuedParameter<"int64_t", "0">:$shared_memory_bytes
  );
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Whether `features` enables `feature` (LLVM's spelling, "avx512f").
    bool hasFeature(::llvm::StringRef feature) const;
    /// The architecture part of the triple ("x86_64", "aarch64").
    ::llvm::StringRef getArch() const;
    /// Elements of `element` one vector register holds.
    int64_t vectorLength(::mlir::Type element) const;
  }];
}

def Kernel_PackedRhsAttr : Kernel_Attr<"PackedRhs", "packed_rhs"> {
  let summary = "A kernel argument holding another one packed into panels";
  let description = [{
    Argument attribute of an outlined kernel function, set by
    `kiln-pack-weights`: this argument holds argument `of` (the right-hand
    side of the kernel's matmuls, read `transposed` or not) copied into
    panels of `panel_columns` columns, a [N / panel_columns, K,
    panel_columns] buffer. The panel width is decided once, from the
    target's micro-kernel tile, by the pass that packs; the pass that emits
    the micro-kernel checks that its tile reads panels of that width and
    fails otherwise, so the two can never disagree silently.
  }];
  let parameters = (ins "int64_t":$of, "bool":$transposed, "int64_t":$panel_columns);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

#endif // KILN_KERNEL_ATTRS
