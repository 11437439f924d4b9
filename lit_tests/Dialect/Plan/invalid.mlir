// RUN: kiln-opt %s -split-input-file -verify-diagnostics

func.func @alloc_strided() {
  // expected-error @+1 {{buffers must have the identity (contiguous) layout}}
  %0 = kiln_plan.alloc : memref<4x4xf32, strided<[8, 1]>>
  return
}

// -----

func.func @alloc_dynamic() {
  // expected-error @+1 {{needs one `dims` expression over the size symbols per `?` dim of 'memref<?xf32>'}}
  %0 = kiln_plan.alloc : memref<?xf32>
  return
}

// -----

func.func @view_of_strided(%b: memref<4x4xf32, strided<[8, 1]>>) {
  // expected-error @+1 {{buffers must have the identity (contiguous) layout}}
  %0 = kiln_plan.view %b : memref<4x4xf32, strided<[8, 1]>> to memref<16xf32>
  return
}

// -----

func.func @view_to_strided(%b: memref<32xf32>) {
  // expected-error @+1 {{buffers must have the identity (contiguous) layout}}
  %0 = kiln_plan.view %b : memref<32xf32> to memref<4x4xf32, strided<[8, 1]>>
  return
}

// -----

func.func @view_too_large(%b: memref<4x8xf32>) {
  // expected-error @+1 {{view of 132 bytes at offset 0 does not fit in a 128-byte buffer}}
  %0 = kiln_plan.view %b : memref<4x8xf32> to memref<33xf32>
  return
}

// -----

func.func @view_overflows_at_offset(%b: memref<4x8xf32>) {
  // expected-error @+1 {{view of 64 bytes at offset 68 does not fit in a 128-byte buffer}}
  %0 = kiln_plan.view %b {byte_offset = 68 : i64} : memref<4x8xf32> to memref<2x8xf32>
  return
}

// -----

func.func @view_wider_elements(%b: memref<8xf32>) {
  // expected-error @+1 {{view of 64 bytes at offset 0 does not fit in a 32-byte buffer}}
  %0 = kiln_plan.view %b : memref<8xf32> to memref<8xi64>
  return
}

// -----

func.func @view_negative_offset(%b: memref<8xf32>) {
  // expected-error @+1 {{view of 4 bytes at offset -4 does not fit in a 32-byte buffer}}
  %0 = kiln_plan.view %b {byte_offset = -4 : i64} : memref<8xf32> to memref<1xf32>
  return
}

// -----

func.func @launch_unknown_kernel(%a: memref<4xf32>) {
  // expected-error @+1 {{kernel 'missing' is not a func.func in scope}}
  kiln_plan.launch @missing[1](%a) {num_inputs = 1 : i64} : memref<4xf32>
  return
}

// -----

llvm.func @llvm_kernel(i64, i64, !llvm.ptr)

func.func @launch_of_non_func(%a: memref<4xf32>) {
  // expected-error @+1 {{kernel 'llvm_kernel' is not a func.func in scope}}
  kiln_plan.launch @llvm_kernel[1](%a) {num_inputs = 1 : i64} : memref<4xf32>
  return
}

// -----

func.func private @k(%wg: index, %wgc: index, %a: memref<4xf32>, %out: memref<4xf32>)

func.func @launch_too_few_bindings(%a: memref<4xf32>) {
  // expected-error @+1 {{kernel takes 4 arguments; expected 2 workgroup indices + 1 bindings + 0 size symbols and no results}}
  kiln_plan.launch @k[1](%a) {num_inputs = 1 : i64} : memref<4xf32>
  return
}

// -----

func.func private @k(%wg: index, %wgc: index, %a: memref<4xf32>) -> i32

func.func @launch_kernel_with_result(%a: memref<4xf32>) {
  // expected-error @+1 {{kernel takes 3 arguments; expected 2 workgroup indices + 1 bindings + 0 size symbols and no results}}
  kiln_plan.launch @k[1](%a) {num_inputs = 1 : i64} : memref<4xf32>
  return
}

// -----

func.func private @k(%wg: index, %wgc: index, %a: memref<4xf32>, %out: memref<4xf32>)

func.func @launch_binding_type(%a: memref<4xf32>, %out: memref<4xi64>) {
  // expected-error @+1 {{binding 1 has type 'memref<4xi64>' but the kernel expects 'memref<4xf32>'}}
  kiln_plan.launch @k[1](%a, %out) {num_inputs = 1 : i64} : memref<4xf32>, memref<4xi64>
  return
}

// -----

func.func private @k(%wg: index, %wgc: index, %a: memref<4xf32>)

func.func @launch_negative_workgroups(%a: memref<4xf32>) {
  // expected-error @+1 {{workgroups must be non-negative}}
  kiln_plan.launch @k[-1](%a) {num_inputs = 1 : i64} : memref<4xf32>
  return
}

// -----

func.func private @k(%wg: index, %wgc: index, %a: memref<4xf32>)

func.func @launch_num_inputs(%a: memref<4xf32>) {
  // expected-error @+1 {{num_inputs exceeds the number of bindings}}
  kiln_plan.launch @k[1](%a) {num_inputs = 2 : i64} : memref<4xf32>
  return
}

// -----

func.func private @k(%wg: index, %wgc: index, %a: memref<0xi32>)

func.func @launch_empty_element_type(%a: memref<0x4xf32>) {
  // expected-error @+1 {{binding 0 has type 'memref<0x4xf32>' but the kernel expects 'memref<0xi32>'}}
  kiln_plan.launch @k[1](%a) {num_inputs = 1 : i64} : memref<0x4xf32>
  return
}

// -----

func.func @check_of_floats(%b: memref<f32>) {
  // expected-error @+1 {{condition must hold one i1, got 'memref<f32>'}}
  kiln_plan.check %b {kind = "index", message = "m"} : memref<f32>
  return
}

// -----

func.func @check_of_unknown_kind(%b: memref<i1>) {
  // expected-error @+1 {{kind must be "index" or "runtime"}}
  kiln_plan.check %b {kind = "fatal", message = "m"} : memref<i1>
  return
}

// -----

#two = affine_map<()[s0] -> (s0, s0)>
func.func @dims_per_dynamic_dim() {
  // expected-error @+1 {{needs one `dims` expression over the size symbols per `?` dim of 'memref<?x4xf32>'}}
  %0 = kiln_plan.alloc {dims = #two} : memref<?x4xf32>
  return
}

// -----

#s0 = affine_map<()[s0] -> (s0)>
func.func @symbolic_view_offset(%x: memref<?xf32> {kiln_plan.dims = #s0}) {
  // expected-error @+1 {{a view of a symbolic buffer must start at offset 0}}
  %0 = kiln_plan.view %x {byte_offset = 4 : i64, dims = #s0} : memref<?xf32> to memref<?xf32>
  return
}

// -----

#s0 = affine_map<()[s0] -> (s0)>
func.func private @k(%wg: index, %wgc: index, %a: memref<1xf32>, %s0: index) attributes {kiln_kernel.num_symbols = 1 : i64}
func.func @extent_without_work(%x: memref<?xf32> {kiln_plan.dims = #s0}) {
  // expected-error @+1 {{symbolic_extent and symbolic_work come together}}
  kiln_plan.launch @k[8](%x) {num_inputs = 1 : i64, symbolic_extent = #s0} : memref<?xf32>
  return
}

// -----

func.func @persistent_dynamic() {
  // expected-error @+1 {{a persistent buffer must have a static shape, got 'memref<?xf32>'}}
  %0 = kiln_plan.alloc {persistent, dims = affine_map<()[s0] -> (s0)>} : memref<?xf32>
  return
}

// -----

func.func private @pack(index, index, memref<4xf32>, memref<4xf32>)
func.func @cached_writes_a_fresh_buffer(%w: memref<4xf32>) {
  %0 = kiln_plan.alloc : memref<4xf32>
  // expected-error @+1 {{a cached launch reads graph inputs and writes persistent buffers; binding 1 is neither}}
  kiln_plan.launch @pack[1] (%w, %0) {cached, num_inputs = 1 : i64} : memref<4xf32>, memref<4xf32>
  return
}

// -----

func.func private @pack(index, index, memref<4xf32>, memref<4xf32>)
func.func @cached_reads_an_intermediate(%w: memref<4xf32>) {
  %0 = kiln_plan.alloc : memref<4xf32>
  %1 = kiln_plan.alloc {persistent} : memref<4xf32>
  // expected-error @+1 {{binding 0 is neither}}
  kiln_plan.launch @pack[1] (%0, %1) {cached, num_inputs = 1 : i64} : memref<4xf32>, memref<4xf32>
  return
}

// -----

func.func private @k_aligned(index, index, memref<4xf32>)
func.func @launch_alignment(%a: memref<4xf32>) {
  // expected-error @+1 {{alignment must be positive}}
  kiln_plan.launch @k_aligned[1](%a) {num_inputs = 1 : i64, alignment = 0 : i64} : memref<4xf32>
  return
}

// -----

func.func @collective_kind(%x: memref<4xf32>, %y: memref<4xf32>) {
  // expected-error @+1 {{kind must be "all_reduce", "all_gather", "reduce_scatter" or "all_to_all", got "broadcast"}}
  kiln_plan.collective %x, %y {kind = "broadcast", reduce_op = "sum", group = "0", group_size = 2} : memref<4xf32>, memref<4xf32>
  return
}

// -----

func.func @collective_reduce_op(%x: memref<4xf32>, %y: memref<4xf32>) {
  // expected-error @+1 {{reduce_op must be "sum", "avg", "product", "min" or "max", got "band"}}
  kiln_plan.collective %x, %y {kind = "all_reduce", reduce_op = "band", group = "0", group_size = 2} : memref<4xf32>, memref<4xf32>
  return
}

// -----

func.func @collective_types(%x: memref<4xf32>, %y: memref<4xi64>) {
  // expected-error @+1 {{input and output differ in element type or rank}}
  kiln_plan.collective %x, %y {kind = "all_reduce", reduce_op = "sum", group = "0", group_size = 2} : memref<4xf32>, memref<4xi64>
  return
}
