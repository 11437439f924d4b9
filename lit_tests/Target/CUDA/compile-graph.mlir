// REQUIRES: ptxas
// RUN: rm -rf %t && kiln-compile --target cuda:sm_90 --dump-dir %t %S/../Vulkan/Inputs/mlp.json -o %t.kiln | FileCheck %s
// RUN: FileCheck %s --check-prefix=PTX < %t/kernels/kernel_0_matmul.ptx
// RUN: FileCheck %s --check-prefix=PTXAS < %t/kernels/kernel_0_matmul.ptxas.txt
// RUN: FileCheck %s --check-prefix=SHUFFLES < %t/kernels/kernel_0_matmul.ptx
// RUN: ptxas -arch=sm_90 %t/kernels/kernel_0_matmul.ptx -o %t.cubin
// RUN: rm -rf %t.a && kiln-compile --target cuda:sm_90a --dump-dir %t.a %S/../Vulkan/Inputs/mlp.json -o %t.a.kiln
// RUN: FileCheck %s --check-prefix=SM90A < %t.a/kernels/kernel_0_matmul.ptx
// RUN: not kiln-compile --target cuda:sm_70 %S/../Vulkan/Inputs/mlp.json -o %t.x.kiln 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: env KILN_CUDA_DRIVER=%t.none not kiln-compile --target cuda %S/../Vulkan/Inputs/mlp.json -o %t.x.kiln 2>&1 | FileCheck %s --check-prefix=NO-GPU
// RUN: env KILN_CUDA_DRIVER=%fake_libcuda kiln-compile --target cuda %S/../Vulkan/Inputs/mlp.json -o %t.here.kiln | FileCheck %s --check-prefix=HERE
// RUN: env KILN_CUDA_PATH=%t.missing not kiln-compile --target cuda:sm_90 %S/../Vulkan/Inputs/mlp.json -o %t.x.kiln 2>&1 | FileCheck %s --check-prefix=TOOLKIT

// The MLP graph for an H100/H200: PTX per kernel, assembled by ptxas into
// a cubin, both in the kernel's fatbin.
// CHECK: (cuda-sm_90 sm_90,

// PTX: .version 8.0
// PTX: .target sm_90
// PTX: .visible .entry kernel_0_matmul(
// PTX: .maxntid
// PTX-NOT: .extern .func
// PTX-NOT: .local

// ptxas's report: no stack, no spills.
// PTXAS: Compiling entry function 'kernel_0_matmul' for 'sm_90'
// PTXAS: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads

// The layer norm's and softmax's row reductions combine within warps by
// shuffles, then across them in shared memory.
// SHUFFLES: shfl.sync.bfly.b32

// SM90A: .target sm_90a

// UNKNOWN: unknown CUDA target 'cuda:sm_70': use 'cuda:sm_80', 'cuda:sm_90' or 'cuda:sm_90a'
// NO-GPU: target 'cuda' compiles for the GPU found here, and there is none (no CUDA driver: cannot load {{.*}}.none
// NO-GPU-SAME: name the chip to compile for: 'cuda:sm_80', 'cuda:sm_90' or 'cuda:sm_90a'

// Target "cuda" on the fake driver's GPU of compute capability 9.0.
// HERE: (cuda-sm_90a sm_90a,
// TOOLKIT: KILN_CUDA_PATH is '{{.*}}.missing', which is not a CUDA toolkit: it lacks {{.*}}bin/ptxas
