// REQUIRES: rocm-device-libs
// RUN: rm -rf %t && kiln-compile --target rocm:gfx942 --dump-dir %t %S/../Vulkan/Inputs/mlp.json -o %t.kiln | FileCheck %s
// RUN: FileCheck %s --check-prefix=ISA < %t/kernels/kernel_0_matmul.amdgcn.s
// RUN: llvm-objdump -d --mcpu=gfx942 %t/kernels/kernel_0_matmul.hsaco | FileCheck %s --check-prefix=OBJDUMP
// RUN: rm -rf %t.r && kiln-compile --target rocm:gfx1100 --dump-dir %t.r %S/../Vulkan/Inputs/mlp.json -o %t.r.kiln
// RUN: FileCheck %s --check-prefix=RDNA < %t.r/kernels/kernel_0_matmul.amdgcn.s
// RUN: not kiln-compile --target rocm:gfx90a %S/../Vulkan/Inputs/mlp.json -o %t.x.kiln 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: env KILN_ROCM_PATH=%t.missing not kiln-compile --target rocm:gfx942 %S/../Vulkan/Inputs/mlp.json -o %t.x.kiln 2>&1 | FileCheck %s --check-prefix=TOOLKIT

// The MLP graph for an MI300: a code object per kernel, linked by ld.lld.
// CHECK: (rocm-gfx942 gfx942,

// The matmul's tiles in LDS, barriers between the steps, no scratch or
// spills; waves of 64.
// ISA: .amdgcn_target "amdgcn-amd-amdhsa--gfx942"
// ISA: s_barrier
// ISA: .amdhsa_group_segment_fixed_size {{[1-9][0-9]*}}
// ISA: .amdhsa_private_segment_fixed_size 0
// ISA: .sgpr_spill_count: 0
// ISA: .vgpr_spill_count: 0
// ISA: .wavefront_size: 64

// The code object itself, disassembled: the kernel's entry, its tiles
// written to and read from LDS, a barrier between, the end of the program.
// OBJDUMP: file format elf64-amdgpu
// OBJDUMP: <kernel_0_matmul>:
// OBJDUMP: ds_write
// OBJDUMP: s_barrier
// OBJDUMP: ds_read
// OBJDUMP: s_endpgm

// RDNA3 runs waves of 32.
// RDNA: .amdgcn_target "amdgcn-amd-amdhsa--gfx1100"
// RDNA: .wavefront_size: 32

// UNKNOWN: unknown ROCm target 'rocm:gfx90a': use 'rocm:gfx942' or 'rocm:gfx1100'
// TOOLKIT: KILN_ROCM_PATH is '{{.*}}.missing', which lacks llvm/bin/ld.lld or amdgcn/bitcode
