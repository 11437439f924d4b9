// RUN: kiln-opt %s -split-input-file -verify-diagnostics

func.func @argument_count(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{body must take one argument per input}}
  %0 = kiln_kernel.kernel "k" extent(4) ins(%x : tensor<4xf32>) -> (tensor<4xf32>) {
    %c = kiln_graph.constant dense<1.0> : tensor<4xf32>
    kiln_kernel.yield %c : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

func.func @argument_type(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{body argument types must match the input types}}
  %0 = kiln_kernel.kernel "k" extent(4) ins(%x : tensor<4xf32>) -> (tensor<4xf32>) {
  ^bb0(%a: tensor<4xf64>):
    %c = kiln_graph.constant dense<1.0> : tensor<4xf32>
    kiln_kernel.yield %c : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

func.func @yield_types(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{yielded types must match the result types}}
  %0 = kiln_kernel.kernel "k" extent(4) ins(%x : tensor<4xf32>) -> (tensor<4xf32>) {
  ^bb0(%a: tensor<4xf32>):
    %s = kiln_graph.sum %a {dims = array<i64>} : tensor<4xf32> -> tensor<f32>
    kiln_kernel.yield %s : tensor<f32>
  }
  return %0 : tensor<4xf32>
}

// -----

func.func @yield_count(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{yielded types must match the result types}}
  %0 = kiln_kernel.kernel "k" extent(4) ins(%x : tensor<4xf32>) -> (tensor<4xf32>) {
  ^bb0(%a: tensor<4xf32>):
    kiln_kernel.yield
  }
  return %0 : tensor<4xf32>
}

// -----

func.func @negative_extent(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{workgroup_extent must be non-negative}}
  %0 = kiln_kernel.kernel "k" extent(-1) ins(%x : tensor<4xf32>) -> (tensor<4xf32>) {
  ^bb0(%a: tensor<4xf32>):
    kiln_kernel.yield %a : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

func.func @isolated_from_above(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-note @+1 {{required by region isolation constraints}}
  %0 = kiln_kernel.kernel "k" extent(4) -> (tensor<4xf32>) {
    // expected-error @+1 {{using value defined outside the region}}
    %1 = kiln_graph.neg %x : tensor<4xf32> -> tensor<4xf32>
    kiln_kernel.yield %1 : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

func.func @yield_outside_kernel(%x: tensor<4xf32>) {
  // expected-error @+1 {{expects parent op 'kiln_kernel.kernel'}}
  kiln_kernel.yield %x : tensor<4xf32>
}

// -----

func.func @unranked_input(%x: tensor<*xf32>) {
  // expected-error @+1 {{operand #0 must be variadic of ranked tensor of any type values}}
  "kiln_kernel.kernel"(%x) ({
  ^bb0(%a: tensor<*xf32>):
    kiln_kernel.yield
  }) {kernel_name = "k", workgroup_extent = 0 : i64} : (tensor<*xf32>) -> ()
  return
}

// -----

func.func @attention_mixed(%q: tensor<1x2x4x8xf32>, %o: memref<1x2x4x8xf32>, %l: memref<1x2x4xf32>) {
  // expected-error @+1 {{operands must be all ranked tensors or all memrefs}}
  kiln_kernel.attention %q, %q, %q into %o, %l {scale = 0.5 : f64, is_causal = false} : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32> into memref<1x2x4x8xf32>, memref<1x2x4xf32>
  return
}

// -----

func.func @attention_results(%q: memref<1x2x4x8xf32>, %l: memref<1x2x4xf32>) {
  // expected-error @+1 {{returns its inits on tensors and nothing on buffers}}
  %0:2 = kiln_kernel.attention %q, %q, %q into %q, %l {scale = 0.5 : f64, is_causal = false} : memref<1x2x4x8xf32>, memref<1x2x4x8xf32>, memref<1x2x4x8xf32> into memref<1x2x4x8xf32>, memref<1x2x4xf32> -> tensor<1x2x4x8xf32>, tensor<1x2x4xf32>
  return
}

// -----

func.func @conv2d_epilogue_maps(%x: memref<1x3x8x8xf32>, %w: memref<4x3x3x3xf32>, %b: memref<4xf32>, %o: memref<1x4x6x6xf32>) {
  // expected-error @+1 {{needs one epilogue map per epilogue input (1 inputs, 0 maps)}}
  kiln_kernel.conv2d %x, %w epilogue(%b : memref<4xf32>) into %o {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>} : memref<1x3x8x8xf32>, memref<4x3x3x3xf32> into memref<1x4x6x6xf32> {
  ^bb0(%v: f32, %c: f32):
    kiln_kernel.epilogue_yield %v : f32
  }
  return
}

// -----

#channel = affine_map<(d0, d1, d2, d3) -> (d1)>
func.func @conv2d_epilogue_arguments(%x: memref<1x3x8x8xf32>, %w: memref<4x3x3x3xf32>, %b: memref<4xf32>, %o: memref<1x4x6x6xf32>) {
  // expected-error @+1 {{epilogue must take the convolution's value and one element per epilogue input}}
  kiln_kernel.conv2d %x, %w epilogue(%b : memref<4xf32>) into %o {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, epilogue_maps = [#channel]} : memref<1x3x8x8xf32>, memref<4x3x3x3xf32> into memref<1x4x6x6xf32> {
  ^bb0(%v: f32):
    kiln_kernel.epilogue_yield %v : f32
  }
  return
}

// -----

#s0 = affine_map<()[s0] -> (s0)>
func.func @symbolic_extent_needs_minus_one(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{a symbolic extent is one expression over symbols, with workgroup_extent -1}}
  %0 = "kiln_kernel.kernel"(%x) ({
  ^bb0(%a: tensor<4xf32>):
    kiln_kernel.yield %a : tensor<4xf32>
  }) {kernel_name = "k", workgroup_extent = 4 : i64, symbolic_extent = #s0} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// expected-error @+1 {{'kiln_kernel.target' belongs on a module}}
func.func @target_on_a_function() attributes {kiln_kernel.target = #kiln_kernel.target<kind = "cpu", name = "cpu", format = "cpu-x86_64", triple = "x86_64-unknown-linux-gnu", chip = "x86-64", features = "", vector_bits = 128, vector_registers = 16>} {
  return
}

// -----

// expected-error @+1 {{'kiln_kernel.target' must be a #kiln_kernel.target}}
module attributes {kiln_kernel.target = "cpu"} {
}

// -----

// expected-error @+1 {{target 'cpu:odd' has vector_bits 100: a multiple of 32 (0 for no vectors)}}
module attributes {kiln_kernel.target = #kiln_kernel.target<kind = "cpu", name = "cpu:odd", format = "cpu-x86_64", triple = "x86_64-unknown-linux-gnu", chip = "x86-64", features = "", vector_bits = 100, vector_registers = 16>} {
}

// -----

// expected-error @+1 {{target 'cpu:bad' has feature 'avx2': features are written +name or -name}}
module attributes {kiln_kernel.target = #kiln_kernel.target<kind = "cpu", name = "cpu:bad", format = "cpu-x86_64", triple = "x86_64-unknown-linux-gnu", chip = "x86-64", features = "+avx,avx2", vector_bits = 256, vector_registers = 16>} {
}

// -----

// expected-error @+1 {{target 'cpu:bad' has 0 vector registers; a CPU target with vectors has at least one}}
module attributes {kiln_kernel.target = #kiln_kernel.target<kind = "cpu", name = "cpu:bad", format = "cpu-x86_64", triple = "x86_64-unknown-linux-gnu", chip = "x86-64", features = "", vector_bits = 256, vector_registers = 0>} {
}

// -----

// expected-error @+1 {{a target needs a kind, a name and an executable format}}
module attributes {kiln_kernel.target = #kiln_kernel.target<kind = "", name = "x", format = "f", triple = "t", chip = "c", features = "", vector_bits = 0, vector_registers = 0>} {
}

// -----

// expected-error @+1 {{argument 1 holds panels of 16 columns, so its type must be [panels, K, 16], not 'memref<2x24x8xf32>'}}
func.func @panels_of_the_wrong_width(%b: memref<40x24xf32>,
    %p: memref<2x24x8xf32> {kiln_kernel.packed_rhs = #kiln_kernel.packed_rhs<of = 0, transposed = true, panel_columns = 16>}) {
  return
}

// -----

// expected-error @+1 {{argument 1 is packed from argument 1, which is not another argument}}
func.func @packed_from_itself(%b: memref<40x24xf32>,
    %p: memref<2x24x16xf32> {kiln_kernel.packed_rhs = #kiln_kernel.packed_rhs<of = 1, transposed = true, panel_columns = 16>}) {
  return
}

// -----

func.func @no_panel_width(%b: memref<40x24xf32>,
    // expected-error @+1 {{packed_rhs has panels of 0 columns}}
    %p: memref<2x24x16xf32> {kiln_kernel.packed_rhs = #kiln_kernel.packed_rhs<of = 0, transposed = true, panel_columns = 0>}) {
  return
}

// -----

// expected-error @+1 {{'kiln_kernel.workgroup_alignment' belongs on a kernel function}}
module attributes {kiln_kernel.workgroup_alignment = 4 : i64} {
}

// -----

// expected-error @+1 {{'kiln_kernel.workgroup_alignment' must be an i64 of at least 1, not 0 : i64}}
func.func private @k0(index, index) attributes {kiln_kernel.workgroup_alignment = 0 : i64}

// -----

// expected-error @+1 {{'kiln_kernel.scratch_bytes' must be an i64 of at least 0, not -8 : i64}}
func.func private @k1(index, index) attributes {kiln_kernel.scratch_bytes = -8 : i64}

// -----

// expected-error @+1 {{'kiln_kernel.column_extent' must be an i64 of at least 1, not "wide"}}
func.func private @k2(index, index) attributes {kiln_kernel.column_extent = "wide"}

// -----

// expected-error @+1 {{a symbolic 'kiln_kernel.workgroup_extent' is one expression over the size symbols}}
func.func private @k3(index, index) attributes {kiln_kernel.workgroup_extent = affine_map<(d0) -> (d0)>}

// -----

// expected-error @+1 {{'kiln_kernel.in_place_operands' must be pairs of binding indices}}
func.func private @k4(index, index) attributes {kiln_kernel.in_place_operands = array<i64: 0, 1, 2>}

// -----

// expected-error @+1 {{'kiln_kernel.kernel' must be a non-empty string}}
func.func private @k5(index, index) attributes {kiln_kernel.kernel = ""}

// -----

// expected-error @+1 {{'kiln_kernel.same_code_as' must name a kernel (@kernel)}}
func.func private @k6(index, index) attributes {kiln_kernel.same_code_as = "k5"}

// -----

// expected-error @+1 {{unknown kiln_kernel attribute 'kiln_kernel.extent'}}
func.func private @k7(index, index) attributes {kiln_kernel.extent = 4 : i64}

// -----

func.func @not_a_loop(%x: f32) -> f32 {
  // expected-error @+1 {{'kiln_kernel.column_loop' is a unit attribute of a loop}}
  %0 = arith.addf %x, %x {kiln_kernel.column_loop} : f32
  return %0 : f32
}

// -----

func.func @steps_over_rows_not_a_loop(%x: f32) -> f32 {
  // expected-error @+1 {{'kiln_kernel.steps_over_rows' is a unit attribute of a loop}}
  %0 = arith.addf %x, %x {kiln_kernel.steps_over_rows} : f32
  return %0 : f32
}

// -----

func.func @contraction_order(%x: f32) -> f32 {
  // expected-error @+1 {{'kiln_kernel.contraction' is "ikj" (B is [K, N]) or "ijk" (B is [N, K]), not "kij"}}
  %0 = arith.addf %x, %x {kiln_kernel.contraction = "kij"} : f32
  return %0 : f32
}

// -----

func.func @unsigned_flag(%x: i32) -> i32 {
  // expected-error @+1 {{'kiln_kernel.unsigned' is a unit attribute}}
  %0 = arith.addi %x, %x {kiln_kernel.unsigned = true} : i32
  return %0 : i32
}

// -----

// expected-error @+1 {{'kiln_kernel.gpu_strategies' must be an array of strings, not [1]}}
func.func private @k_strategies(index, index) attributes {kiln_kernel.gpu_strategies = [1]}

// -----

func.func @sort_shapes(%x: memref<4x5xf32>, %v: memref<4x6xf32>, %i: memref<4x5xi64>) {
  // expected-error @+1 {{values must have the input's shape and element type, and indices its shape in i64}}
  kiln_kernel.sort %x into %v, %i {dim = 1 : i64} : memref<4x5xf32> into memref<4x6xf32>, memref<4x5xi64>
  return
}

// -----

func.func @sort_dim(%x: memref<4x5xf32>, %i: memref<4x5xi64>) {
  // expected-error @+1 {{dim must be in [0, rank)}}
  kiln_kernel.sort %x into %x, %i {dim = 2 : i64} : memref<4x5xf32> into memref<4x5xf32>, memref<4x5xi64>
  return
}

// -----

func.func @sort_results(%x: memref<4xf32>, %i: memref<4xi64>) {
  // expected-error @+1 {{returns its inits on tensors and nothing on buffers}}
  %0:2 = kiln_kernel.sort %x into %x, %i {dim = 0 : i64} : memref<4xf32> into memref<4xf32>, memref<4xi64> -> tensor<4xf32>, tensor<4xi64>
  return
}

// -----

func.func @sort_k(%x: memref<4x5xf32>, %i: memref<4x5xi64>) {
  // expected-error @+1 {{k must be in [0, the sorted dim's size]}}
  kiln_kernel.sort %x into %x, %i {dim = 1 : i64, k = 7 : i64} : memref<4x5xf32> into memref<4x5xf32>, memref<4x5xi64>
  return
}
