#ifndef KILN_TARGET_PASSES
#define KILN_TARGET_PASSES

include "mlir/Pass/PassBase.td"

def AttachTargetPass : Pass<"kiln-attach-target", "mlir::ModuleOp"> {
  let summary = "Set the module's kiln_kernel.target from a target name";
  let description = [{
    Parses `target` with the target registry (the same parser the compiler
    and Python use) and sets its description as the module's
    `kiln_kernel.target`, replacing any. The compiler does this itself; the
    pass is for kiln-opt and lit tests, which name the target they check
    (`--kiln-attach-target=target=cpu:x86-64-v3`) instead of depending on
    the machine the test runs on.
  }];
  let options = [
    Option<"target", "target", "std::string", /*default=*/"\"\"",
           "Target name, as the `target` option takes it (required)">,
  ];
  let dependentDialects = ["kiln::kernel::KernelDialect"];
}

#endif // KILN_TARGET_PASSES
