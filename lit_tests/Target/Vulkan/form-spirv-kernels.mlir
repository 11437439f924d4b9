// RUN: kiln-opt %s -split-input-file --pass-pipeline='builtin.module(kiln-attach-target{target=vulkan},kiln-spirv-form-kernels)' | FileCheck %s
// RUN: kiln-opt %s -split-input-file --pass-pipeline='builtin.module(kiln-attach-target{target=vulkan},kiln-spirv-form-kernels,gpu.module(lower-affine,math-expand-ops,arith-expand,canonicalize,cse),kiln-spirv-convert,spirv.module(spirv-lower-abi-attrs,kiln-spirv-push-constants,spirv-update-vce))' \
// RUN:   | FileCheck %s --check-prefix=SPIRV

// A mapped kernel (as kiln-gpu-map-workgroups leaves it) becomes the one
// gpu.func of its gpu.module: bindings as flat storage buffers, the
// runtime's status buffer, then one push-constant array holding each
// binding's byte offset, the size symbol and the launch's status slot;
// every access is on a flat buffer at its linear index. Each loop also
// carries its next induction value: one that stopped below its bound (a
// device cut it short) writes 1 to the status slot.
// CHECK: module attributes {gpu.container_module
// CHECK: gpu.module @k attributes {spirv.target_env = #spirv.target_env<#spirv.vce<v1.3, [Shader, Int64,
// CHECK: gpu.func @k(%[[IN:.*]]: memref<?xf32>, %[[OUT:.*]]: memref<?xf32>, %[[STATUS:.*]]: memref<?xi32>, %[[PC:.*]]: memref<4xi32, #spirv.storage_class<PushConstant>>) kernel
// CHECK-SAME: known_block_size = array<i32: 128, 1, 1>
// CHECK-SAME: spirv.entry_point_abi = #spirv.entry_point_abi<workgroup_size = [128, 1, 1]>
// CHECK-DAG: %[[SLOTWORD:.*]] = memref.load %[[PC]][%c3{{.*}}]
// CHECK-DAG: %[[SLOT:.*]] = arith.index_castui %[[SLOTWORD]]
// CHECK-DAG: %[[CUT:.*]] = arith.constant 1 : i32
// CHECK-DAG: memref.load %[[PC]][%c2{{.*}}]
// CHECK-DAG: %[[INOFF:.*]] = arith.divui %{{.*}}, %c4
// CHECK: %[[NEXT:.*]] = scf.for %[[IV:.*]] = %[[LB:.*]] to %[[UB:.*]] step %[[STEP:.*]] iter_args(%{{.*}} = %[[LB]]) -> (index)
// CHECK:   memref.load %[[IN]][%{{.*}}] : memref<?xf32>
// CHECK:   memref.store %{{.*}}, %[[OUT]][%{{.*}}] : memref<?xf32>
// CHECK:   %[[INC:.*]] = arith.addi %[[IV]], %[[STEP]]
// CHECK:   scf.yield %[[INC]]
// CHECK: %[[RAN:.*]] = arith.cmpi slt, %[[LB]], %[[UB]]
// CHECK: %[[SHORT:.*]] = arith.cmpi slt, %[[NEXT]], %[[UB]]
// CHECK: %[[BOTH:.*]] = arith.andi %[[RAN]], %[[SHORT]]
// CHECK: scf.if %[[BOTH]] {
// CHECK:   memref.store %[[CUT]], %[[STATUS]][%[[SLOT]]] : memref<?xi32>
// CHECK: gpu.return
// CHECK-NOT: memref.reinterpret_cast

// The push-constant block has no descriptor binding (Vulkan forbids one).
// SPIRV: spirv.GlobalVariable @k_arg_0 bind(0, 0) : !spirv.ptr<!spirv.struct<(!spirv.rtarray<f32, stride=4> [0])>, StorageBuffer>
// SPIRV: spirv.GlobalVariable @k_arg_1 bind(0, 1)
// SPIRV: spirv.GlobalVariable @k_arg_2 bind(0, 2) : !spirv.ptr<!spirv.struct<(!spirv.rtarray<i32, stride=4> [0])>, StorageBuffer>
// SPIRV: spirv.GlobalVariable @k_arg_3 : !spirv.ptr<!spirv.struct<(!spirv.array<4 x i32, stride=4> [0])>, PushConstant>
// SPIRV: spirv.EntryPoint "GLCompute" @k
// SPIRV: spirv.ExecutionMode @k "LocalSize", 128, 1, 1
func.func @k(%id: index, %count: index, %in: memref<1xf32>, %out: memref<1xf32>, %n: index)
    attributes {kiln_kernel.kernel = "k", kiln_kernel.num_symbols = 1 : i64,
                kiln_kernel.workgroup_size = array<i64: 128, 1, 1>} {
  %t = gpu.thread_id x
  %c128 = arith.constant 128 : index
  %a = memref.reinterpret_cast %in to offset: [0], sizes: [%n, 4], strides: [4, 1] : memref<1xf32> to memref<?x4xf32>
  %b = memref.reinterpret_cast %out to offset: [0], sizes: [%n, 4], strides: [4, 1] : memref<1xf32> to memref<?x4xf32>
  %e = memref.expand_shape %b [[0], [1, 2]] output_shape [%n, 2, 2] : memref<?x4xf32> into memref<?x2x2xf32>
  %c4 = arith.constant 4 : index
  %c2 = arith.constant 2 : index
  %total = arith.muli %n, %c4 : index
  scf.for %l = %t to %total step %c128 {
    %i = arith.divui %l, %c4 : index
    %j = arith.remui %l, %c4 : index
    %j0 = arith.divui %j, %c2 : index
    %j1 = arith.remui %j, %c2 : index
    %x = memref.load %a[%i, %j] : memref<?x4xf32>
    %y = math.exp %x : f32
    memref.store %y, %e[%i, %j0, %j1] : memref<?x2x2xf32>
  }
  gpu.barrier
  return
}

// -----

// Views with symbolic sizes: a size asked of a collapsed view is the product
// of its source's sizes, and what the alias folding asks of a view
// (extract_strided_metadata) is answered from where the kernel made it.
// CHECK-LABEL: gpu.func @collapsed
// CHECK-NOT: memref.collapse_shape
// CHECK-NOT: memref.extract_strided_metadata
// CHECK-NOT: memref.dim
// CHECK: memref.load %{{.*}}[%{{.*}}] : memref<?xf32>
func.func @collapsed(%id: index, %count: index, %in: memref<1xf32>, %out: memref<1xf32>, %n: index)
    attributes {kiln_kernel.kernel = "collapsed", kiln_kernel.num_symbols = 1 : i64,
                kiln_kernel.workgroup_size = array<i64: 64, 1, 1>} {
  %t = gpu.thread_id x
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %s = arith.muli %n, %c16 : index
  %a = memref.reinterpret_cast %in to offset: [0], sizes: [%n, 2, %n, 8], strides: [%s, %n, 8, 1] : memref<1xf32> to memref<?x2x?x8xf32>
  %c = memref.collapse_shape %a [[0, 1], [2], [3]] : memref<?x2x?x8xf32> into memref<?x?x8xf32>
  %rows = memref.dim %c, %c0 : memref<?x?x8xf32>
  %o = memref.reinterpret_cast %out to offset: [0], sizes: [%rows], strides: [1] : memref<1xf32> to memref<?xf32>
  scf.for %i = %t to %rows step %c16 {
    %x = memref.load %c[%i, %c1, %c1] : memref<?x?x8xf32>
    memref.store %x, %o[%i] : memref<?xf32>
  }
  return
}

// -----

// An atomic on a reinterpretation of a binding goes onto the flat binding
// at its linear index (its offset in elements plus the position), as loads
// and stores do; the SPIR-V module declares what the atomic needs.
// CHECK-LABEL: gpu.func @atomic
// CHECK: %[[OFFSET:.*]] = arith.divui
// CHECK: %[[T:.*]] = gpu.thread_id x
// CHECK: %[[BASE:.*]] = arith.addi %[[OFFSET]], %{{.*}} : index
// CHECK: %[[STEP:.*]] = arith.muli %[[T]], %{{.*}} : index
// CHECK: %[[AT:.*]] = arith.addi %[[BASE]], %[[STEP]] : index
// CHECK: memref.atomic_rmw addf %{{.*}}, %{{.*}}[%[[AT]]] : (f32, memref<?xf32>) -> f32
// SPIRV-LABEL: spirv.module @__spv__atomic
// SPIRV-SAME: AtomicFloat32AddEXT
// SPIRV-SAME: SPV_EXT_shader_atomic_float_add
// SPIRV: spirv.EXT.AtomicFAdd
func.func @atomic(%id: index, %count: index, %scratch: memref<1xf32>)
    attributes {kiln_kernel.kernel = "atomic", kiln_kernel.workgroup_size = array<i64: 128, 1, 1>} {
  %t = gpu.thread_id x
  %x = arith.constant 1.0 : f32
  %view = memref.reinterpret_cast %scratch to offset: [0], sizes: [13], strides: [1] : memref<1xf32> to memref<13xf32>
  %0 = memref.atomic_rmw addf %x, %view[%t] : (f32, memref<13xf32>) -> f32
  return
}

// -----

// Vector accesses (kiln-gpu-map-workgroups' groups of 4) go through a
// second view of their binding, a vec4 array bound to the same descriptor
// (every argument then names its binding: the lowering takes all or none),
// at the linear index over 4; a view's address, the mapping's alignment
// test, is its byte offset in the binding (the push-constant word plus the
// view's own offset).
// CHECK-LABEL: gpu.func @vectors
// CHECK-SAME: (%[[IN:[^:]*]]: memref<?xf32> {spirv.interface_var_abi = #spirv.interface_var_abi<(0, 0)>},
// CHECK-SAME: %{{[^:]*}}: memref<?xf32> {spirv.interface_var_abi = #spirv.interface_var_abi<(0, 1)>},
// CHECK-SAME: %{{[^:]*}}: memref<?xi32> {spirv.interface_var_abi = #spirv.interface_var_abi<(0, 2)>},
// CHECK-SAME: %{{[^:]*}}: memref<3xi32, #spirv.storage_class<PushConstant>> {spirv.interface_var_abi = #spirv.interface_var_abi<(0, 3)>},
// CHECK-SAME: %[[IN4:[^:]*]]: memref<?xvector<4xf32>> {spirv.interface_var_abi = #spirv.interface_var_abi<(0, 0)>},
// CHECK-SAME: %[[OUT4:[^:]*]]: memref<?xvector<4xf32>> {spirv.interface_var_abi = #spirv.interface_var_abi<(0, 1)>})
// CHECK-NOT: extract_aligned_pointer_as_index
// CHECK: scf.if
// CHECK:   %[[X:.*]] = memref.load %[[IN4]][%{{.*}}] : memref<?xvector<4xf32>>
// CHECK:   memref.store %{{.*}}, %[[OUT4]][%{{.*}}] : memref<?xvector<4xf32>>
// CHECK: } else {
// CHECK:   memref.load %[[IN]][%{{.*}}] : memref<?xf32>

// SPIRV-LABEL: spirv.module
// SPIRV-DAG: spirv.GlobalVariable @vectors_arg_0 bind(0, 0) : !spirv.ptr<!spirv.struct<(!spirv.rtarray<f32, stride=4> [0])>, StorageBuffer>
// SPIRV-DAG: spirv.GlobalVariable @vectors_arg_4 bind(0, 0) : !spirv.ptr<!spirv.struct<(!spirv.rtarray<vector<4xf32>, stride=16> [0])>, StorageBuffer>
// SPIRV-DAG: spirv.GlobalVariable @vectors_arg_5 bind(0, 1) : !spirv.ptr<!spirv.struct<(!spirv.rtarray<vector<4xf32>, stride=16> [0])>, StorageBuffer>
// SPIRV: spirv.CompositeExtract
func.func @vectors(%id: index, %count: index, %in: memref<8x4xf32>, %out: memref<8x4xf32>)
    attributes {kiln_kernel.kernel = "vectors",
                kiln_kernel.workgroup_size = array<i64: 128, 1, 1>} {
  %t = gpu.thread_id x
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %c128 = arith.constant 128 : index
  %row = memref.subview %in[1, 0] [7, 4] [1, 1] : memref<8x4xf32> to memref<7x4xf32, strided<[4, 1], offset: 4>>
  %pin = memref.extract_aligned_pointer_as_index %in : memref<8x4xf32> -> index
  %pout = memref.extract_aligned_pointer_as_index %out : memref<8x4xf32> -> index
  %rin = arith.remui %pin, %c16 : index
  %rout = arith.remui %pout, %c16 : index
  %ain = arith.cmpi eq, %rin, %c0 : index
  %aout = arith.cmpi eq, %rout, %c0 : index
  %aligned = arith.andi %ain, %aout : i1
  scf.if %aligned {
    scf.for %g = %t to %c8 step %c128 {
      %i = arith.minui %g, %c8 : index
      %x = vector.load %row[%c0, %c0] : memref<7x4xf32, strided<[4, 1], offset: 4>>, vector<4xf32>
      %a = vector.extract %x[0] : f32 from vector<4xf32>
      %b = vector.extract %x[3] : f32 from vector<4xf32>
      %y = vector.from_elements %a, %b, %a, %b : vector<4xf32>
      vector.store %y, %out[%g, %c0] : memref<8x4xf32>, vector<4xf32>
    }
  } else {
    scf.for %l = %t to %c32 step %c128 {
      %i = arith.divui %l, %c4 : index
      %j = arith.remui %l, %c4 : index
      %x = memref.load %in[%i, %j] : memref<8x4xf32>
      memref.store %x, %out[%i, %j] : memref<8x4xf32>
    }
  }
  gpu.barrier
  return
}
