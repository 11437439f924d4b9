// x[0] = 7, then status[slot] = 1 ("a loop was cut short"), as a kernel
// whose loop the device stopped early reports it.
// The Kiln Vulkan kernel ABI: binding i is set 0 binding i; after the
// bindings, the device's status buffer; push-constant word i is binding i's
// byte offset within what the driver bound, then the values, then the
// launch's status slot.
module attributes {gpu.container_module} {
  gpu.module @report_status {
    gpu.func @report_status(%x: memref<?xf32>, %status: memref<?xi32>, %pc: memref<2xi32, #spirv.storage_class<PushConstant>>) kernel
        attributes {spirv.entry_point_abi = #spirv.entry_point_abi<workgroup_size = [64, 1, 1]>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      %ox_bytes = memref.load %pc[%c0] : memref<2xi32, #spirv.storage_class<PushConstant>>
      %ox_i = arith.index_cast %ox_bytes : i32 to index
      %ox = arith.divui %ox_i, %c4 : index
      %slot_word = memref.load %pc[%c1] : memref<2xi32, #spirv.storage_class<PushConstant>>
      %slot = arith.index_cast %slot_word : i32 to index
      %tid = gpu.thread_id x
      %first = arith.cmpi eq, %tid, %c0 : index
      scf.if %first {
        %seven = arith.constant 7.0 : f32
        memref.store %seven, %x[%ox] : memref<?xf32>
        %cut = arith.constant 1 : i32
        memref.store %cut, %status[%slot] : memref<?xi32>
      }
      gpu.return
    }
  }
}
