// REQUIRES: ptxas
// Matmuls of bfloat16 and float16 operands run on tensor cores: the
// operands stay half precision into the matmul kernel (no convert kernels
// before it), each warp multiplies by mma.sync m16n8k16 with float32
// accumulators, and ptxas assembles it without stack or spills.
// RUN: rm -rf %t && kiln-compile --target cuda:sm_90 --dump-dir %t %S/Inputs/bf16_mm_relu.json -o %t.kiln | FileCheck %s --check-prefix=BF16
// RUN: FileCheck %s --check-prefix=BF16-PTX < %t/kernels/kernel_0_matmul.ptx
// RUN: FileCheck %s --check-prefix=PTXAS < %t/kernels/kernel_0_matmul.ptxas.txt
// RUN: FileCheck %s --check-prefix=STRATEGY < %t/05-gpu.mlir
// RUN: rm -rf %t.h && kiln-compile --target cuda:sm_80 --dump-dir %t.h %S/Inputs/f16_linear_gelu.json -o %t.h.kiln
// RUN: FileCheck %s --check-prefix=F16-PTX < %t.h/kernels/kernel_0_matmul.ptx
// RUN: FileCheck %s --check-prefix=PTXAS < %t.h/kernels/kernel_0_matmul.ptxas.txt
// Float32 matmuls keep the threads' tiles unless the graph allows TF32
// (torch.set_float32_matmul_precision("high") when it was captured); then
// m16n8k8 in TF32. Another precision name is an import error.
// RUN: rm -rf %t.f && kiln-compile --target cuda:sm_90 --dump-dir %t.f %S/../Vulkan/Inputs/mlp.json -o %t.f.kiln
// RUN: FileCheck %s --check-prefix=F32-PTX < %t.f/kernels/kernel_0_matmul.ptx
// RUN: rm -rf %t.t && kiln-compile --target cuda:sm_90 --dump-dir %t.t %S/Inputs/mlp_tf32.json -o %t.t.kiln
// RUN: FileCheck %s --check-prefix=TF32-PTX < %t.t/kernels/kernel_0_matmul.ptx
// RUN: FileCheck %s --check-prefix=PTXAS < %t.t/kernels/kernel_0_matmul.ptxas.txt
// RUN: not kiln-compile --target cuda:sm_90 %S/Inputs/mlp_bad_precision.json -o %t.x.kiln 2>&1 | FileCheck %s --check-prefix=BAD-PRECISION

// BF16: 1 kernels
// BF16: kernel_0_matmul [1 workgroups]: matmul convert convert relu convert

// Two mma k-steps per stage, 2 x 4 tiles of 16 x 8 per warp each.
// BF16-PTX-COUNT-16: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// BF16-PTX-NOT: mma.sync
// BF16-PTX-NOT: .local

// PTXAS: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads

// STRATEGY: matmul tiles 128x64x32 on tensor cores (mma m16n8k16 per warp)

// F16-PTX: .target sm_80
// F16-PTX-COUNT-16: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32

// F32-PTX-NOT: mma.sync

// TF32-PTX-COUNT-16: mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32

// BAD-PRECISION: float32_matmul_precision must be highest, high or medium (as torch.set_float32_matmul_precision), not 'low'
