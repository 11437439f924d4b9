// x[i] *= 2 in place, as double_f32 in test_kernels.c.
// The Kiln Vulkan kernel ABI: binding i is set 0 binding i; push-constant word
// i is binding i's byte offset within what the driver bound.
module attributes {gpu.container_module} {
  gpu.module @double_f32 {
    gpu.func @double_f32(%x: memref<?xf32>, %pc: memref<1xi32, #spirv.storage_class<PushConstant>>) kernel
        attributes {spirv.entry_point_abi = #spirv.entry_point_abi<workgroup_size = [64, 1, 1]>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      %c0w_x = arith.constant 0 : index
      %ox_bytes = memref.load %pc[%c0w_x] : memref<1xi32, #spirv.storage_class<PushConstant>>
      %ox_i = arith.index_cast %ox_bytes : i32 to index
      %ox = arith.divui %ox_i, %c4 : index
      // The linear workgroup id (x fastest) and the workgroup count.
      %wx = gpu.block_id x
      %wy = gpu.block_id y
      %wz = gpu.block_id z
      %nx = gpu.grid_dim x
      %ny = gpu.grid_dim y
      %nz = gpu.grid_dim z
      %t0 = arith.muli %ny, %wz : index
      %t1 = arith.addi %wy, %t0 : index
      %t2 = arith.muli %nx, %t1 : index
      %wg = arith.addi %wx, %t2 : index
      %nxy = arith.muli %nx, %ny : index
      %wgc = arith.muli %nxy, %nz : index
      %tid = gpu.thread_id x
      // chunk() of test_kernels.c: ceil(N / count) elements per workgroup,
      // which its threads split.
      %n = arith.constant 1000 : index
      %nm1 = arith.addi %n, %wgc : index
      %nm = arith.subi %nm1, %c1 : index
      %size = arith.divui %nm, %wgc : index
      %begin0 = arith.muli %wg, %size : index
      %end0 = arith.addi %begin0, %size : index
      %end = arith.minui %end0, %n : index
      %bs = gpu.block_dim x
      %begin = arith.addi %begin0, %tid : index
      %two = arith.constant 2.0 : f32
      scf.for %i = %begin to %end step %bs {
        %ix = arith.addi %i, %ox : index
        %a = memref.load %x[%ix] : memref<?xf32>
        %d = arith.mulf %a, %two : f32
        memref.store %d, %x[%ix] : memref<?xf32>
      }
      gpu.return
    }
  }
}
