// RUN: split-file %s %t
// RUN: kiln-import-fx %t/graph.json | FileCheck %s
// RUN: not kiln-import-fx %t/dropout.json 2>&1 | FileCheck %s --check-prefix=DROPOUT
// RUN: not kiln-import-fx %t/bad-mask.json 2>&1 | FileCheck %s --check-prefix=BROADCAST

// The CPU flash-attention op becomes kiln_graph.attention with its two
// results. The default scale is 1/sqrt(E); a boolean mask becomes an additive
// one (0 where true, -inf elsewhere), reshaped to rank 4. Grouped-query heads
// (4 query heads, 2 key heads) pass through.
// CHECK-LABEL: func.func @attention
// CHECK-SAME: (%[[Q:.*]]: tensor<2x4x8x16xf32>{{.*}}, %[[K:.*]]: tensor<2x2x6x16xf32>{{.*}}, %[[V:.*]]: tensor<2x2x6x8xf32>{{.*}}, %[[M:.*]]: tensor<8x6xi1>{{.*}})
// CHECK: %[[A:[a-z0-9_]+]], %[[L:[a-z0-9_]+]] = kiln_graph.attention %[[Q]], %[[K]], %[[V]] {is_causal = true, scale = 2.500000e-01 : f64}
// CHECK-SAME: -> tensor<2x4x8x8xf32>, tensor<2x4x8xf32>
// CHECK: %[[ADD:[a-z0-9_]+]] = kiln_graph.where %[[M]], %{{.*}}, %{{.*}} : tensor<8x6xi1>, tensor<f32>, tensor<f32> -> tensor<8x6xf32>
// CHECK: %[[MASK:[a-z0-9_]+]] = kiln_graph.reshape %[[ADD]] : tensor<8x6xf32> -> tensor<1x1x8x6xf32>
// CHECK: %[[B:[a-z0-9_]+]], %{{.*}} = kiln_graph.attention %[[Q]], %[[K]], %[[V]] mask %[[MASK]] {scale = 5.000000e-01 : f64}
// CHECK: return %[[A]], %[[L]], %[[B]]

// DROPOUT: dropout_p must be 0: the fused attention kernel has no dropout
// BROADCAST: attn_mask dim 2 has size 3, which does not broadcast to 8

//--- graph.json
{"version": 1, "name": "attention",
 "inputs": [{"name": "q", "shape": [2, 4, 8, 16], "dtype": "float32"},
            {"name": "k", "shape": [2, 2, 6, 16], "dtype": "float32"},
            {"name": "v", "shape": [2, 2, 6, 8], "dtype": "float32"},
            {"name": "m", "shape": [8, 6], "dtype": "bool"}],
 "nodes": [
  {"name": "causal", "target": "aten._scaled_dot_product_flash_attention_for_cpu.default",
   "args": [{"ref": "q", "index": 0}, {"ref": "k", "index": 0}, {"ref": "v", "index": 0}, 0.0, true], "kwargs": {},
   "outputs": [{"shape": [2, 4, 8, 8], "dtype": "float32"}, {"shape": [2, 4, 8], "dtype": "float32"}]},
  {"name": "masked", "target": "aten._scaled_dot_product_flash_attention_for_cpu.default",
   "args": [{"ref": "q", "index": 0}, {"ref": "k", "index": 0}, {"ref": "v", "index": 0}],
   "kwargs": {"attn_mask": {"ref": "m", "index": 0}, "scale": 0.5},
   "outputs": [{"shape": [2, 4, 8, 8], "dtype": "float32"}, {"shape": [2, 4, 8], "dtype": "float32"}]}],
 "outputs": [{"ref": "causal", "index": 0}, {"ref": "causal", "index": 1}, {"ref": "masked", "index": 0}]}

//--- dropout.json
{"version": 1, "name": "dropout",
 "inputs": [{"name": "q", "shape": [1, 1, 4, 8], "dtype": "float32"}],
 "nodes": [
  {"name": "a", "target": "aten._scaled_dot_product_flash_attention_for_cpu.default",
   "args": [{"ref": "q", "index": 0}, {"ref": "q", "index": 0}, {"ref": "q", "index": 0}, 0.1], "kwargs": {},
   "outputs": [{"shape": [1, 1, 4, 8], "dtype": "float32"}, {"shape": [1, 1, 4], "dtype": "float32"}]}],
 "outputs": [{"ref": "a", "index": 0}]}

//--- bad-mask.json
{"version": 1, "name": "bad_mask",
 "inputs": [{"name": "q", "shape": [1, 1, 8, 8], "dtype": "float32"},
            {"name": "m", "shape": [3, 8], "dtype": "float32"}],
 "nodes": [
  {"name": "a", "target": "aten._scaled_dot_product_flash_attention_for_cpu.default",
   "args": [{"ref": "q", "index": 0}, {"ref": "q", "index": 0}, {"ref": "q", "index": 0}],
   "kwargs": {"attn_mask": {"ref": "m", "index": 0}},
   "outputs": [{"shape": [1, 1, 8, 8], "dtype": "float32"}, {"shape": [1, 1, 8], "dtype": "float32"}]}],
 "outputs": [{"ref": "a", "index": 0}]}
