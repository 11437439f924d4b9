// out[i] = -in[i] for i < 4 in workgroup 0, as negate_f32 in test_kernels_other.c.
// The Kiln Vulkan kernel ABI: binding i is set 0 binding i; push-constant word
// i is binding i's byte offset within what the driver bound.
module attributes {gpu.container_module} {
  gpu.module @negate_f32 {
    gpu.func @negate_f32(%in: memref<?xf32>, %out: memref<?xf32>, %pc: memref<2xi32, #spirv.storage_class<PushConstant>>) kernel
        attributes {spirv.entry_point_abi = #spirv.entry_point_abi<workgroup_size = [64, 1, 1]>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      %c0w_in = arith.constant 0 : index
      %oin_bytes = memref.load %pc[%c0w_in] : memref<2xi32, #spirv.storage_class<PushConstant>>
      %oin_i = arith.index_cast %oin_bytes : i32 to index
      %oin = arith.divui %oin_i, %c4 : index
      %c1w_out = arith.constant 1 : index
      %oout_bytes = memref.load %pc[%c1w_out] : memref<2xi32, #spirv.storage_class<PushConstant>>
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
      %isfirst = arith.cmpi eq, %wg, %zero : index
      %four = arith.constant 4 : index
      %low = arith.cmpi ult, %tid, %four : index
      %run = arith.andi %isfirst, %low : i1
      scf.if %run {
        %ii = arith.addi %tid, %oin : index
        %io = arith.addi %tid, %oout : index
        %a = memref.load %in[%ii] : memref<?xf32>
        %b = arith.negf %a : f32
        memref.store %b, %out[%io] : memref<?xf32>
      }
      gpu.return
    }
  }
}
