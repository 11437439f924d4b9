// Selections (an argmax's value and index: every accumulator stores
// select(c, candidate, accumulator) under one condition) have no identity
// to reorder, so the threads take chunks of consecutive iterations and
// merge them in thread order, keeping the iteration the loop keeps.
// RUN: kiln-opt %s -split-input-file \
// RUN:   --pass-pipeline='builtin.module(kiln-attach-target{target=vulkan},func.func(kiln-gpu-map-workgroups))' | FileCheck %s
// The same kernels through SPIR-V.
// RUN: kiln-opt %s -split-input-file \
// RUN:   --pass-pipeline='builtin.module(kiln-attach-target{target=vulkan},func.func(kiln-gpu-map-workgroups),canonicalize,kiln-spirv-form-kernels,gpu.module(lower-affine,math-expand-ops,arith-expand,canonicalize,cse),kiln-spirv-convert,spirv.module(spirv-lower-abi-attrs,kiln-spirv-push-constants,spirv-update-vce))' \
// RUN:   | FileCheck %s --check-prefix=SPIRV

// An argmax into one element (the first maximum; NaN counts as the
// largest). Thread t folds the t-th chunk of ceil(1000 / 128) iterations,
// taking the first iteration's candidates as they are ("has chosen" false)
// and selecting after. The partials and flags meet in workgroup memory;
// in rounds s = 1, 2, 4, ..., 64 a thread that is a multiple of 2s merges
// in thread t + s's partials by the loop's own condition, cloned, with
// theirs as the candidates. Thread 0 then offers the workgroup's choice to
// the accumulators.
// CHECK-LABEL: func.func @argmax
// CHECK-SAME: ["a reduction into one element over the workgroup, a chunk per thread in order"]
// CHECK-DAG: %[[VALUES:.*]] = memref.alloc() : memref<128xf32, #gpu.address_space<workgroup>>
// CHECK-DAG: %[[INDICES:.*]] = memref.alloc() : memref<128xi64, #gpu.address_space<workgroup>>
// CHECK-DAG: %[[CHOSEN:.*]] = memref.alloc() : memref<128xi32, #gpu.address_space<workgroup>>
// CHECK: %[[CHUNK:.*]] = arith.divui
// CHECK: %[[FIRST:.*]] = arith.muli %[[THREAD:.*]], %[[CHUNK]] : index
// CHECK: %[[END:.*]] = arith.addi %[[FIRST]], %[[CHUNK]] : index
// CHECK: arith.minui %[[END]]
// CHECK: %[[SHARE:.*]]:3 = scf.for {{.*}} iter_args(%[[V:[a-z0-9_]+]] = %{{.*}}, %[[I:[a-z0-9_]+]] = %{{.*}}, %[[HAS:[a-z0-9_]+]] = %false{{.*}}) -> (f32, i64, i1)
// CHECK:   %[[X:.*]] = memref.load %{{.*}} : memref<1000xf32>
// CHECK:   %[[PICK:.*]] = arith.select %{{.*}}, %[[X]], %[[V]] : f32
// CHECK:   %[[PICK_I:.*]] = arith.select %{{.*}}, %{{.*}}, %[[I]] : i64
// CHECK:   %[[NEW_V:.*]] = arith.select %[[HAS]], %[[PICK]], %[[X]] : f32
// CHECK:   %[[NEW_I:.*]] = arith.select %[[HAS]], %[[PICK_I]], %{{.*}} : i64
// CHECK:   scf.yield %[[NEW_V]], %[[NEW_I]], %true
// CHECK: memref.store %[[SHARE]]#0, %[[VALUES]][%[[THREAD]]]
// CHECK: memref.store %[[SHARE]]#1, %[[INDICES]][%[[THREAD]]]
// CHECK: arith.extui %[[SHARE]]#2 : i1 to i32
// CHECK: gpu.barrier
// The first round: even threads merge in the next one's chunk.
// CHECK: %[[MASK:.*]] = arith.constant 1 : index
// CHECK: %[[NEXT:.*]] = arith.addi %[[THREAD]], %{{.*}} : index
// CHECK: arith.andi %[[THREAD]], %[[MASK]] : index
// CHECK: scf.if
// CHECK:   memref.load %[[VALUES]][%[[THREAD]]]
// CHECK:   memref.load %[[VALUES]][%[[NEXT]]]
// CHECK:   arith.cmpf ogt
// CHECK:   arith.ori
// CHECK: gpu.barrier
// CHECK-COUNT-6: gpu.barrier
// CHECK: scf.if
// CHECK:   %[[ANY:.*]] = arith.trunci %{{.*}} : i32 to i1
// CHECK:   scf.if %[[ANY]] {
// CHECK:     memref.load %{{.*}}[] : memref<f32>
// CHECK:     memref.load %{{.*}}[] : memref<i64>
// CHECK:     arith.cmpf ogt
// CHECK:     memref.store {{.*}} : memref<f32>
// CHECK:     memref.store {{.*}} : memref<i64>
// The barrier after every top-level op.
// CHECK: gpu.barrier
// CHECK-NEXT: return
// SPIRV-LABEL: spirv.module
// SPIRV: spirv.func @argmax
// SPIRV-COUNT-7: spirv.ControlBarrier
// SPIRV-NOT: spirv.GroupNonUniform
func.func @argmax(%id: index, %count: index, %in: memref<1000xf32>, %value: memref<f32>,
                  %index: memref<i64>)
    attributes {kiln_kernel.kernel = "argmax", kiln_kernel.workgroup_extent = 0 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c1000 = arith.constant 1000 : index
  %true = arith.constant true
  %false = arith.constant false
  scf.for %i = %c0 to %c1000 step %c1 {
    %x = memref.load %in[%i] : memref<1000xf32>
    %v = memref.load %value[] : memref<f32>
    %k = memref.load %index[] : memref<i64>
    %i64 = arith.index_cast %i : index to i64
    %earlier = arith.cmpi slt, %i64, %k : i64
    %greater = arith.cmpf ogt, %x, %v : f32
    %equal = arith.cmpf oeq, %x, %v : f32
    %tie = arith.andi %equal, %earlier : i1
    %better = arith.ori %greater, %tie : i1
    %x_nan = arith.cmpf uno, %x, %x : f32
    %v_nan = arith.cmpf uno, %v, %v : f32
    %number = arith.select %v_nan, %false, %better : i1
    %nan = arith.select %v_nan, %earlier, %true : i1
    %take = arith.select %x_nan, %nan, %number : i1
    %new_v = arith.select %take, %x, %v : f32
    %new_k = arith.select %take, %i64, %k : i64
    memref.store %new_v, %value[] : memref<f32>
    memref.store %new_k, %index[] : memref<i64>
  }
  return
}

// -----

// A row argmax over few long rows: each row as above, the rows one after
// another.
// CHECK-LABEL: func.func @row_argmax
// CHECK-SAME: ["row reductions over the workgroup, a chunk per thread in order"]
// CHECK: scf.for
// CHECK: scf.for {{.*}} -> (f32, i64, i1)
// CHECK-COUNT-8: gpu.barrier
func.func @row_argmax(%id: index, %count: index, %in: memref<2x5000xf32>, %value: memref<2xf32>,
                      %index: memref<2xi64>)
    attributes {kiln_kernel.kernel = "row_argmax", kiln_kernel.workgroup_extent = 2 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c5000 = arith.constant 5000 : index
  scf.parallel (%r) = (%c0) to (%c2) step (%c1) {
    scf.for %i = %c0 to %c5000 step %c1 {
      %x = memref.load %in[%r, %i] : memref<2x5000xf32>
      %v = memref.load %value[%r] : memref<2xf32>
      %k = memref.load %index[%r] : memref<2xi64>
      %i64 = arith.index_cast %i : index to i64
      %greater = arith.cmpf ogt, %x, %v : f32
      %new_v = arith.select %greater, %x, %v : f32
      %new_k = arith.select %greater, %i64, %k : i64
      memref.store %new_v, %value[%r] : memref<2xf32>
      memref.store %new_k, %index[%r] : memref<2xi64>
    }
    scf.reduce
  }
  return
}

// -----

// A condition that reads the induction variable itself, not a candidate,
// cannot be evaluated on merged partials: the loop stays with thread 0.
// CHECK-LABEL: func.func @condition_from_the_loop
// CHECK-SAME: ["thread 0 alone (writes that may meet, or a sequential loop)"]
// CHECK-NOT: iter_args
func.func @condition_from_the_loop(%id: index, %count: index, %in: memref<1000xf32>,
                                   %value: memref<f32>)
    attributes {kiln_kernel.kernel = "condition_from_the_loop", kiln_kernel.workgroup_extent = 0 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c1000 = arith.constant 1000 : index
  %c500 = arith.constant 500 : index
  scf.for %i = %c0 to %c1000 step %c1 {
    %x = memref.load %in[%i] : memref<1000xf32>
    %v = memref.load %value[] : memref<f32>
    %late = arith.cmpi sgt, %i, %c500 : index
    %new_v = arith.select %late, %x, %v : f32
    memref.store %new_v, %value[] : memref<f32>
  }
  return
}

// -----

// A candidate computed from an accumulator is no selection either.
// CHECK-LABEL: func.func @candidate_from_the_accumulator
// CHECK-SAME: ["thread 0 alone (writes that may meet, or a sequential loop)"]
func.func @candidate_from_the_accumulator(%id: index, %count: index, %in: memref<1000xf32>,
                                          %value: memref<f32>)
    attributes {kiln_kernel.kernel = "candidate_from_the_accumulator", kiln_kernel.workgroup_extent = 0 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c1000 = arith.constant 1000 : index
  scf.for %i = %c0 to %c1000 step %c1 {
    %x = memref.load %in[%i] : memref<1000xf32>
    %v = memref.load %value[] : memref<f32>
    %sum = arith.addf %x, %v : f32
    %greater = arith.cmpf ogt, %x, %v : f32
    %new_v = arith.select %greater, %sum, %v : f32
    memref.store %new_v, %value[] : memref<f32>
  }
  return
}
