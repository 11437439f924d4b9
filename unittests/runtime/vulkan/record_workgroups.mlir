// counts[id] += 1 per workgroup; workgroup 0 stores the count as an int64
// (two i32 words, the high one 0), as record_workgroups in test_kernels.c.
// The Kiln Vulkan kernel ABI: binding i is set 0 binding i; push-constant word
// i is binding i's byte offset within what the driver bound.
module attributes {gpu.container_module} {
  gpu.module @record_workgroups {
    gpu.func @record_workgroups(%counts: memref<?xi32>, %count: memref<?xi32>, %pc: memref<2xi32, #spirv.storage_class<PushConstant>>) kernel
        attributes {spirv.entry_point_abi = #spirv.entry_point_abi<workgroup_size = [64, 1, 1]>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      %c0w_counts = arith.constant 0 : index
      %ocounts_bytes = memref.load %pc[%c0w_counts] : memref<2xi32, #spirv.storage_class<PushConstant>>
      %ocounts_i = arith.index_cast %ocounts_bytes : i32 to index
      %ocounts = arith.divui %ocounts_i, %c4 : index
      %c1w_count = arith.constant 1 : index
      %ocount_bytes = memref.load %pc[%c1w_count] : memref<2xi32, #spirv.storage_class<PushConstant>>
      %ocount_i = arith.index_cast %ocount_bytes : i32 to index
      %ocount = arith.divui %ocount_i, %c4 : index
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
      scf.if %first {
        %ic = arith.addi %wg, %ocounts : index
        %old = memref.load %counts[%ic] : memref<?xi32>
        %one = arith.constant 1 : i32
        %new = arith.addi %old, %one : i32
        memref.store %new, %counts[%ic] : memref<?xi32>
        %isfirst = arith.cmpi eq, %wg, %zero : index
        scf.if %isfirst {
          %low = arith.index_cast %wgc : index to i32
          %high = arith.constant 0 : i32
          %hi = arith.addi %ocount, %c1 : index
          memref.store %low, %count[%ocount] : memref<?xi32>
          memref.store %high, %count[%hi] : memref<?xi32>
        }
      }
      gpu.return
    }
  }
}
