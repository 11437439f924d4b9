#ifndef KILN_DIALECT_KERNEL_IR_KERNELOPS_H
#define KILN_DIALECT_KERNEL_IR_KERNELOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "kiln/Dialect/Kernel/IR/KernelOpsDialect.h.inc"

#define GET_ATTRDEF_CLASSES
#include "kiln/Dialect/Kernel/IR/KernelAttrs.h.inc"

#define GET_OP_CLASSES
#include "kiln/Dialect/Kernel/IR/KernelOps.h.inc"

namespace kiln::kernel {

// The facts passes record on kernel functions, loops and ops, all verified
// by the Kernel dialect (KernelDialect::verifyOperationAttribute).
/// Attribute on outlined kernel functions: the kernel's name.
inline constexpr llvm::StringLiteral kKernelAttr = "kiln_kernel.kernel";
/// Attribute on outlined kernel functions: the leading parallel extent, an
/// integer or, when symbolic, the map of its expression over the symbols.
inline constexpr llvm::StringLiteral kExtentAttr = "kiln_kernel.workgroup_extent";
/// Attribute on outlined kernel functions of graphs with symbolic sizes: the
/// number of size symbols, passed as the kernel's last `index` arguments.
inline constexpr llvm::StringLiteral kNumSymbolsAttr = "kiln_kernel.num_symbols";
/// Set by kiln-distribute-workgroups: the row alignment of workgroup chunks.
inline constexpr llvm::StringLiteral kAlignmentAttr = "kiln_kernel.workgroup_alignment";
/// Set by kiln-distribute-workgroups on a kernel whose temporaries moved
/// into a scratch buffer: its size in bytes. The kernel takes that buffer
/// (memref<N x i8>) as its last memref argument, and the plan binds a
/// buffer of that size, private to the launch, after the others.
inline constexpr llvm::StringLiteral kScratchBytesAttr = "kiln_kernel.scratch_bytes";
/// Set by kiln-gpu-prepare-kernels on a kernel whose temporaries became
/// buffers of the launch (a GPU kernel allocates no memory itself): their
/// sizes in bytes, each an i64 or, when symbolic, the map of its expression
/// over the size symbols. The kernel takes them as memref arguments after
/// its bindings (before any size symbols), and the plan binds a buffer of
/// each size, private to the launch, after the others, in this order.
inline constexpr llvm::StringLiteral kScratchBuffersAttr = "kiln_kernel.scratch_buffers";
/// Set by GPU code generation: the threads of one workgroup, [x, y, z].
inline constexpr llvm::StringLiteral kWorkgroupSizeAttr = "kiln_kernel.workgroup_size";
/// How the GPU mapping spread a kernel's loop nests over its threads, one
/// phrase per strategy used (for dumps and kiln-inspect).
inline constexpr llvm::StringLiteral kGpuStrategiesAttr = "kiln_kernel.gpu_strategies";
/// On an scf.parallel a GPU lowering emits: its iterations write distinct
/// elements (through indices computed from its induction variables), so the
/// GPU mapping may spread them over threads.
inline constexpr llvm::StringLiteral kWritesApartAttr = "kiln_kernel.writes_apart";
/// Set by kiln-mark-in-place-operands: pairs of binding indices [input,
/// output, ...] that one buffer may serve both (see the pass).
inline constexpr llvm::StringLiteral kInPlaceOperandsAttr = "kiln_kernel.in_place_operands";
/// Attribute on kernel functions whose every top-level loop nest iterates
/// rows and, directly inside (or in loops marked kColumnLoopAttr), the
/// columns of one [rows, N] output space
/// (a matmul and its epilogue): N, a constant. Workgroups then split the
/// columns as well as the rows (kiln-distribute-workgroups), so a matmul
/// with few rows still runs on every core.
inline constexpr llvm::StringLiteral kColumnExtentAttr = "kiln_kernel.column_extent";
/// On an scf.for inside a top-level loop nest of such a kernel: this loop,
/// not the one directly inside the top-level loop, iterates the columns.
inline constexpr llvm::StringLiteral kColumnLoopAttr = "kiln_kernel.column_loop";
/// Set on a serial loop (a sort's stages) whose parallel steps iterate the
/// kernel's rows as their first dimension: the loop itself runs whole on
/// every workgroup, and a GPU mapping clamps its steps' rows to the
/// workgroup's chunk instead of the loop.
inline constexpr llvm::StringLiteral kStepsOverRowsAttr = "kiln_kernel.steps_over_rows";
/// With kColumnExtentAttr: column chunks are multiples of this.
inline constexpr llvm::StringLiteral kColumnAlignmentAttr = "kiln_kernel.column_alignment";
/// Marks the linalg.generic a graph matmul lowers to: "ikj" (B is [K, N]) or
/// "ijk" (B is [N, K]), the loop order of its iteration space. Targets use it
/// to pick a microkernel.
inline constexpr llvm::StringLiteral kContractionAttr = "kiln_kernel.contraction";

/// Set on a kernel function of the host plan once its code is serialized:
/// the executable's entry point for it (kernels with the same code share one).
inline constexpr llvm::StringLiteral kSymbolAttr = "kiln_kernel.symbol";
/// Set on a kernel function whose code is the same as another's but for its
/// name (the compiler lowers only the other): that kernel.
inline constexpr llvm::StringLiteral kSameCodeAsAttr = "kiln_kernel.same_code_as";
/// Set on an op whose operands (for a convert: its input) were unsigned
/// (convert-kiln-graph-to-linalg; read by the scalar lowering).
inline constexpr llvm::StringLiteral kUnsignedAttr = "kiln_kernel.unsigned";

/// The target of the module enclosing `op` (its `kiln_kernel.target`), or
/// null when it has none.
TargetAttr getTarget(mlir::Operation *op);

/// The target of the module enclosing `op`; without one, an error at `op`
/// saying that `pass` needs it.
mlir::FailureOr<TargetAttr> requireTarget(mlir::Operation *op, llvm::StringRef pass);

} // namespace kiln::kernel

#endif
