// RUN: kiln-opt %s --pass-pipeline='builtin.module(kiln-attach-target{target=cpu:x86-64-v4},func.func(kiln-vectorize-matmul))' | FileCheck %s --check-prefix=TREE

// With 16-lane vectors the 4x4 dot-product tile has 16 accumulators: they are
// summed by a shuffle-and-add tree into one vector, whose rows of 4 are added
// to C with vector loads and stores (no per-element horizontal reductions).
// TREE-LABEL: func.func @tree_reduction
// TREE-NOT: vector.reduction
// TREE: vector.shuffle
// TREE: vector.extract_strided_slice %{{.*}} {offsets = [0], sizes = [4], strides = [1]} : vector<16xf32> to vector<4xf32>
// TREE: vector.load %{{.*}} : memref<8x8xf32>, vector<4xf32>
// TREE: vector.store %{{.*}} : memref<8x8xf32>, vector<4xf32>
#tree_a = affine_map<(d0, d1, d2) -> (d0, d2)>
#tree_b = affine_map<(d0, d1, d2) -> (d1, d2)>
#tree_c = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @tree_reduction(%a: memref<8x32xf32>, %b: memref<8x32xf32>, %c: memref<8x8xf32>) {
  linalg.generic {indexing_maps = [#tree_a, #tree_b, #tree_c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<8x32xf32>, memref<8x32xf32>) outs(%c : memref<8x8xf32>) attrs = {kiln_kernel.contraction = "ijk"} {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  return
}
