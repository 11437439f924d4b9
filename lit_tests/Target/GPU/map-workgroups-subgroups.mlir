// Reductions whose combines are subgroup reductions combine their partials
// by subgroups; map-workgroups.mlir has the tree the others keep.
// RUN: kiln-opt %s -split-input-file \
// RUN:   --pass-pipeline='builtin.module(kiln-attach-target{target=vulkan},func.func(kiln-gpu-map-workgroups))' | FileCheck %s
// The same kernels through SPIR-V: subgroup reductions and the subgroup
// built-ins.
// RUN: kiln-opt %s -split-input-file \
// RUN:   --pass-pipeline='builtin.module(kiln-attach-target{target=vulkan},func.func(kiln-gpu-map-workgroups),canonicalize,kiln-spirv-form-kernels,gpu.module(lower-affine,math-expand-ops,arith-expand,canonicalize,cse),kiln-spirv-convert,spirv.module(spirv-lower-abi-attrs,kiln-spirv-push-constants,spirv-update-vce))' \
// RUN:   | FileCheck %s --check-prefix=SPIRV

// A sum into one element: each thread's partial reduced over its subgroup,
// the subgroup's first thread storing it at the subgroup's index; after a
// barrier the first subgroup folds the subgroups' results (each of its
// threads every S-th, S the subgroup size) and reduces them again, and its
// first thread folds the total into the accumulator. A barrier follows, so
// that a next reduction's partials cannot overwrite what it still reads.
// CHECK-LABEL: func.func @full_sum
// CHECK-SAME: ["a reduction into one element over the workgroup, by subgroups"]
// CHECK-DAG: %[[SHARED:.*]] = memref.alloc() : memref<128xf32, #gpu.address_space<workgroup>>
// CHECK: %[[PARTIAL:.*]] = scf.for {{.*}} -> (f32)
// CHECK: %[[LANE:.*]] = gpu.lane_id
// CHECK: %[[SUBGROUP:.*]] = gpu.subgroup_id : index
// CHECK: %[[FIRST_LANE:.*]] = arith.cmpi eq, %[[LANE]], %{{.*}} : index
// CHECK: %[[REDUCED:.*]] = gpu.subgroup_reduce add %[[PARTIAL]] : (f32) -> f32
// CHECK: scf.if %[[FIRST_LANE]] {
// CHECK:   memref.store %[[REDUCED]], %[[SHARED]][%[[SUBGROUP]]]
// CHECK: gpu.barrier
// CHECK: %[[FIRST_SUBGROUP:.*]] = arith.cmpi eq, %[[SUBGROUP]], %{{.*}} : index
// CHECK: scf.if %[[FIRST_SUBGROUP]] {
// CHECK:   %[[COUNT:.*]] = gpu.num_subgroups : index
// CHECK:   %[[SIZE:.*]] = gpu.subgroup_size : index
// CHECK:   %[[FOLDED:.*]] = scf.for %[[I:.*]] = %[[LANE]] to %[[COUNT]] step %[[SIZE]] iter_args(%[[F:.*]] = %{{.*}}) -> (f32)
// CHECK:     %[[THEIRS:.*]] = memref.load %[[SHARED]][%[[I]]]
// CHECK:     arith.addf %[[F]], %[[THEIRS]] fastmath<reassoc>
// CHECK:   %[[TOTAL:.*]] = gpu.subgroup_reduce add %[[FOLDED]] : (f32) -> f32
// CHECK:   scf.if %[[FIRST_LANE]] {
// CHECK:     %[[OLD:.*]] = memref.load %{{.*}}[] : memref<f32>
// CHECK:     %[[NEW:.*]] = arith.addf %[[OLD]], %[[TOTAL]] fastmath<reassoc>
// CHECK:     memref.store %[[NEW]], %{{.*}}[] : memref<f32>
// CHECK: gpu.barrier
// CHECK-NOT: gpu.subgroup_reduce
// SPIRV-LABEL: spirv.module
// SPIRV-DAG: built_in("SubgroupId")
// SPIRV-DAG: built_in("NumSubgroups")
// SPIRV-DAG: built_in("SubgroupSize")
// SPIRV-DAG: built_in("SubgroupLocalInvocationId")
// SPIRV: spirv.func @full_sum
// SPIRV-COUNT-2: spirv.GroupNonUniformFAdd <Subgroup> <Reduce>
func.func @full_sum(%id: index, %count: index, %in: memref<1000xf32>, %out: memref<f32>)
    attributes {kiln_kernel.kernel = "full_sum", kiln_kernel.workgroup_extent = 0 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c1000 = arith.constant 1000 : index
  scf.for %i = %c0 to %c1000 step %c1 {
    %x = memref.load %in[%i] : memref<1000xf32>
    %acc = memref.load %out[] : memref<f32>
    %s = arith.addf %acc, %x fastmath<reassoc> : f32
    memref.store %s, %out[] : memref<f32>
  }
  return
}

// -----

// A row max (maximumf): SPIR-V's FMax leaves NaN undefined, so a row with a
// NaN is NaN by a count of NaN partials reduced alongside. The rows run one
// after another, each ending with the barrier that guards the partials.
// CHECK-LABEL: func.func @row_max
// CHECK-SAME: ["row reductions over the workgroup, by subgroups"]
// CHECK: scf.for
// CHECK: %[[PARTIAL:.*]] = scf.for {{.*}} -> (f32)
// CHECK: %[[MAX:.*]] = gpu.subgroup_reduce maximumf %[[PARTIAL]] : (f32) -> f32
// CHECK: %[[IS_NAN:.*]] = arith.cmpf uno, %[[PARTIAL]], %[[PARTIAL]] : f32
// CHECK: %[[WIDE:.*]] = arith.extui %[[IS_NAN]] : i1 to i32
// CHECK: %[[NANS:.*]] = gpu.subgroup_reduce add %[[WIDE]] : (i32) -> i32
// CHECK: %[[ANY:.*]] = arith.cmpi ne, %[[NANS]], %{{.*}} : i32
// CHECK: arith.select %[[ANY]], %{{.*}}, %[[MAX]] : f32
// CHECK: gpu.barrier
// CHECK: gpu.subgroup_reduce maximumf
// CHECK: gpu.barrier
// CHECK-NEXT: }
// SPIRV: spirv.func @row_max
// SPIRV: spirv.GroupNonUniformFMax <Subgroup> <Reduce>
// SPIRV: spirv.GroupNonUniformIAdd <Subgroup> <Reduce>
func.func @row_max(%id: index, %count: index, %in: memref<4x5000xf32>, %out: memref<4xf32>)
    attributes {kiln_kernel.kernel = "row_max", kiln_kernel.workgroup_extent = 4 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c5000 = arith.constant 5000 : index
  scf.parallel (%r) = (%c0) to (%c4) step (%c1) {
    scf.for %i = %c0 to %c5000 step %c1 {
      %x = memref.load %in[%r, %i] : memref<4x5000xf32>
      %acc = memref.load %out[%r] : memref<4xf32>
      %m = arith.maximumf %acc, %x : f32
      memref.store %m, %out[%r] : memref<4xf32>
    }
    scf.reduce
  }
  return
}

// -----

// A boolean all: the partials widen to 32 bits and reduce by unsigned min
// (MLIR has no SPIR-V form of a bitwise subgroup reduction).
// CHECK-LABEL: func.func @all_true
// CHECK-SAME: ["a reduction into one element over the workgroup, by subgroups"]
// CHECK: %[[MINE:.*]] = scf.for {{.*}} -> (i1)
// CHECK: %[[WIDE:.*]] = arith.extui %[[MINE]] : i1 to i32
// CHECK: %[[ALL:.*]] = gpu.subgroup_reduce minui %[[WIDE]] : (i32) -> i32
// CHECK: arith.trunci %[[ALL]] : i32 to i1
// SPIRV: spirv.func @all_true
// SPIRV: spirv.GroupNonUniformUMin <Subgroup> <Reduce>
func.func @all_true(%id: index, %count: index, %in: memref<100000xi1>, %out: memref<i1>)
    attributes {kiln_kernel.kernel = "all_true"} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant 100000 : index
  scf.for %i = %c0 to %n step %c1 {
    %x = memref.load %in[%i] : memref<100000xi1>
    %acc = memref.load %out[] : memref<i1>
    %r = arith.andi %acc, %x : i1
    memref.store %r, %out[] : memref<i1>
  }
  return
}

// -----

// 64-bit sums (every integer sum from PyTorch) keep the tree: subgroup
// reductions of other widths than 32 bits need shaderSubgroupExtendedTypes.
// CHECK-LABEL: func.func @wide_sum
// CHECK-SAME: ["a reduction into one element over the workgroup"]
// CHECK-NOT: gpu.subgroup_reduce
// CHECK: return
func.func @wide_sum(%id: index, %count: index, %in: memref<100000xi64>, %out: memref<i64>)
    attributes {kiln_kernel.kernel = "wide_sum"} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant 100000 : index
  scf.for %i = %c0 to %n step %c1 {
    %x = memref.load %in[%i] : memref<100000xi64>
    %acc = memref.load %out[] : memref<i64>
    %r = arith.addi %acc, %x : i64
    memref.store %r, %out[] : memref<i64>
  }
  return
}

// -----

// A bitwise or of 32-bit integers keeps the tree too.
// CHECK-LABEL: func.func @bits_or
// CHECK-SAME: ["a reduction into one element over the workgroup"]
// CHECK-NOT: gpu.subgroup_reduce
// CHECK: return
func.func @bits_or(%id: index, %count: index, %in: memref<100000xi32>, %out: memref<i32>)
    attributes {kiln_kernel.kernel = "bits_or"} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant 100000 : index
  scf.for %i = %c0 to %n step %c1 {
    %x = memref.load %in[%i] : memref<100000xi32>
    %acc = memref.load %out[] : memref<i32>
    %r = arith.ori %acc, %x : i32
    memref.store %r, %out[] : memref<i32>
  }
  return
}
