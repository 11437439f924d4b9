// out[0] = value 0, out[1] = value 1, each an int64 sign-extended from the
// i32 push constant, as store_values in test_kernels.c.
// The Kiln Vulkan kernel ABI: binding i is set 0 binding i; push-constant word
// i is binding i's byte offset within what the driver bound, then the values.
module attributes {gpu.container_module} {
  gpu.module @store_values {
    gpu.func @store_values(%out: memref<?xi32>, %pc: memref<3xi32, #spirv.storage_class<PushConstant>>) kernel
        attributes {spirv.entry_point_abi = #spirv.entry_point_abi<workgroup_size = [64, 1, 1]>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      %c0w_out = arith.constant 0 : index
      %oout_bytes = memref.load %pc[%c0w_out] : memref<3xi32, #spirv.storage_class<PushConstant>>
      %oout_i = arith.index_cast %oout_bytes : i32 to index
      %oout = arith.divui %oout_i, %c4 : index
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
      %zero = arith.constant 0 : index
      %first = arith.cmpi eq, %tid, %zero : index
      %isfirst = arith.cmpi eq, %wg, %zero : index
      %store = arith.andi %first, %isfirst : i1
      scf.if %store {
        %c1w = arith.constant 1 : index
        %c2w = arith.constant 2 : index
        %c3w = arith.constant 3 : index
        %v0 = memref.load %pc[%c1w] : memref<3xi32, #spirv.storage_class<PushConstant>>
        %v1w = memref.load %pc[%c2w] : memref<3xi32, #spirv.storage_class<PushConstant>>
        %c31 = arith.constant 31 : i32
        %h0 = arith.shrsi %v0, %c31 : i32
        %h1 = arith.shrsi %v1w, %c31 : i32
        %i1 = arith.addi %oout, %c1w : index
        %i2 = arith.addi %oout, %c2w : index
        %i3 = arith.addi %oout, %c3w : index
        memref.store %v0, %out[%oout] : memref<?xi32>
        memref.store %h0, %out[%i1] : memref<?xi32>
        memref.store %v1w, %out[%i2] : memref<?xi32>
        memref.store %h1, %out[%i3] : memref<?xi32>
      }
      gpu.return
    }
  }
}
