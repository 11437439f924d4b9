// RUN: kiln-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(kiln-fuse-elementwise))' | FileCheck %s

// A pointwise producer with one use is fused into its pointwise consumer.
// CHECK-LABEL: func.func @fuse_chain
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>, %[[Y:.*]]: tensor<4x8xf32>)
// CHECK: %[[E:.*]] = tensor.empty() : tensor<4x8xf32>
// CHECK-NEXT: %[[R:.*]] = linalg.generic
// CHECK-SAME: ins(%[[X]], %[[Y]] : tensor<4x8xf32>, tensor<4x8xf32>) outs(%[[E]] : tensor<4x8xf32>)
// CHECK-NEXT: ^bb0(%[[A:.*]]: f32, %[[B:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT:   %[[EXP:.*]] = math.exp %[[A]] : f32
// CHECK-NEXT:   %[[ADD:.*]] = arith.addf %[[EXP]], %[[B]] : f32
// CHECK-NEXT:   linalg.yield %[[ADD]] : f32
// CHECK-NOT: linalg.generic
// CHECK: return %[[R]]
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @fuse_chain(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %e0 = tensor.empty() : tensor<4x8xf32>
  %0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x8xf32>) outs(%e0 : tensor<4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = math.exp %a : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  %e1 = tensor.empty() : tensor<4x8xf32>
  %1 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%0, %y : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e1 : tensor<4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.addf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}

// -----

// A producer with two uses stays materialized: fusing it would compute it
// twice.
// CHECK-LABEL: func.func @producer_with_two_uses
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>, %[[Y:.*]]: tensor<4x8xf32>)
// CHECK: %[[P:.*]] = linalg.generic {{.*}} ins(%[[X]] : tensor<4x8xf32>)
// CHECK: math.exp
// CHECK: %[[U0:.*]] = linalg.generic {{.*}} ins(%[[P]], %[[Y]] : tensor<4x8xf32>, tensor<4x8xf32>)
// CHECK-NOT: math.exp
// CHECK: arith.addf
// CHECK: %[[U1:.*]] = linalg.generic {{.*}} ins(%[[P]], %[[Y]] : tensor<4x8xf32>, tensor<4x8xf32>)
// CHECK-NOT: math.exp
// CHECK: arith.mulf
// CHECK: return %[[U0]], %[[U1]]
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @producer_with_two_uses(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %e0 = tensor.empty() : tensor<4x8xf32>
  %0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x8xf32>) outs(%e0 : tensor<4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = math.exp %a : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  %e1 = tensor.empty() : tensor<4x8xf32>
  %1 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%0, %y : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e1 : tensor<4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.addf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  %e2 = tensor.empty() : tensor<4x8xf32>
  %2 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%0, %y : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e2 : tensor<4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.mulf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  return %1, %2 : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// A matmul's pointwise epilogue (bias add, relu) writes into the matmul's
// result instead of a fresh tensor.empty, so bufferization computes it in
// place.
// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[ROW:.*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @epilogue_into_matmul
// CHECK-SAME: (%[[X:.*]]: tensor<16x32xf32>, %[[W:.*]]: tensor<64x32xf32>, %[[BIAS:.*]]: tensor<64xf32>)
// CHECK: %[[MM:.*]] = linalg.generic {{.*}} ins(%[[X]], %[[W]] : tensor<16x32xf32>, tensor<64x32xf32>)
// CHECK-SAME: kiln_kernel.contraction = "ijk"
// CHECK: %[[EPI:.*]] = linalg.generic {indexing_maps = [#[[ROW]], #[[ID]]], iterator_types = ["parallel", "parallel"]} ins(%[[BIAS]] : tensor<64xf32>) outs(%[[MM]] : tensor<16x64xf32>) {
// CHECK-NEXT: ^bb0(%[[B:.*]]: f32, %[[ACC:.*]]: f32):
// CHECK-NEXT:   %[[ADD:.*]] = arith.addf %[[ACC]], %[[B]] : f32
// CHECK-NEXT:   %[[RELU:.*]] = arith.maximumf %[[ADD]], %{{.*}} : f32
// CHECK-NEXT:   linalg.yield %[[RELU]] : f32
// CHECK-NOT: tensor.empty
// CHECK: return %[[EPI]]
#a = affine_map<(d0, d1, d2) -> (d0, d2)>
#b = affine_map<(d0, d1, d2) -> (d1, d2)>
#c = affine_map<(d0, d1, d2) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
func.func @epilogue_into_matmul(%x: tensor<16x32xf32>, %w: tensor<64x32xf32>, %bias: tensor<64xf32>) -> tensor<16x64xf32> {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<16x64xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e0 : tensor<16x64xf32>) -> tensor<16x64xf32>
  %mm = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<16x32xf32>, tensor<64x32xf32>) outs(%init : tensor<16x64xf32>)
      attrs = {kiln_kernel.contraction = "ijk"} {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %m = arith.mulf %p, %q fastmath<reassoc,contract> : f32
    %s = arith.addf %acc, %m fastmath<reassoc,contract> : f32
    linalg.yield %s : f32
  } -> tensor<16x64xf32>
  %e1 = tensor.empty() : tensor<16x64xf32>
  %add = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%mm, %bias : tensor<16x64xf32>, tensor<64xf32>) outs(%e1 : tensor<16x64xf32>) {
  ^bb0(%v: f32, %b: f32, %o: f32):
    %r = arith.addf %v, %b : f32
    linalg.yield %r : f32
  } -> tensor<16x64xf32>
  %e2 = tensor.empty() : tensor<16x64xf32>
  %relu = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%add : tensor<16x64xf32>) outs(%e2 : tensor<16x64xf32>) {
  ^bb0(%v: f32, %o: f32):
    %r = arith.maximumf %v, %zero : f32
    linalg.yield %r : f32
  } -> tensor<16x64xf32>
  return %relu : tensor<16x64xf32>
}

// -----

// The matmul result as the second operand: the payload still reads the
// operands in their original roles (bias - mm, not mm - bias).
// CHECK-LABEL: func.func @matmul_second_operand
// CHECK-SAME: (%[[X:.*]]: tensor<8x8xf32>, %[[W:.*]]: tensor<8x8xf32>, %[[BIAS:.*]]: tensor<8xf32>)
// CHECK: %[[MM:.*]] = linalg.generic {{.*}} ins(%[[X]], %[[W]] : tensor<8x8xf32>, tensor<8x8xf32>)
// CHECK: linalg.generic {{.*}} ins(%[[BIAS]] : tensor<8xf32>) outs(%[[MM]] : tensor<8x8xf32>) {
// CHECK-NEXT: ^bb0(%[[B:.*]]: f32, %[[ACC:.*]]: f32):
// CHECK-NEXT:   %[[SUB:.*]] = arith.subf %[[B]], %[[ACC]] : f32
// CHECK-NEXT:   linalg.yield %[[SUB]] : f32
#a = affine_map<(d0, d1, d2) -> (d0, d1)>
#b = affine_map<(d0, d1, d2) -> (d1, d2)>
#c = affine_map<(d0, d1, d2) -> (d0, d2)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
func.func @matmul_second_operand(%x: tensor<8x8xf32>, %w: tensor<8x8xf32>, %bias: tensor<8xf32>) -> tensor<8x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<8x8xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e0 : tensor<8x8xf32>) -> tensor<8x8xf32>
  %mm = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%x, %w : tensor<8x8xf32>, tensor<8x8xf32>) outs(%init : tensor<8x8xf32>)
      attrs = {kiln_kernel.contraction = "ikj"} {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %m = arith.mulf %p, %q fastmath<reassoc,contract> : f32
    %s = arith.addf %acc, %m fastmath<reassoc,contract> : f32
    linalg.yield %s : f32
  } -> tensor<8x8xf32>
  %e1 = tensor.empty() : tensor<8x8xf32>
  %sub = linalg.generic {indexing_maps = [#row, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%bias, %mm : tensor<8xf32>, tensor<8x8xf32>) outs(%e1 : tensor<8x8xf32>) {
  ^bb0(%b: f32, %v: f32, %o: f32):
    %r = arith.subf %b, %v : f32
    linalg.yield %r : f32
  } -> tensor<8x8xf32>
  return %sub : tensor<8x8xf32>
}

// -----

// The matmul result is also returned: writing into it would clobber it.
// CHECK-LABEL: func.func @matmul_with_another_use
// CHECK: %[[MM:.*]] = linalg.generic
// CHECK-SAME: kiln_kernel.contraction = "ikj"
// CHECK: %[[E:.*]] = tensor.empty() : tensor<8x8xf32>
// CHECK: %[[EPI:.*]] = linalg.generic {{.*}} ins(%[[MM]], %{{.*}} : tensor<8x8xf32>, tensor<8xf32>) outs(%[[E]] : tensor<8x8xf32>)
// CHECK: return %[[EPI]], %[[MM]]
#a = affine_map<(d0, d1, d2) -> (d0, d1)>
#b = affine_map<(d0, d1, d2) -> (d1, d2)>
#c = affine_map<(d0, d1, d2) -> (d0, d2)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
func.func @matmul_with_another_use(%x: tensor<8x8xf32>, %w: tensor<8x8xf32>, %bias: tensor<8xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<8x8xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e0 : tensor<8x8xf32>) -> tensor<8x8xf32>
  %mm = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%x, %w : tensor<8x8xf32>, tensor<8x8xf32>) outs(%init : tensor<8x8xf32>)
      attrs = {kiln_kernel.contraction = "ikj"} {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %m = arith.mulf %p, %q fastmath<reassoc,contract> : f32
    %s = arith.addf %acc, %m fastmath<reassoc,contract> : f32
    linalg.yield %s : f32
  } -> tensor<8x8xf32>
  %e1 = tensor.empty() : tensor<8x8xf32>
  %add = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%mm, %bias : tensor<8x8xf32>, tensor<8xf32>) outs(%e1 : tensor<8x8xf32>) {
  ^bb0(%v: f32, %b: f32, %o: f32):
    %r = arith.addf %v, %b : f32
    linalg.yield %r : f32
  } -> tensor<8x8xf32>
  return %add, %mm : tensor<8x8xf32>, tensor<8x8xf32>
}

// -----

// The epilogue reads the matmul result transposed: element (i, j) of the
// output is not the element it reads, so it keeps its own tensor.
// CHECK-DAG: #[[T:.*]] = affine_map<(d0, d1) -> (d1, d0)>
// CHECK-LABEL: func.func @matmul_read_transposed
// CHECK: %[[MM:.*]] = linalg.generic
// CHECK-SAME: kiln_kernel.contraction = "ikj"
// CHECK: %[[E:.*]] = tensor.empty() : tensor<8x8xf32>
// CHECK: %[[EPI:.*]] = linalg.generic {indexing_maps = [#[[T]], {{.*}}]{{.*}} ins(%[[MM]] : tensor<8x8xf32>) outs(%[[E]] : tensor<8x8xf32>)
// CHECK: return %[[EPI]]
#a = affine_map<(d0, d1, d2) -> (d0, d1)>
#b = affine_map<(d0, d1, d2) -> (d1, d2)>
#c = affine_map<(d0, d1, d2) -> (d0, d2)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#t = affine_map<(d0, d1) -> (d1, d0)>
func.func @matmul_read_transposed(%x: tensor<8x8xf32>, %w: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<8x8xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e0 : tensor<8x8xf32>) -> tensor<8x8xf32>
  %mm = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%x, %w : tensor<8x8xf32>, tensor<8x8xf32>) outs(%init : tensor<8x8xf32>)
      attrs = {kiln_kernel.contraction = "ikj"} {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %m = arith.mulf %p, %q fastmath<reassoc,contract> : f32
    %s = arith.addf %acc, %m fastmath<reassoc,contract> : f32
    linalg.yield %s : f32
  } -> tensor<8x8xf32>
  %e1 = tensor.empty() : tensor<8x8xf32>
  %neg = linalg.generic {indexing_maps = [#t, #id], iterator_types = ["parallel", "parallel"]}
      ins(%mm : tensor<8x8xf32>) outs(%e1 : tensor<8x8xf32>) {
  ^bb0(%v: f32, %o: f32):
    %r = arith.negf %v : f32
    linalg.yield %r : f32
  } -> tensor<8x8xf32>
  return %neg : tensor<8x8xf32>
}

// -----

// A reduction's result has another type than the epilogue's: not reused.
// CHECK-LABEL: func.func @broadcast_of_reduction
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
// CHECK: %[[E:.*]] = tensor.empty() : tensor<4x8xf32>
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %[[SUM]] : tensor<4x8xf32>, tensor<4xf32>) outs(%[[E]] : tensor<4x8xf32>)
#id = affine_map<(d0, d1) -> (d0, d1)>
#rows = affine_map<(d0, d1) -> (d0)>
func.func @broadcast_of_reduction(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<4xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e0 : tensor<4xf32>) -> tensor<4xf32>
  %sum = linalg.generic {indexing_maps = [#id, #rows], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x8xf32>) outs(%init : tensor<4xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %r = arith.addf %v, %acc : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  %e1 = tensor.empty() : tensor<4x8xf32>
  %div = linalg.generic {indexing_maps = [#id, #rows, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %sum : tensor<4x8xf32>, tensor<4xf32>) outs(%e1 : tensor<4x8xf32>) {
  ^bb0(%v: f32, %s: f32, %o: f32):
    %r = arith.divf %v, %s : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  return %div : tensor<4x8xf32>
}

// -----

// The pointwise chain after a convolution (a per-channel scale, a residual
// add, ReLU), fused into one generic, becomes the convolution's epilogue: the
// convolution writes the generic's destination, and the body takes the
// convolution's value first, then one element of each other input.
// CHECK-DAG: #[[CHANNEL:.*]] = affine_map<(d0, d1, d2, d3) -> (d1, 0, 0)>
// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CHECK-LABEL: func.func @conv_epilogue
// CHECK-SAME: (%[[X:.*]]: tensor<2x4x8x10xf32>, %[[W:.*]]: tensor<4x4x3x3xf32>, %[[S:.*]]: tensor<4x1x1xf32>, %[[R:.*]]: tensor<2x4x6x8xf32>)
// CHECK: %[[OUT:.*]] = tensor.empty() : tensor<2x4x6x8xf32>
// CHECK-NEXT: %[[C:.*]] = kiln_kernel.conv2d %[[X]], %[[W]] epilogue(%[[S]], %[[R]] : tensor<4x1x1xf32>, tensor<2x4x6x8xf32>) into %[[OUT]]
// CHECK-SAME: epilogue_maps = [#[[CHANNEL]], #[[ID]]]
// CHECK-NEXT: ^bb0(%[[V:.*]]: f32, %[[SC:.*]]: f32, %[[RES:.*]]: f32):
// CHECK-NEXT:   %[[M:.*]] = arith.mulf %[[V]], %[[SC]] : f32
// CHECK-NEXT:   %[[A:.*]] = arith.addf %[[M]], %[[RES]] : f32
// CHECK-NEXT:   %[[RELU:.*]] = arith.maximumf %[[A]], %{{.*}} : f32
// CHECK-NEXT:   kiln_kernel.epilogue_yield %[[RELU]] : f32
// CHECK-NOT: linalg.generic
// CHECK: return %[[C]]
#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#map1 = affine_map<(d0, d1, d2, d3) -> (d1, 0, 0)>
func.func @conv_epilogue(%x: tensor<2x4x8x10xf32>, %w: tensor<4x4x3x3xf32>, %s: tensor<4x1x1xf32>,
                         %r: tensor<2x4x6x8xf32>) -> tensor<2x4x6x8xf32> {
  %e = tensor.empty() : tensor<2x4x6x8xf32>
  %c = kiln_kernel.conv2d %x, %w into %e {dilations = array<i64: 1, 1>, strides = array<i64: 1, 1>} : tensor<2x4x8x10xf32>, tensor<4x4x3x3xf32> into tensor<2x4x6x8xf32> -> tensor<2x4x6x8xf32>
  %e0 = tensor.empty() : tensor<2x4x6x8xf32>
  %0 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%c, %s : tensor<2x4x6x8xf32>, tensor<4x1x1xf32>) outs(%e0 : tensor<2x4x6x8xf32>) {
  ^bb0(%in: f32, %in_0: f32, %out: f32):
    %6 = arith.mulf %in, %in_0 : f32
    linalg.yield %6 : f32
  } -> tensor<2x4x6x8xf32>
  %e1 = tensor.empty() : tensor<2x4x6x8xf32>
  %1 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%0, %r : tensor<2x4x6x8xf32>, tensor<2x4x6x8xf32>) outs(%e1 : tensor<2x4x6x8xf32>) {
  ^bb0(%in: f32, %in_0: f32, %out: f32):
    %6 = arith.addf %in, %in_0 : f32
    linalg.yield %6 : f32
  } -> tensor<2x4x6x8xf32>
  %e2 = tensor.empty() : tensor<2x4x6x8xf32>
  %2 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%1 : tensor<2x4x6x8xf32>) outs(%e2 : tensor<2x4x6x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %cst = arith.constant 0.000000e+00 : f32
    %6 = arith.maximumf %in, %cst : f32
    linalg.yield %6 : f32
  } -> tensor<2x4x6x8xf32>
  return %2 : tensor<2x4x6x8xf32>
}
