// RUN: kiln-opt %s -split-input-file \
// RUN:   --pass-pipeline='builtin.module(kiln-attach-target{target=cpu:x86-64-v3},func.func(kiln-vectorize-matmul))' -verify-diagnostics
// RUN: not kiln-opt %s -split-input-file --kiln-attach-target=target=tpu:v5 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not kiln-opt %s -split-input-file --kiln-attach-target 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not kiln-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(kiln-vectorize-matmul))' 2>&1 | FileCheck %s --check-prefix=NO-TARGET

// UNKNOWN: unknown target 'tpu:v5': expected 'cpu' (this machine's CPU)
// MISSING: kiln-attach-target needs a target name
// NO-TARGET: kiln-vectorize-matmul needs the target its code is for: the module's 'kiln_kernel.target'

// Weights packed in 8-column panels, but cpu:x86-64-v3's f32 tile is 16
// columns wide: the micro-kernel refuses them instead of reading the panels
// with the wrong stride.
#a = affine_map<(d0, d1, d2) -> (d0, d2)>
#b = affine_map<(d0, d1, d2) -> (d1, d2)>
#c = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @panels_narrower_than_the_tile(%a: memref<8x24xf32>, %b: memref<40x24xf32>,
    %p: memref<5x24x8xf32> {kiln_kernel.packed_rhs = #kiln_kernel.packed_rhs<of = 1, transposed = true, panel_columns = 8>},
    %c: memref<8x40xf32>) {
  // expected-error @+1 {{reads weights packed in panels of 8 columns, but the micro-kernel tile for cpu:x86-64-v3 is 16 columns wide: kiln-pack-weights and kiln-vectorize-matmul disagree}}
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<8x24xf32>, memref<40x24xf32>) outs(%c : memref<8x40xf32>)
      attrs = {kiln_kernel.contraction = "ijk"} {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y fastmath<reassoc,contract> : f32
    %s = arith.addf %acc, %m fastmath<reassoc,contract> : f32
    linalg.yield %s : f32
  }
  return
}
