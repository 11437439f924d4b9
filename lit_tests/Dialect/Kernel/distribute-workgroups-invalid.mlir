// RUN: kiln-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(kiln-distribute-workgroups))' -verify-diagnostics

// expected-error @+1 {{kernel must start with (index workgroup_id, index workgroup_count)}}
func.func @bad_signature(%wg: i64, %wgc: i64, %out: memref<10xf32>) attributes {kiln_kernel.kernel = "k", kiln_kernel.workgroup_extent = 10 : i64} {
  return
}

// -----

func.func @past_the_extent(%wg: index, %wgc: index, %out: memref<12xf32>) attributes {kiln_kernel.kernel = "k", kiln_kernel.workgroup_extent = 10 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c12 = arith.constant 12 : index
  %f = arith.constant 1.0 : f32
  // expected-error @+1 {{top-level loop of a kernel with workgroup extent 10 must have constant bounds within [0, 10) and a lower bound that is a multiple of its step}}
  scf.for %i = %c0 to %c12 step %c1 {
    memref.store %f, %out[%i] : memref<12xf32>
  }
  return
}

// -----

func.func @dynamic_bound(%wg: index, %wgc: index, %n: index, %out: memref<10xf32>) attributes {kiln_kernel.kernel = "k", kiln_kernel.workgroup_extent = 10 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %f = arith.constant 1.0 : f32
  // expected-error @+1 {{must have constant bounds within [0, 10)}}
  scf.for %i = %c0 to %n step %c1 {
    memref.store %f, %out[%i] : memref<10xf32>
  }
  return
}

// -----

func.func @misaligned_start(%wg: index, %wgc: index, %out: memref<10xf32>) attributes {kiln_kernel.kernel = "k", kiln_kernel.workgroup_extent = 10 : i64} {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c10 = arith.constant 10 : index
  %f = arith.constant 1.0 : f32
  // expected-error @+1 {{a lower bound that is a multiple of its step}}
  scf.for %i = %c1 to %c10 step %c2 {
    memref.store %f, %out[%i] : memref<10xf32>
  }
  return
}

// -----

// With a symbolic extent, a loop whose step is not 1 must start at a constant
// multiple of it, so that chunk boundaries fall on its iterations.
func.func @symbolic_unaligned(%wg: index, %wgc: index, %out: memref<?xf32>, %s0: index)
    attributes {kiln_kernel.kernel = "k", kiln_kernel.num_symbols = 1 : i64,
                kiln_kernel.workgroup_extent = affine_map<()[s0] -> (s0)>} {
  %c2 = arith.constant 2 : index
  %f = arith.constant 1.0 : f32
  %lb = memref.load %out[%c2] : memref<?xf32>
  %lbi = arith.fptoui %lb : f32 to i64
  %lbx = arith.index_cast %lbi : i64 to index
  // expected-error @+1 {{top-level loop of a kernel with a symbolic workgroup extent must have a constant step, and a constant lower bound that is a multiple of it unless the step is 1}}
  scf.for %i = %lbx to %s0 step %c2 {
    memref.store %f, %out[%i] : memref<?xf32>
  }
  return
}

// -----

func.func @column_step(%wg: index, %wgc: index, %out: memref<2x64xf32>)
    attributes {kiln_kernel.kernel = "k", kiln_kernel.workgroup_extent = 2 : i64,
                kiln_kernel.column_extent = 64 : i64, kiln_kernel.column_alignment = 16 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c24 = arith.constant 24 : index
  %c64 = arith.constant 64 : index
  %f = arith.constant 0.0 : f32
  scf.for %i = %c0 to %c2 step %c1 {
    // expected-error @+1 {{column loop of a kernel with split columns must have a constant step that divides the column alignment 16, and start at a multiple of it}}
    scf.for %j = %c0 to %c64 step %c24 {
      memref.store %f, %out[%i, %j] : memref<2x64xf32>
    }
  }
  return
}

// -----

func.func @two_column_loops(%wg: index, %wgc: index, %out: memref<2x64xf32>)
    attributes {kiln_kernel.kernel = "k", kiln_kernel.workgroup_extent = 2 : i64,
                kiln_kernel.column_extent = 64 : i64, kiln_kernel.column_alignment = 16 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c64 = arith.constant 64 : index
  %f = arith.constant 0.0 : f32
  // expected-error @+1 {{top-level loop of a kernel with split columns must hold exactly one loop over the columns, or mark them kiln_kernel.column_loop}}
  scf.for %i = %c0 to %c2 step %c1 {
    scf.for %j = %c0 to %c64 step %c1 {
      memref.store %f, %out[%i, %j] : memref<2x64xf32>
    }
    scf.for %j = %c0 to %c64 step %c1 {
      memref.store %f, %out[%i, %j] : memref<2x64xf32>
    }
  }
  return
}

// -----

// expected-error @+1 {{a column extent needs a positive kiln_kernel.column_alignment}}
func.func @no_column_alignment(%wg: index, %wgc: index, %out: memref<2x64xf32>)
    attributes {kiln_kernel.kernel = "k", kiln_kernel.workgroup_extent = 2 : i64, kiln_kernel.column_extent = 64 : i64} {
  return
}
