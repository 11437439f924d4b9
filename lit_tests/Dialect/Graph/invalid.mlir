// RUN: kiln-opt %s -split-input-file -verify-diagnostics

func.func @constant_type_mismatch() -> tensor<3xf32> {
  // expected-error @+1 {{failed to verify that all of {value, result} have same type}}
  %0 = "kiln_graph.constant"() {value = dense<1.0> : tensor<2xf32>} : () -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @unsupported_element_type(%a: tensor<4xf8E4M3FN>) -> tensor<4xf8E4M3FN> {
  // expected-error @+1 {{operand #0 must be ranked tensor of f32, f64, f16, bf16, i64, i32, i8, ui8 or i1 values}}
  %0 = kiln_graph.relu %a : tensor<4xf8E4M3FN> -> tensor<4xf8E4M3FN>
  return %0 : tensor<4xf8E4M3FN>
}

// -----

func.func @broadcast_mismatch(%a: tensor<4x8xf32>, %b: tensor<3xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{operand shapes are not broadcast-compatible}}
  %0 = kiln_graph.add %a, %b : tensor<4x8xf32>, tensor<3xf32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @broadcast_wrong_result(%a: tensor<4x1xf32>, %b: tensor<8xf32>) -> tensor<4x1xf32> {
  // expected-error @+1 {{result shape must be the broadcast operand shape}}
  %0 = kiln_graph.mul %a, %b : tensor<4x1xf32>, tensor<8xf32> -> tensor<4x1xf32>
  return %0 : tensor<4x1xf32>
}

// -----

func.func @comparison_result_not_i1(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{comparison result must have i1 elements}}
  %0 = kiln_graph.lt %a, %b : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @comparison_mixed_operands(%a: tensor<4xf32>, %b: tensor<4xi64>) -> tensor<4xi1> {
  // expected-error @+1 {{compared operands must share an element type}}
  %0 = kiln_graph.eq %a, %b : tensor<4xf32>, tensor<4xi64> -> tensor<4xi1>
  return %0 : tensor<4xi1>
}

// -----

func.func @where_condition_not_i1(%c: tensor<4xf32>, %a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{condition must have i1 elements}}
  %0 = kiln_graph.where %c, %a, %a : tensor<4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @where_value_type(%c: tensor<4xi1>, %a: tensor<4xf32>, %b: tensor<4xi64>) -> tensor<4xf32> {
  // expected-error @+1 {{selected values must have the result element type}}
  %0 = kiln_graph.where %c, %a, %b : tensor<4xi1>, tensor<4xf32>, tensor<4xi64> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @implicit_promotion(%a: tensor<4xi64>, %b: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{operand element type 'i64' differs from the result element type 'f32'}}
  %0 = kiln_graph.add %a, %b : tensor<4xi64>, tensor<4xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @exp_of_integer(%a: tensor<4xi64>) -> tensor<4xi64> {
  // expected-error @+1 {{requires a floating-point element type}}
  %0 = kiln_graph.exp %a : tensor<4xi64> -> tensor<4xi64>
  return %0 : tensor<4xi64>
}

// -----

func.func @integer_division(%a: tensor<4xi64>) -> tensor<4xi64> {
  // expected-error @+1 {{requires a floating-point element type}}
  %0 = kiln_graph.div %a, %a : tensor<4xi64>, tensor<4xi64> -> tensor<4xi64>
  return %0 : tensor<4xi64>
}

// -----

func.func @gelu_approximate(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+2 {{expected ::kiln::graph::GeluApproximation to be one of: none, tanh}}
  // expected-error @+1 {{failed to parse Graph_GeluApproximationAttr parameter 'value' which is to be a `::kiln::graph::GeluApproximation`}}
  %0 = kiln_graph.gelu %a {approximate = #kiln_graph.gelu_approximation<erf>} : tensor<4xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @reduce_dim_out_of_range(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{dim 2 is out of range for rank 2}}
  %0 = kiln_graph.sum %a {dims = array<i64: 2>} : tensor<4x8xf32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @reduce_negative_dim_out_of_range(%a: tensor<4x8xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{dim -3 is out of range for rank 2}}
  %0 = kiln_graph.amax %a {dims = array<i64: -3>} : tensor<4x8xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @reduce_duplicate_dim(%a: tensor<4x8xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{dim -1 appears more than once}}
  %0 = kiln_graph.sum %a {dims = array<i64: 1, -1>} : tensor<4x8xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @reduce_wrong_result_shape(%a: tensor<4x8xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{result shape does not match the reduction of the input}}
  %0 = kiln_graph.sum %a {dims = array<i64: 1>, keepdim = true} : tensor<4x8xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @reduce_all_dims_wrong_result_shape(%a: tensor<4x8xf32>) -> tensor<1xf32> {
  // expected-error @+1 {{result shape does not match the reduction of the input}}
  %0 = kiln_graph.sum %a {dims = array<i64>} : tensor<4x8xf32> -> tensor<1xf32>
  return %0 : tensor<1xf32>
}

// -----

func.func @reduce_element_type(%a: tensor<4x8xf32>) -> tensor<4xf64> {
  // expected-error @+1 {{result element type must match the input}}
  %0 = kiln_graph.sum %a {dims = array<i64: 1>} : tensor<4x8xf32> -> tensor<4xf64>
  return %0 : tensor<4xf64>
}

// -----

func.func @mean_of_integer(%a: tensor<4x8xi64>) -> tensor<4xi64> {
  // expected-error @+1 {{requires a floating-point element type}}
  %0 = kiln_graph.mean %a {dims = array<i64: 1>} : tensor<4x8xi64> -> tensor<4xi64>
  return %0 : tensor<4xi64>
}

// -----

func.func @softmax_dim(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{dim 2 is out of range for rank 2}}
  %0 = kiln_graph.softmax %a {dim = 2 : i64} : tensor<4x8xf32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @log_softmax_negative_dim(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{dim -3 is out of range for rank 2}}
  %0 = kiln_graph.log_softmax %a {dim = -3 : i64} : tensor<4x8xf32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @softmax_result_type(%a: tensor<4x8xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{result type must match the input type}}
  %0 = kiln_graph.softmax %a {dim = 1 : i64} : tensor<4x8xf32> -> tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}

// -----

func.func @softmax_integer(%a: tensor<4x8xi64>) -> tensor<4x8xi64> {
  // expected-error @+1 {{requires a floating-point element type}}
  %0 = kiln_graph.softmax %a {dim = 1 : i64} : tensor<4x8xi64> -> tensor<4x8xi64>
  return %0 : tensor<4x8xi64>
}

// -----

func.func @layer_norm_rank(%x: tensor<2x4xf32>, %w: tensor<2x4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{normalized_rank must be in [1, input rank]}}
  %y:3 = kiln_graph.layer_norm %x, %w, %w {normalized_rank = 3 : i64, eps = 1.0e-5 : f64}
      : tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x4xf32>, tensor<1x1xf32>, tensor<1x1xf32>
  return %y#0 : tensor<2x4xf32>
}

// -----

func.func @layer_norm_weight_shape(%x: tensor<2x4xf32>, %w: tensor<2x4xf32>, %b: tensor<4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{weight and bias must have the normalized shape and the input element type}}
  %y:3 = kiln_graph.layer_norm %x, %w, %b {normalized_rank = 1 : i64, eps = 1.0e-5 : f64}
      : tensor<2x4xf32>, tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32>, tensor<2x1xf32>, tensor<2x1xf32>
  return %y#0 : tensor<2x4xf32>
}

// -----

func.func @layer_norm_bias_element_type(%x: tensor<2x4xf32>, %w: tensor<4xf32>, %b: tensor<4xf64>) -> tensor<2x4xf32> {
  // expected-error @+1 {{weight and bias must have the normalized shape and the input element type}}
  %y:3 = kiln_graph.layer_norm %x, %w, %b {normalized_rank = 1 : i64, eps = 1.0e-5 : f64}
      : tensor<2x4xf32>, tensor<4xf32>, tensor<4xf64> -> tensor<2x4xf32>, tensor<2x1xf32>, tensor<2x1xf32>
  return %y#0 : tensor<2x4xf32>
}

// -----

func.func @layer_norm_result_type(%x: tensor<2x4xf32>, %w: tensor<4xf32>) -> tensor<2x4xf64> {
  // expected-error @+1 {{result type must match the input type}}
  %y:3 = kiln_graph.layer_norm %x, %w, %w {normalized_rank = 1 : i64, eps = 1.0e-5 : f64}
      : tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<2x4xf64>, tensor<2x1xf32>, tensor<2x1xf32>
  return %y#0 : tensor<2x4xf64>
}

// -----

func.func @layer_norm_stat_shape(%x: tensor<2x4xf32>, %w: tensor<4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{mean and rstd must keep the normalized dims as size 1}}
  %y:3 = kiln_graph.layer_norm %x, %w, %w {normalized_rank = 1 : i64, eps = 1.0e-5 : f64}
      : tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<2x4xf32>, tensor<2xf32>, tensor<2xf32>
  return %y#0 : tensor<2x4xf32>
}

// -----

func.func @layer_norm_integer(%x: tensor<2x4xi64>, %w: tensor<4xi64>) -> tensor<2x4xi64> {
  // expected-error @+1 {{requires a floating-point element type}}
  %y:3 = kiln_graph.layer_norm %x, %w, %w {normalized_rank = 1 : i64, eps = 1.0e-5 : f64}
      : tensor<2x4xi64>, tensor<4xi64>, tensor<4xi64> -> tensor<2x4xi64>, tensor<2x1xi64>, tensor<2x1xi64>
  return %y#0 : tensor<2x4xi64>
}

// -----

func.func @matmul_rank(%a: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<f32> {
  // expected-error @+1 {{operands and result must all be rank 2 (mm) or rank 3 (bmm)}}
  %0 = kiln_graph.matmul %a, %b : tensor<8xf32>, tensor<8xf32> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @matmul_mixed_rank(%a: tensor<2x4x8xf32>, %b: tensor<8x16xf32>) -> tensor<2x4x16xf32> {
  // expected-error @+1 {{operands and result must all be rank 2 (mm) or rank 3 (bmm)}}
  %0 = kiln_graph.matmul %a, %b : tensor<2x4x8xf32>, tensor<8x16xf32> -> tensor<2x4x16xf32>
  return %0 : tensor<2x4x16xf32>
}

// -----

func.func @matmul_k_mismatch(%a: tensor<4x8xf32>, %b: tensor<7x16xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{contraction sizes differ: 8 vs 7}}
  %0 = kiln_graph.matmul %a, %b : tensor<4x8xf32>, tensor<7x16xf32> -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

// With transpose_rhs the contraction dim of the right operand is its last.
func.func @matmul_transpose_rhs_k_mismatch(%a: tensor<4x8xf32>, %w: tensor<8x16xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{contraction sizes differ: 8 vs 16}}
  %0 = kiln_graph.matmul %a, %w {transpose_rhs = true} : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @matmul_transpose_rhs_result(%a: tensor<4x8xf32>, %w: tensor<16x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{result shape must be [..., M, N]}}
  %0 = kiln_graph.matmul %a, %w {transpose_rhs = true} : tensor<4x8xf32>, tensor<16x8xf32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @matmul_batch_mismatch(%a: tensor<2x4x8xf32>, %b: tensor<3x8x16xf32>) -> tensor<2x4x16xf32> {
  // expected-error @+1 {{batch sizes differ}}
  %0 = kiln_graph.matmul %a, %b : tensor<2x4x8xf32>, tensor<3x8x16xf32> -> tensor<2x4x16xf32>
  return %0 : tensor<2x4x16xf32>
}

// -----

func.func @matmul_result_shape(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{result shape must be [..., M, N]}}
  %0 = kiln_graph.matmul %a, %b : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @matmul_element_types(%a: tensor<4x8xf32>, %b: tensor<8x16xf64>) -> tensor<4x16xf32> {
  // expected-error @+1 {{element types must match}}
  %0 = kiln_graph.matmul %a, %b : tensor<4x8xf32>, tensor<8x16xf64> -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

func.func @matmul_mixed_halves(%a: tensor<4x8xf16>, %b: tensor<8x16xbf16>) -> tensor<4x16xf32> {
  // expected-error @+1 {{element types must match (or be float16 or bfloat16 operands with a float32 result)}}
  %0 = kiln_graph.matmul %a, %b : tensor<4x8xf16>, tensor<8x16xbf16> -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

func.func @matmul_f32_to_half(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>) -> tensor<4x16xf16> {
  // expected-error @+1 {{element types must match}}
  %0 = kiln_graph.matmul %a, %b : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf16>
  return %0 : tensor<4x16xf16>
}

// -----

func.func @reshape_element_count(%a: tensor<2x3xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{element count changes from 6 to 8}}
  %0 = kiln_graph.reshape %a : tensor<2x3xf32> -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

func.func @reshape_element_type(%a: tensor<2x3xf32>) -> tensor<6xi64> {
  // expected-error @+1 {{element type must not change}}
  %0 = kiln_graph.reshape %a : tensor<2x3xf32> -> tensor<6xi64>
  return %0 : tensor<6xi64>
}

// -----

func.func @permute_wrong_length(%a: tensor<2x3xf32>) -> tensor<3x2xf32> {
  // expected-error @+1 {{dims must list every input dim once}}
  %0 = kiln_graph.permute %a {dims = array<i64: 1, 0, 2>} : tensor<2x3xf32> -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

func.func @permute_not_a_permutation(%a: tensor<2x3xf32>) -> tensor<3x3xf32> {
  // expected-error @+1 {{dims must be a permutation of [0, rank)}}
  %0 = kiln_graph.permute %a {dims = array<i64: 1, 1>} : tensor<2x3xf32> -> tensor<3x3xf32>
  return %0 : tensor<3x3xf32>
}

// -----

func.func @permute_negative_dim(%a: tensor<2x3xf32>) -> tensor<3x2xf32> {
  // expected-error @+1 {{dims must be a permutation of [0, rank)}}
  %0 = kiln_graph.permute %a {dims = array<i64: -1, 0>} : tensor<2x3xf32> -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

func.func @permute_result_type(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{result type does not match the permuted input}}
  %0 = kiln_graph.permute %a {dims = array<i64: 1, 0>} : tensor<2x3xf32> -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @expand_lower_rank(%a: tensor<2x3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{cannot expand to a lower rank}}
  %0 = kiln_graph.expand %a : tensor<2x3xf32> -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @expand_illegal(%a: tensor<3x1xf32>) -> tensor<2x4x5xf32> {
  // expected-error @+1 {{input dim 0 of size 3 cannot expand to 4}}
  %0 = kiln_graph.expand %a : tensor<3x1xf32> -> tensor<2x4x5xf32>
  return %0 : tensor<2x4x5xf32>
}

// -----

func.func @expand_element_type(%a: tensor<1xf32>) -> tensor<4xf64> {
  // expected-error @+1 {{element type must not change}}
  %0 = kiln_graph.expand %a : tensor<1xf32> -> tensor<4xf64>
  return %0 : tensor<4xf64>
}

// -----

func.func @slice_rank(%a: tensor<4x8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{result rank must equal the (non-zero) input rank}}
  %0 = kiln_graph.slice %a {dim = 0 : i64, start = 0 : i64, step = 1 : i64} : tensor<4x8xf32> -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

func.func @slice_dim(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{dim out of range}}
  %0 = kiln_graph.slice %a {dim = 2 : i64, start = 0 : i64, step = 1 : i64} : tensor<4x8xf32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @slice_step(%a: tensor<4x8xf32>) -> tensor<4x2xf32> {
  // expected-error @+1 {{step must be positive}}
  %0 = kiln_graph.slice %a {dim = 1 : i64, start = 0 : i64, step = 0 : i64} : tensor<4x8xf32> -> tensor<4x2xf32>
  return %0 : tensor<4x2xf32>
}

// -----

func.func @slice_past_end(%a: tensor<4x8xf32>) -> tensor<4x3xf32> {
  // 2 + (3 - 1) * 3 = 8 is past the last index 7.
  // expected-error @+1 {{slice reads past the end of dim 1}}
  %0 = kiln_graph.slice %a {dim = 1 : i64, start = 2 : i64, step = 3 : i64} : tensor<4x8xf32> -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

func.func @slice_negative_start(%a: tensor<4x8xf32>) -> tensor<4x2xf32> {
  // expected-error @+1 {{slice reads past the end of dim 1}}
  %0 = kiln_graph.slice %a {dim = 1 : i64, start = -1 : i64, step = 1 : i64} : tensor<4x8xf32> -> tensor<4x2xf32>
  return %0 : tensor<4x2xf32>
}

// -----

func.func @slice_other_dim_changes(%a: tensor<4x8xf32>) -> tensor<3x2xf32> {
  // expected-error @+1 {{only dim 1 may change size}}
  %0 = kiln_graph.slice %a {dim = 1 : i64, start = 0 : i64, step = 1 : i64} : tensor<4x8xf32> -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

func.func @concat_no_inputs() -> tensor<0xf32> {
  // expected-error @+1 {{needs at least one input}}
  %0 = "kiln_graph.concat"() {dim = 0 : i64} : () -> tensor<0xf32>
  return %0 : tensor<0xf32>
}

// -----

func.func @concat_dim(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{dim out of range}}
  %0 = kiln_graph.concat %a {dim = 2 : i64} : tensor<2x3xf32> -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @concat_element_type(%a: tensor<2x3xf32>, %b: tensor<2x3xi64>) -> tensor<4x3xf32> {
  // expected-error @+1 {{inputs must match the result rank and element type}}
  %0 = kiln_graph.concat %a, %b {dim = 0 : i64} : tensor<2x3xf32>, tensor<2x3xi64> -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

func.func @concat_mismatch(%a: tensor<2x3xf32>, %b: tensor<2x4xf32>) -> tensor<4x3xf32> {
  // expected-error @+1 {{inputs differ from the result outside dim 0}}
  %0 = kiln_graph.concat %a, %b {dim = 0 : i64} : tensor<2x3xf32>, tensor<2x4xf32> -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

func.func @concat_sum(%a: tensor<2x3xf32>, %b: tensor<2x4xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{result dim 1 must be the sum of the inputs'}}
  %0 = kiln_graph.concat %a, %b {dim = 1 : i64} : tensor<2x3xf32>, tensor<2x4xf32> -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

func.func @embedding_weight_rank(%w: tensor<10xf32>, %i: tensor<3xi64>) -> tensor<3x1xf32> {
  // expected-error @+1 {{weight must be rank 2}}
  %0 = kiln_graph.embedding %w, %i : tensor<10xf32>, tensor<3xi64> -> tensor<3x1xf32>
  return %0 : tensor<3x1xf32>
}

// -----

func.func @embedding_indices_not_i64(%w: tensor<10x4xf32>, %i: tensor<3xi32>) -> tensor<3x4xf32> {
  // expected-error @+1 {{indices must be i64}}
  %0 = kiln_graph.embedding %w, %i : tensor<10x4xf32>, tensor<3xi32> -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// -----

func.func @embedding_result_shape(%w: tensor<10x4xf32>, %i: tensor<3xi64>) -> tensor<3x10xf32> {
  // expected-error @+1 {{result must be indices shape + [embedding dim]}}
  %0 = kiln_graph.embedding %w, %i : tensor<10x4xf32>, tensor<3xi64> -> tensor<3x10xf32>
  return %0 : tensor<3x10xf32>
}

// -----

func.func @sin_of_integer(%a: tensor<4xi64>) -> tensor<4xi64> {
  // expected-error @+1 {{requires a floating-point element type}}
  %0 = kiln_graph.sin %a : tensor<4xi64> -> tensor<4xi64>
  return %0 : tensor<4xi64>
}

// -----

func.func @minimum_of_mixed_types(%a: tensor<4xf32>, %b: tensor<4xi64>) -> tensor<4xf32> {
  // expected-error @+1 {{operand element type 'i64' differs from the result element type 'f32'}}
  %0 = kiln_graph.minimum %a, %b : tensor<4xf32>, tensor<4xi64> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @log1p_of_bool(%a: tensor<4xi1>) -> tensor<4xi1> {
  // expected-error @+1 {{requires a floating-point element type}}
  %0 = kiln_graph.log1p %a : tensor<4xi1> -> tensor<4xi1>
  return %0 : tensor<4xi1>
}

// -----

func.func @bitwise_of_floats(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{requires an integer or bool element type}}
  %0 = kiln_graph.bitwise_and %a, %a : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @any_of_floats(%a: tensor<4xf32>) -> tensor<f32> {
  // expected-error @+1 {{requires a bool (i1) element type}}
  %0 = kiln_graph.any %a {dims = array<i64>} : tensor<4xf32> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @assert_of_a_vector(%a: tensor<4xi1>) {
  // expected-error @+1 {{condition must be a tensor<i1>}}
  kiln_graph.assert %a {message = "m"} : tensor<4xi1>
  return
}

// -----

func.func @assert_of_unknown_kind(%a: tensor<i1>) {
  // expected-error @+2 {{expected ::kiln::graph::CheckKind to be one of: index, runtime}}
  // expected-error @+1 {{failed to parse Graph_CheckKindAttr parameter 'value' which is to be a `::kiln::graph::CheckKind`}}
  kiln_graph.assert %a {kind = #kiln_graph.check_kind<oops>, message = "m"} : tensor<i1>
  return
}

// -----

func.func @iota_attribute_type() -> tensor<4xi64> {
  // expected-error @+1 {{start and step must be 'i64' attributes for 'i64' results}}
  %0 = kiln_graph.iota {start = 0.0 : f64, step = 1.0 : f64} : tensor<4xi64>
  return %0 : tensor<4xi64>
}

// -----

func.func @pad_shape(%a: tensor<4xf32>) -> tensor<5xf32> {
  // expected-error @+1 {{result dim 0 must be the input's plus low and high}}
  %0 = kiln_graph.pad %a {low = array<i64: 1>, high = array<i64: 1>, value = 0.0 : f64} : tensor<4xf32> -> tensor<5xf32>
  return %0 : tensor<5xf32>
}

// -----

func.func @index_not_adjacent(%a: tensor<4x5x6xf32>, %i: tensor<3xi64>) -> tensor<4x3xf32> {
  // Non-adjacent indexed dims put the broadcast dims in front: 3x5.
  // expected-error @+1 {{result must be 'tensor<3x5xf32>'}}
  %0 = kiln_graph.index %a[%i, %i] {indexed_dims = array<i64: 0, 2>} : tensor<4x5x6xf32>, tensor<3xi64>, tensor<3xi64> -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

func.func @index_of_i32(%a: tensor<4xf32>, %i: tensor<3xi32>) -> tensor<3xf32> {
  // expected-error @+1 {{index tensors must be i64}}
  %0 = kiln_graph.index %a[%i] {indexed_dims = array<i64: 0>} : tensor<4xf32>, tensor<3xi32> -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @gather_index_too_wide(%a: tensor<4x5xf32>, %i: tensor<6x2xi64>) -> tensor<6x2xf32> {
  // expected-error @+1 {{index dim 0 is larger than the input's}}
  %0 = kiln_graph.gather %a[%i] {dim = 1 : i64} : tensor<4x5xf32>, tensor<6x2xi64> -> tensor<6x2xf32>
  return %0 : tensor<6x2xf32>
}

// -----

func.func @cumsum_dim(%a: tensor<4x5xf32>) -> tensor<4x5xf32> {
  // expected-error @+1 {{dim must be in [0, rank)}}
  %0 = kiln_graph.cumsum %a {dim = 2 : i64} : tensor<4x5xf32> -> tensor<4x5xf32>
  return %0 : tensor<4x5xf32>
}

// -----

func.func @div_round_mode(%a: tensor<4xi64>) -> tensor<4xi64> {
  // expected-error @+2 {{expected ::kiln::graph::RoundingMode to be one of: trunc, floor}}
  // expected-error @+1 {{failed to parse Graph_RoundingModeAttr parameter 'value' which is to be a `::kiln::graph::RoundingMode`}}
  %0 = kiln_graph.div_round %a, %a {rounding_mode = #kiln_graph.rounding_mode<ceil>} : tensor<4xi64>, tensor<4xi64> -> tensor<4xi64>
  return %0 : tensor<4xi64>
}

// -----

func.func @atan2_integer(%a: tensor<4xi64>) -> tensor<4xi64> {
  // expected-error @+1 {{requires a floating-point element type}}
  %0 = kiln_graph.atan2 %a, %a : tensor<4xi64>, tensor<4xi64> -> tensor<4xi64>
  return %0 : tensor<4xi64>
}

// -----

func.func @argmax_result_type(%a: tensor<4x5xf32>) -> tensor<4xi32> {
  // expected-error @+1 {{result must be i64, shaped as the input reduced over dim}}
  %0 = kiln_graph.argmax %a {dim = 1 : i64} : tensor<4x5xf32> -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

func.func @argmax_empty_dim(%a: tensor<4x0xf32>) -> tensor<4xi64> {
  // expected-error @+1 {{cannot reduce an empty dim}}
  %0 = kiln_graph.argmax %a {dim = 1 : i64} : tensor<4x0xf32> -> tensor<4xi64>
  return %0 : tensor<4xi64>
}

// -----

func.func @argmin_dim(%a: tensor<4x5xf32>) -> tensor<4xi64> {
  // expected-error @+1 {{dim must be in [0, rank)}}
  %0 = kiln_graph.argmin %a {dim = 2 : i64} : tensor<4x5xf32> -> tensor<4xi64>
  return %0 : tensor<4xi64>
}

// -----

func.func @scatter_reduce_kind(%x: tensor<4xf32>, %i: tensor<2xi64>, %s: tensor<2xf32>) -> tensor<4xf32> {
  // expected-error @+2 {{expected ::kiln::graph::ScatterReduction to be one of: none, sum, prod, amax, amin}}
  // expected-error @+1 {{failed to parse Graph_ScatterReductionAttr parameter 'value' which is to be a `::kiln::graph::ScatterReduction`}}
  %0 = kiln_graph.scatter %x[%i], %s {dim = 0 : i64, reduce = #kiln_graph.scatter_reduction<mean>} : tensor<4xf32>, tensor<2xi64>, tensor<2xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @scatter_src_shape(%x: tensor<4xf32>, %i: tensor<2xi64>, %s: tensor<3xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{src must have the index's shape and the input's element type}}
  %0 = kiln_graph.scatter %x[%i], %s {dim = 0 : i64} : tensor<4xf32>, tensor<2xi64>, tensor<3xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @scatter_index_too_large(%x: tensor<4x2xf32>, %i: tensor<2x3xi64>, %s: tensor<2x3xf32>) -> tensor<4x2xf32> {
  // expected-error @+1 {{index dim 1 is larger than the input's}}
  %0 = kiln_graph.scatter %x[%i], %s {dim = 0 : i64} : tensor<4x2xf32>, tensor<2x3xi64>, tensor<2x3xf32> -> tensor<4x2xf32>
  return %0 : tensor<4x2xf32>
}

// -----

func.func @attention_heads(%q: tensor<1x3x4x8xf32>, %k: tensor<1x2x4x8xf32>) {
  // expected-error @+1 {{key and value heads must be equal and divide the query heads (3 query heads, 2 key, 2 value)}}
  %0:2 = kiln_graph.attention %q, %k, %k {scale = 1.0 : f64} : tensor<1x3x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32> -> tensor<1x3x4x8xf32>, tensor<1x3x4xf32>
  return
}

// -----

func.func @attention_head_size(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x16xf32>) {
  // expected-error @+1 {{query and key head sizes differ: 8 vs 16}}
  %0:2 = kiln_graph.attention %q, %k, %k {scale = 1.0 : f64} : tensor<1x2x4x8xf32>, tensor<1x2x4x16xf32>, tensor<1x2x4x16xf32> -> tensor<1x2x4x16xf32>, tensor<1x2x4xf32>
  return
}

// -----

func.func @attention_mask(%q: tensor<1x2x4x8xf32>, %m: tensor<1x1x3x4xf32>) {
  // expected-error @+1 {{mask dim 2 must be 1 or 4, got 3}}
  %0:2 = kiln_graph.attention %q, %q, %q mask %m {scale = 1.0 : f64} : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x1x3x4xf32> -> tensor<1x2x4x8xf32>, tensor<1x2x4xf32>
  return
}

// -----

func.func @attention_integer(%q: tensor<1x2x4x8xi64>) {
  // expected-error @+1 {{requires a floating-point element type}}
  %0:2 = kiln_graph.attention %q, %q, %q {scale = 1.0 : f64} : tensor<1x2x4x8xi64>, tensor<1x2x4x8xi64>, tensor<1x2x4x8xi64> -> tensor<1x2x4x8xi64>, tensor<1x2x4xi64>
  return
}

// -----

func.func @attention_logsumexp(%q: tensor<1x2x4x8xf32>) {
  // expected-error @+1 {{logsumexp must be [B, H, L] of the query's element type}}
  %0:2 = kiln_graph.attention %q, %q, %q {scale = 1.0 : f64} : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32> -> tensor<1x2x4x8xf32>, tensor<1x2x8xf32>
  return
}

// -----

func.func @attention_half_logsumexp(%q: tensor<1x2x4x8xf16>) {
  // expected-error @+1 {{logsumexp must be [B, H, L] of the query's element type (float32 for a float16 or bfloat16 query, as ATen's)}}
  %0:2 = kiln_graph.attention %q, %q, %q {scale = 1.0 : f64} : tensor<1x2x4x8xf16>, tensor<1x2x4x8xf16>, tensor<1x2x4x8xf16> -> tensor<1x2x4x8xf16>, tensor<1x2x4xf16>
  return
}

// -----

func.func @conv2d_channels(%x: tensor<1x3x8x8xf32>, %w: tensor<4x2x3x3xf32>) {
  // expected-error @+1 {{weight has 2 input channels per group (1 groups), input 3}}
  %0 = kiln_graph.conv2d %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>} : tensor<1x3x8x8xf32>, tensor<4x2x3x3xf32> -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @conv2d_result(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+1 {{result must be [N, O, OH, OW] = [1, 4, 3, 6]}}
  %0 = kiln_graph.conv2d %x, %w {strides = array<i64: 2, 1>, dilations = array<i64: 1, 1>} : tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @conv2d_kernel_too_large(%x: tensor<1x3x4x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+1 {{kernel extent 5 exceeds the input size 4}}
  %0 = kiln_graph.conv2d %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 2, 1>} : tensor<1x3x4x8xf32>, tensor<4x3x3x3xf32> -> tensor<1x4x1x6xf32>
  return
}

// -----

func.func @conv2d_bias(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<3xf32>) {
  // expected-error @+1 {{bias must be [O] of the input's element type}}
  %0 = kiln_graph.conv2d %x, %w bias %b {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>} : tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<3xf32> -> tensor<1x4x6x6xf32>
  return
}

// -----

// A `?` dim must be named: a symbolic type carries its dims' expressions.
func.func @unnamed_dynamic_dim(%x: tensor<4xf32>) -> tensor<?xf32> {
  // expected-error @+1 {{result #0 must be ranked tensor of f32, f64, f16, bf16, i64, i32, i8, ui8 or i1 values whose `?` dims are named by an affine-map encoding over the graph's size symbols}}
  %0 = kiln_graph.reshape %x : tensor<4xf32> -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

// One expression per `?` dim, and none of them a constant (that is a static dim).
#two = affine_map<()[s0] -> (s0, s0)>
func.func @expression_count(%x: tensor<?x4xf32, #two>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of f32}}
  %0 = kiln_graph.exp %x : tensor<?x4xf32, #two> -> tensor<?x4xf32, #two>
  return
}

// -----

#s0 = affine_map<()[s0] -> (s0 * 4)>
#s1 = affine_map<()[s0] -> (s0 * 2)>
func.func @symbolic_count_changes(%x: tensor<?xf32, #s0>) {
  // expected-error @+1 {{element count changes from affine_map<()[s0] -> (s0 * 4)> to affine_map<()[s0] -> (s0 * 2)>}}
  %0 = kiln_graph.reshape %x : tensor<?xf32, #s0> -> tensor<?xf32, #s1>
  return
}

// -----

// Symbolic lengths compare as symbols: keys of length s1 and values of
// length s2 are not known to agree.
#bl = affine_map<()[s0, s1] -> (s0, s1)>
#bv = affine_map<()[s0, s1, s2] -> (s0, s2)>
func.func @attention_symbolic_lengths(%q: tensor<?x2x?x8xf32, #bl>, %v: tensor<?x2x?x8xf32, #bv>) {
  // expected-error @+1 {{key and value lengths differ: s1 vs s2}}
  %0:2 = kiln_graph.attention %q, %q, %v {scale = 1.0 : f64} : tensor<?x2x?x8xf32, #bl>, tensor<?x2x?x8xf32, #bl>, tensor<?x2x?x8xf32, #bv> -> tensor<?x2x?x8xf32, #bl>, tensor<?x2x?xf32, #bl>
  return
}

// -----

#m0 = affine_map<()[s0] -> (s0)>
#m1 = affine_map<()[s0, s1] -> (s1)>
func.func @matmul_symbolic_contraction(%a: tensor<4x?xf32, #m0>, %b: tensor<?x3xf32, #m1>) {
  // expected-error @+1 {{contraction sizes differ: s0 vs s1}}
  %0 = kiln_graph.matmul %a, %b : tensor<4x?xf32, #m0>, tensor<?x3xf32, #m1> -> tensor<4x3xf32>
  return
}

// -----

func.func @size_with_dims() -> tensor<i64> {
  // expected-error @+1 {{size must be one expression over the size symbols (no dims)}}
  %0 = kiln_graph.size affine_map<(d0)[s0] -> (s0 + d0)> : tensor<i64>
  return %0 : tensor<i64>
}

// -----

// Only a convolution's batch may be symbolic.
#hw = affine_map<()[s0] -> (s0)>
func.func @conv2d_symbolic_width(%x: tensor<1x3x8x?xf32, #hw>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+1 {{only the batch may be symbolic}}
  %0 = kiln_graph.conv2d %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>} : tensor<1x3x8x?xf32, #hw>, tensor<4x3x3x3xf32> -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @conv2d_groups_do_not_divide(%x: tensor<1x4x8x8xf32>, %w: tensor<6x1x3x3xf32>) {
  // expected-error @+1 {{groups must be positive and divide the 6 output channels, got 4}}
  %0 = kiln_graph.conv2d %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, groups = 4 : i64} : tensor<1x4x8x8xf32>, tensor<6x1x3x3xf32> -> tensor<1x6x6x6xf32>
  return
}

// -----

func.func @sort_dim(%a: tensor<4x5xf32>) -> tensor<4x5xi64> {
  // expected-error @+1 {{dim must be in [0, rank)}}
  %0:2 = kiln_graph.sort %a {dim = 2 : i64} : tensor<4x5xf32> -> tensor<4x5xf32>, tensor<4x5xi64>
  return %0#1 : tensor<4x5xi64>
}

// -----

func.func @sort_indices_type(%a: tensor<4x5xf32>) -> tensor<4x5xi32> {
  // expected-error @+1 {{indices must be i64 of the values' shape}}
  %0:2 = kiln_graph.sort %a {dim = 1 : i64} : tensor<4x5xf32> -> tensor<4x5xf32>, tensor<4x5xi32>
  return %0#1 : tensor<4x5xi32>
}

// -----

func.func @sort_k_too_large(%a: tensor<4x5xf32>) -> tensor<4x6xi64> {
  // expected-error @+1 {{k must be in [0, the sorted dim's size]}}
  %0:2 = kiln_graph.sort %a {dim = 1 : i64, k = 6 : i64} : tensor<4x5xf32> -> tensor<4x6xf32>, tensor<4x6xi64>
  return %0#1 : tensor<4x6xi64>
}

// -----

func.func @sort_k_shape(%a: tensor<4x5xf32>) -> tensor<4x5xi64> {
  // expected-error @+1 {{values must have the input's type (k along dim with k)}}
  %0:2 = kiln_graph.sort %a {dim = 1 : i64, k = 2 : i64} : tensor<4x5xf32> -> tensor<4x5xf32>, tensor<4x5xi64>
  return %0#1 : tensor<4x5xi64>
}

// -----

func.func @collective_gather_rows(%x: tensor<4x8xf32>) -> tensor<6x8xf32> {
  // expected-error @+1 {{over 2 ranks cannot turn 'tensor<4x8xf32>' into 'tensor<6x8xf32>'}}
  %0 = kiln_graph.collective %x {kind = #kiln_graph.collective<all_gather>, group = "0", group_size = 2} : tensor<4x8xf32> -> tensor<6x8xf32>
  return %0 : tensor<6x8xf32>
}

// -----

func.func @collective_without_group(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{names no process group}}
  %0 = kiln_graph.collective %x {kind = #kiln_graph.collective<all_reduce>, group = "", group_size = 0} : tensor<4xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @collective_gather_no_ranks(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{needs at least one rank, got group_size = 0}}
  %0 = kiln_graph.collective %x {kind = #kiln_graph.collective<all_gather>, group = "0", group_size = 0} : tensor<4xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @collective_changes_type(%x: tensor<4xf32>) -> tensor<4xf16> {
  // expected-error @+1 {{changes the element type}}
  %0 = kiln_graph.collective %x {kind = #kiln_graph.collective<all_reduce>, group = "0", group_size = 0} : tensor<4xf32> -> tensor<4xf16>
  return %0 : tensor<4xf16>
}
