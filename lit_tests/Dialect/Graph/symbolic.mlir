// RUN: kiln-opt %s -split-input-file | FileCheck %s
// RUN: kiln-opt %s -split-input-file --canonicalize | FileCheck %s --check-prefix=CANON

// Symbolic dims: `?` in the type, named by the encoding's expressions over
// the graph's size symbols. Types with the same dims are the same type.
// CHECK-DAG: #[[BS:.*]] = affine_map<()[s0, s1] -> (s0, s1)>
// CHECK-DAG: #[[P:.*]] = affine_map<()[s0, s1] -> (s0 * s1)>
// CHECK-DAG: #[[B:.*]] = affine_map<()[s0] -> (s0)>
// CHECK-LABEL: func.func @symbolic
// CHECK-SAME: tensor<?x?x8xf32, #[[BS]]>
// CHECK-SAME: kiln_graph.symbols = [{max = 64 : i64, min = 2 : i64, name = "s77"}, {max = 9223372036854775807 : i64, min = 2 : i64, name = "s27"}]
// CHECK: kiln_graph.reshape %{{.*}} : tensor<?x?x8xf32, #[[BS]]> -> tensor<?x8xf32, #[[P]]>
// CHECK: kiln_graph.matmul %{{.*}}, %{{.*}} : tensor<?x8xf32, #[[P]]>, tensor<8x16xf32> -> tensor<?x16xf32, #[[P]]>
// CHECK: kiln_graph.sum %{{.*}} {dims = array<i64: 1>} : tensor<?x?x16xf32, #[[BS]]> -> tensor<?x16xf32, #[[B]]>
#b = affine_map<()[s0] -> (s0)>
#bs = affine_map<()[s0, s1] -> (s0, s1)>
#p = affine_map<()[s0, s1] -> (s0 * s1)>
func.func @symbolic(%x: tensor<?x?x8xf32, #bs>, %w: tensor<8x16xf32>) -> tensor<?x16xf32, #b>
    attributes {kiln_graph.symbols = [{name = "s77", min = 2 : i64, max = 64 : i64},
                                      {name = "s27", min = 2 : i64, max = 9223372036854775807 : i64}]} {
  %0 = kiln_graph.reshape %x : tensor<?x?x8xf32, #bs> -> tensor<?x8xf32, #p>
  %1 = kiln_graph.matmul %0, %w : tensor<?x8xf32, #p>, tensor<8x16xf32> -> tensor<?x16xf32, #p>
  %2 = kiln_graph.relu %1 : tensor<?x16xf32, #p> -> tensor<?x16xf32, #p>
  %3 = kiln_graph.reshape %2 : tensor<?x16xf32, #p> -> tensor<?x?x16xf32, #bs>
  %4 = kiln_graph.sum %3 {dims = array<i64: 1>} : tensor<?x?x16xf32, #bs> -> tensor<?x16xf32, #b>
  return %4 : tensor<?x16xf32, #b>
}

// -----

// Pointwise ops sink below reshapes between symbolic shapes too, keeping the
// symbolic dims of the reshape's input; a product written in the other order
// (s1 * s0) is the same size.
// CANON-LABEL: func.func @sink_reshape
// CANON: %[[E:.*]] = kiln_graph.exp %{{.*}} : tensor<?x?x4xf32, #{{.*}}> -> tensor<?x?x4xf32, #{{.*}}>
// CANON: kiln_graph.reshape %[[E]]
#bs = affine_map<()[s0, s1] -> (s0, s1)>
#p = affine_map<()[s0, s1] -> (s1 * s0)>
func.func @sink_reshape(%x: tensor<?x?x4xf32, #bs>) -> tensor<?x4xf32, #p>
    attributes {kiln_graph.symbols = [{name = "s0"}, {name = "s1"}]} {
  %0 = kiln_graph.reshape %x : tensor<?x?x4xf32, #bs> -> tensor<?x4xf32, #p>
  %1 = kiln_graph.exp %0 : tensor<?x4xf32, #p> -> tensor<?x4xf32, #p>
  return %1 : tensor<?x4xf32, #p>
}

// -----

// A size as a value: kiln_graph.size names its expression over the symbols.
// (The maps print as aliases; the importer's and fusion's tests check them.)
// CHECK-LABEL: func.func @size_value
// CHECK: kiln_graph.size #{{[a-z0-9]+}} : tensor<i64>
// CHECK: kiln_graph.size #{{[a-z0-9]+}} : tensor<f32>
func.func @size_value() -> (tensor<i64>, tensor<f32>) {
  %0 = kiln_graph.size affine_map<()[s0, s1] -> (s0 * s1)> : tensor<i64>
  %1 = kiln_graph.size affine_map<()[s0] -> (s0 + 2)> : tensor<f32>
  return %0, %1 : tensor<i64>, tensor<f32>
}
