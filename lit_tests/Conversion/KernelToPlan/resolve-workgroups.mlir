// RUN: kiln-opt %s -split-input-file --kiln-resolve-workgroups | FileCheck %s

// 100 rows in chunks aligned to 8, asked for 16 workgroups: chunks of 8
// rows, so only 13 workgroups get rows.
// CHECK-LABEL: func.func @aligned_rows
// CHECK: kiln_plan.launch @rows[13]
func.func private @rows(index, index, memref<100x4xf32>) attributes {kiln_kernel.workgroup_extent = 100 : i64, kiln_kernel.workgroup_alignment = 8 : i64}
func.func @aligned_rows(%a: memref<100x4xf32>) attributes {kiln_plan.entry} {
  kiln_plan.launch @rows[16](%a) {num_inputs = 0 : i64} : memref<100x4xf32>
  return
}

// -----

// A kernel that splits its columns keeps the plan's count (its grid) where
// each workgroup gets a cell: one row chunk by 16 column chunks.
// CHECK-LABEL: func.func @grid
// CHECK: kiln_plan.launch @matmul[16]
func.func private @matmul(index, index, memref<4x512xf32>) attributes {kiln_kernel.workgroup_extent = 4 : i64, kiln_kernel.workgroup_alignment = 4 : i64, kiln_kernel.column_extent = 512 : i64, kiln_kernel.column_alignment = 32 : i64}
func.func @grid(%a: memref<4x512xf32>) attributes {kiln_plan.entry} {
  kiln_plan.launch @matmul[16](%a) {num_inputs = 0 : i64} : memref<4x512xf32>
  return
}

// -----

// On a grid, more workgroups than its cells would run nothing: 6 rows in
// chunks of 1 by 3 columns (a GPU attention's query blocks) take 18 of the
// 65535 asked for.
// CHECK-LABEL: func.func @grid_cells
// CHECK: kiln_plan.launch @attention[18]
func.func private @attention(index, index, memref<6x70xf32>) attributes {kiln_kernel.workgroup_extent = 6 : i64, kiln_kernel.workgroup_alignment = 1 : i64, kiln_kernel.column_extent = 3 : i64, kiln_kernel.column_alignment = 1 : i64}
func.func @grid_cells(%a: memref<6x70xf32>) attributes {kiln_plan.entry} {
  kiln_plan.launch @attention[65535](%a) {num_inputs = 0 : i64} : memref<6x70xf32>
  return
}

// -----

// A kernel code generation did not distribute runs once.
// CHECK-LABEL: func.func @undistributed
// CHECK: kiln_plan.launch @whole[1]
func.func private @whole(index, index, memref<64xf32>) attributes {kiln_kernel.workgroup_extent = 64 : i64}
func.func @undistributed(%a: memref<64xf32>) attributes {kiln_plan.entry} {
  kiln_plan.launch @whole[8](%a) {num_inputs = 0 : i64} : memref<64xf32>
  return
}

// -----

// A symbolic launch keeps its cap and takes the kernel's alignment and grid:
// the runtime computes the count from them.
// CHECK-LABEL: func.func @symbolic
// CHECK: kiln_plan.launch @sym[64]
// CHECK-SAME: alignment = 6 : i64
// CHECK-SAME: grid
func.func private @sym(index, index, memref<1xf32>, index) attributes {kiln_kernel.workgroup_extent = affine_map<()[s0] -> (s0)>, kiln_kernel.num_symbols = 1 : i64, kiln_kernel.workgroup_alignment = 6 : i64, kiln_kernel.column_extent = 64 : i64, kiln_kernel.column_alignment = 16 : i64}
func.func @symbolic(%a: memref<?xf32> {kiln_plan.dims = affine_map<()[s0] -> (s0)>}) attributes {kiln_plan.entry, kiln_graph.symbols = [{name = "s0"}]} {
  kiln_plan.launch @sym[64](%a) {num_inputs = 0 : i64, symbolic_extent = affine_map<()[s0] -> (s0)>, symbolic_work = affine_map<()[s0] -> (s0 * 64)>} : memref<?xf32>
  return
}
