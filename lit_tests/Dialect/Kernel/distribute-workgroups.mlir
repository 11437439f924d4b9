// RUN: kiln-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(kiln-distribute-workgroups))' | FileCheck %s

// chunk = ceil(extent / count); workgroup `id` owns [begin, end) =
// [min(id * chunk, extent), min(begin + chunk, extent)), and every top-level
// loop runs the part of its range inside it.
// CHECK-LABEL: func.func @distribute
// CHECK-SAME: (%[[ID:.*]]: index, %[[COUNT:.*]]: index, %[[IN:.*]]: memref<10x4xf32>, %[[OUT:.*]]: memref<10x4xf32>)
// CHECK: %[[EXTENT:.*]] = arith.constant 10 : index
// CHECK: arith.ceildivui %[[EXTENT]], %[[COUNT]] : index
// CHECK: %[[START:.*]] = arith.muli %[[ID]], %[[CHUNK:.*]] : index
// CHECK-NEXT: %[[BEGIN:.*]] = arith.minui %[[START]], %[[EXTENT]] : index
// CHECK-NEXT: %[[STOP:.*]] = arith.addi %[[BEGIN]], %[[CHUNK]] : index
// CHECK-NEXT: %[[END:.*]] = arith.minui %[[STOP]], %[[EXTENT]] : index
// CHECK: %[[LB0:.*]] = arith.maxui %{{.*}}, %[[BEGIN]] : index
// CHECK-NEXT: %[[UB0:.*]] = arith.minui %{{.*}}, %[[END]] : index
// CHECK-NEXT: scf.for %{{.*}} = %[[LB0]] to %[[UB0]] step %{{.*}} {
// The inner loop is not touched.
// CHECK-NEXT:   scf.for %{{.*}} = %{{.*}} to %[[C4:.*]] step
// CHECK: %[[LB1:.*]] = arith.maxui %{{.*}}, %[[BEGIN]] : index
// CHECK-NEXT: %[[UB1:.*]] = arith.minui %{{.*}}, %[[END]] : index
// CHECK-NEXT: scf.for %{{.*}} = %[[LB1]] to %[[UB1]] step
func.func @distribute(%wg: index, %wgc: index, %in: memref<10x4xf32>, %out: memref<10x4xf32>)
    attributes {kiln_kernel.kernel = "k", kiln_kernel.workgroup_extent = 10 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c10 = arith.constant 10 : index
  scf.for %i = %c0 to %c10 step %c1 {
    scf.for %j = %c0 to %c4 step %c1 {
      %v = memref.load %in[%i, %j] : memref<10x4xf32>
      memref.store %v, %out[%i, %j] : memref<10x4xf32>
    }
  }
  scf.for %i = %c0 to %c10 step %c1 {
    %v = memref.load %out[%i, %c0] : memref<10x4xf32>
    memref.store %v, %out[%i, %c1] : memref<10x4xf32>
  }
  return
}

// -----

// A loop that handles several rows per iteration (and one over part of the
// rows): chunks are rounded up to a multiple of every step, so workgroups
// split loops at iteration boundaries.
// CHECK-LABEL: func.func @stepped_loops
// CHECK-SAME: (%[[ID:.*]]: index, %[[COUNT:.*]]: index,
// CHECK: %[[EXTENT:.*]] = arith.constant 12 : index
// CHECK: %[[ALIGN:.*]] = arith.constant 6 : index
// CHECK: %[[PER:.*]] = arith.ceildivui %[[EXTENT]], %[[COUNT]] : index
// CHECK: %[[UNITS:.*]] = arith.ceildivui %[[PER]], %[[ALIGN]] : index
// CHECK: %[[CHUNK:.*]] = arith.muli %[[UNITS]], %[[ALIGN]] : index
// CHECK: arith.muli %[[ID]], %[[CHUNK]] : index
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %[[C2:.*]] {
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %[[C3:.*]] {
func.func @stepped_loops(%wg: index, %wgc: index, %out: memref<12xf32>)
    attributes {kiln_kernel.kernel = "k", kiln_kernel.workgroup_extent = 12 : i64} {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c6 = arith.constant 6 : index
  %c12 = arith.constant 12 : index
  %f = arith.constant 1.0 : f32
  scf.for %i = %c0 to %c12 step %c2 {
    memref.store %f, %out[%i] : memref<12xf32>
  }
  scf.for %i = %c6 to %c12 step %c3 {
    memref.store %f, %out[%i] : memref<12xf32>
  }
  return
}

// -----

// Extent 0 (and 1): one workgroup runs the whole kernel.
// CHECK-LABEL: func.func @single_workgroup
// CHECK-NOT: arith.ceildivui
// CHECK: %[[C0:.*]] = arith.constant 0 : index
// CHECK: %[[C10:.*]] = arith.constant 10 : index
// CHECK: scf.for %{{.*}} = %[[C0]] to %[[C10]]
func.func @single_workgroup(%wg: index, %wgc: index, %out: memref<10xf32>)
    attributes {kiln_kernel.kernel = "k", kiln_kernel.workgroup_extent = 0 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c10 = arith.constant 10 : index
  %f = arith.constant 1.0 : f32
  scf.for %i = %c0 to %c10 step %c1 {
    memref.store %f, %out[%i] : memref<10xf32>
  }
  return
}

// -----

// CHECK-LABEL: func.func @not_a_kernel
// CHECK-NOT: arith.ceildivui
func.func @not_a_kernel(%out: memref<10xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c10 = arith.constant 10 : index
  %f = arith.constant 1.0 : f32
  scf.for %i = %c0 to %c10 step %c1 {
    memref.store %f, %out[%i] : memref<10xf32>
  }
  return
}

// -----

// The shape of a matmul microkernel with M = 13: 6-row tiles over [0, 12),
// then the last row alone. Chunks are multiples of 6, so no tile straddles
// two workgroups; each loop is clamped to its own bounds.
// CHECK-LABEL: func.func @microkernel_rows
// CHECK-SAME: (%[[ID:.*]]: index, %[[COUNT:.*]]: index, %{{.*}}: memref<13xf32>)
// CHECK: %[[EXTENT:.*]] = arith.constant 13 : index
// CHECK-NEXT: %[[ALIGN:.*]] = arith.constant 6 : index
// CHECK-NEXT: %[[PER:.*]] = arith.ceildivui %[[EXTENT]], %[[COUNT]] : index
// CHECK-NEXT: %[[UNITS:.*]] = arith.ceildivui %[[PER]], %[[ALIGN]] : index
// CHECK-NEXT: %[[CHUNK:.*]] = arith.muli %[[UNITS]], %[[ALIGN]] : index
// CHECK-NEXT: %[[START:.*]] = arith.muli %[[ID]], %[[CHUNK]] : index
// CHECK-NEXT: %[[BEGIN:.*]] = arith.minui %[[START]], %[[EXTENT]] : index
// CHECK-NEXT: %[[STOP:.*]] = arith.addi %[[BEGIN]], %[[CHUNK]] : index
// CHECK-NEXT: %[[END:.*]] = arith.minui %[[STOP]], %[[EXTENT]] : index
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[C6:.*]] = arith.constant 6 : index
// CHECK-DAG: %[[C12:.*]] = arith.constant 12 : index
// CHECK-DAG: %[[C1:.*]] = arith.constant 1 : index
// CHECK-DAG: %[[C13:.*]] = arith.constant 13 : index
// CHECK: %[[LB0:.*]] = arith.maxui %[[C0]], %[[BEGIN]] : index
// CHECK-NEXT: %[[UB0:.*]] = arith.minui %[[C12]], %[[END]] : index
// CHECK-NEXT: scf.for %{{.*}} = %[[LB0]] to %[[UB0]] step %[[C6]] {
// CHECK: %[[LB1:.*]] = arith.maxui %[[C12]], %[[BEGIN]] : index
// CHECK-NEXT: %[[UB1:.*]] = arith.minui %[[C13]], %[[END]] : index
// CHECK-NEXT: scf.for %{{.*}} = %[[LB1]] to %[[UB1]] step %[[C1]] {
func.func @microkernel_rows(%wg: index, %wgc: index, %out: memref<13xf32>)
    attributes {kiln_kernel.kernel = "k", kiln_kernel.workgroup_extent = 13 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c6 = arith.constant 6 : index
  %c12 = arith.constant 12 : index
  %c13 = arith.constant 13 : index
  %f = arith.constant 1.0 : f32
  scf.for %i = %c0 to %c12 step %c6 {
    memref.store %f, %out[%i] : memref<13xf32>
  }
  scf.for %i = %c12 to %c13 step %c1 {
    memref.store %f, %out[%i] : memref<13xf32>
  }
  return
}

// -----

// A symbolic extent is computed at entry from the kernel's size symbols (its
// last arguments); loops up to it may end anywhere (their bounds are values),
// and a step-1 loop may also start anywhere, as a matmul's ragged rows do.
// CHECK-LABEL: func.func @symbolic_rows
// CHECK-SAME: (%[[ID:.*]]: index, %[[COUNT:.*]]: index, %{{.*}}: memref<?xf32>, %[[S0:.*]]: index)
// CHECK-SAME: kiln_kernel.workgroup_alignment = 6 : i64
// CHECK: %[[C4:.*]] = arith.constant 4 : index
// CHECK-NEXT: %[[EXTENT:.*]] = arith.muli %[[S0]], %[[C4]]
// CHECK: %[[PER:.*]] = arith.ceildivui %[[EXTENT]], %[[COUNT]] : index
// CHECK: %[[LB0:.*]] = arith.maxui %{{.*}}, %[[BEGIN:.*]] : index
// CHECK-NEXT: %[[UB0:.*]] = arith.minui %[[FULL:.*]], %[[END:.*]] : index
// CHECK-NEXT: scf.for %{{.*}} = %[[LB0]] to %[[UB0]] step %{{.*}} {
// CHECK: %[[LB1:.*]] = arith.maxui %[[FULL]], %[[BEGIN]] : index
// CHECK-NEXT: %[[UB1:.*]] = arith.minui %[[EXTENT2:.*]], %[[END]] : index
// CHECK-NEXT: scf.for %{{.*}} = %[[LB1]] to %[[UB1]] step %{{.*}} {
func.func @symbolic_rows(%wg: index, %wgc: index, %out: memref<?xf32>, %s0: index)
    attributes {kiln_kernel.kernel = "k", kiln_kernel.num_symbols = 1 : i64,
                kiln_kernel.workgroup_extent = affine_map<()[s0] -> (s0 * 4)>} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c6 = arith.constant 6 : index
  %rows = arith.muli %s0, %c4 : index
  %full = arith.muli %s0, %c4 : index
  %f = arith.constant 1.0 : f32
  scf.for %i = %c0 to %full step %c6 {
    memref.store %f, %out[%i] : memref<?xf32>
  }
  scf.for %i = %full to %rows step %c1 {
    memref.store %f, %out[%i] : memref<?xf32>
  }
  return
}

// -----

// Split columns (a matmul with its epilogue): `count` covers a grid of
// ceil(extent / chunk) row chunks by count / that many column chunks (at
// least one), aligned to kiln_kernel.column_alignment. Workgroup `id` runs row chunk
// id / groups and column chunk id % groups. The loop directly inside each
// top-level loop is narrowed to the column chunk, or, where a nest marks
// them, the loops marked kiln_kernel.column_loop (here inside a loop over k).
// CHECK-LABEL: func.func @grid
// CHECK-SAME: (%[[ID:.*]]: index, %[[COUNT:.*]]: index,
// CHECK: %[[EXTENT:.*]] = arith.constant 2 : index
// CHECK: %[[CHUNK:.*]] = arith.muli %{{.*}}, %{{.*}} : index
// CHECK: %[[ONE:.*]] = arith.constant 1 : index
// CHECK: %[[NONZERO:.*]] = arith.maxui %[[CHUNK]], %[[ONE]] : index
// CHECK: %[[ROWS:.*]] = arith.ceildivui %[[EXTENT]], %[[NONZERO]] : index
// CHECK: %[[ROWGROUPS:.*]] = arith.maxui %[[ONE]], %[[ROWS]] : index
// CHECK: %[[PER:.*]] = arith.divui %[[COUNT]], %[[ROWGROUPS]] : index
// CHECK: %[[GROUPS:.*]] = arith.maxui %[[ONE]], %[[PER]] : index
// CHECK: %[[ROWGROUP:.*]] = arith.divui %[[ID]], %[[GROUPS]] : index
// CHECK: %[[COLGROUP:.*]] = arith.remui %[[ID]], %[[GROUPS]] : index
// CHECK: %[[COLUMNS:.*]] = arith.constant 64 : index
// CHECK: %[[CALIGN:.*]] = arith.constant 16 : index
// CHECK: %[[CPER:.*]] = arith.ceildivui %[[COLUMNS]], %[[GROUPS]] : index
// CHECK: %[[CTILES:.*]] = arith.ceildivui %[[CPER]], %[[CALIGN]] : index
// CHECK: %[[CCHUNK:.*]] = arith.muli %[[CTILES]], %[[CALIGN]] : index
// CHECK: %[[CSTART:.*]] = arith.muli %[[COLGROUP]], %[[CCHUNK]] : index
// CHECK: %[[CBEGIN:.*]] = arith.minui %[[CSTART]], %[[COLUMNS]] : index
// CHECK: %[[CSTOP:.*]] = arith.addi %[[CBEGIN]], %[[CCHUNK]] : index
// CHECK: %[[CEND:.*]] = arith.minui %[[CSTOP]], %[[COLUMNS]] : index
// CHECK: %[[START:.*]] = arith.muli %[[ROWGROUP]], %[[CHUNK]] : index
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK: %[[JLB:.*]] = arith.maxui %{{.*}}, %[[CBEGIN]] : index
// CHECK-NEXT: %[[JUB:.*]] = arith.minui %{{.*}}, %[[CEND]] : index
// CHECK-NEXT: scf.for %{{.*}} = %[[JLB]] to %[[JUB]] step
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT: scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step
// CHECK: %[[KLB:.*]] = arith.maxui %{{.*}}, %[[CBEGIN]] : index
// CHECK-NEXT: %[[KUB:.*]] = arith.minui %{{.*}}, %[[CEND]] : index
// CHECK-NEXT: scf.for %{{.*}} = %[[KLB]] to %[[KUB]] step
func.func @grid(%wg: index, %wgc: index, %a: memref<2x3xf32>, %out: memref<2x64xf32>)
    attributes {kiln_kernel.kernel = "k", kiln_kernel.workgroup_extent = 2 : i64,
                kiln_kernel.column_extent = 64 : i64, kiln_kernel.column_alignment = 16 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %f = arith.constant 0.0 : f32
  scf.for %i = %c0 to %c2 step %c1 {
    scf.for %j = %c0 to %c64 step %c16 {
      memref.store %f, %out[%i, %j] : memref<2x64xf32>
    }
  }
  scf.for %i = %c0 to %c2 step %c1 {
    scf.for %k = %c0 to %c3 step %c1 {
      %x = memref.load %a[%i, %k] : memref<2x3xf32>
      scf.for %j = %c0 to %c64 step %c1 {
        %y = memref.load %out[%i, %j] : memref<2x64xf32>
        %s = arith.addf %x, %y : f32
        memref.store %s, %out[%i, %j] : memref<2x64xf32>
      } {kiln_kernel.column_loop}
    }
  }
  return
}

// -----

// One row: nothing to split unless the columns split too; the kernel still
// records its alignment, so the launch runs one workgroup.
// CHECK-LABEL: func.func @one_row
// CHECK-SAME: kiln_kernel.workgroup_alignment = 1 : i64
// CHECK-NOT: arith.minui
func.func @one_row(%wg: index, %wgc: index, %out: memref<1x4xf32>)
    attributes {kiln_kernel.kernel = "k", kiln_kernel.workgroup_extent = 1 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %f = arith.constant 0.0 : f32
  scf.for %j = %c0 to %c4 step %c1 {
    memref.store %f, %out[%c0, %j] : memref<1x4xf32>
  }
  return
}

// -----

// A temporary [extent, ...] that every loop reads and writes only at its own
// leading index is shared by the workgroups, each touching its own rows: it
// moves into the launch's scratch buffer (a new last argument, marked
// noalias), viewed at a 64-byte aligned offset, and is not freed. One that
// leaves the kernel's loops reshaped (a copy of all its elements) is each
// workgroup's own allocation still.
// CHECK-LABEL: func.func @shrunk_temporary
// CHECK-SAME: %[[SCRATCH:[^:]*]]: memref<192xi8> {llvm.noalias}
// CHECK-SAME: kiln_kernel.scratch_bytes = 192 : i64
// CHECK: %[[T:.*]] = memref.view %[[SCRATCH]][%c0{{.*}}][] : memref<192xi8> to memref<6x8xf32>
// CHECK: %[[KEPT:.*]] = memref.alloc() {alignment = 64 : i64} : memref<6x8xf32>
// CHECK: memref.store %{{.*}}, %[[T]][%{{.*}}, %{{.*}}]
// CHECK: memref.load %[[T]][%{{.*}}, %{{.*}}]
// CHECK-NOT: memref.dealloc %[[T]]
// CHECK: memref.dealloc %[[KEPT]]
func.func @shrunk_temporary(%wg: index, %wgc: index, %x: memref<6x8xf32>, %out: memref<6x8xf32>, %flat: memref<48xf32>)
    attributes {kiln_kernel.workgroup_extent = 6 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c6 = arith.constant 6 : index
  %c8 = arith.constant 8 : index
  %t = memref.alloc() {alignment = 64 : i64} : memref<6x8xf32>
  %kept = memref.alloc() {alignment = 64 : i64} : memref<6x8xf32>
  scf.for %i = %c0 to %c6 step %c1 {
    scf.for %j = %c0 to %c8 step %c1 {
      %v = memref.load %x[%i, %j] : memref<6x8xf32>
      memref.store %v, %t[%i, %j] : memref<6x8xf32>
      memref.store %v, %kept[%i, %j] : memref<6x8xf32>
    }
  }
  scf.for %i = %c0 to %c6 step %c1 {
    scf.for %j = %c0 to %c8 step %c1 {
      %v = memref.load %t[%i, %j] : memref<6x8xf32>
      memref.store %v, %out[%i, %j] : memref<6x8xf32>
    }
  }
  %collapsed = memref.collapse_shape %kept [[0, 1]] : memref<6x8xf32> into memref<48xf32>
  memref.copy %collapsed, %flat : memref<48xf32> to memref<48xf32>
  memref.dealloc %t : memref<6x8xf32>
  memref.dealloc %kept : memref<6x8xf32>
  return
}

// -----

// A temporary read through reshapes that keep its rows (a group norm's
// [rows, groups, n] regrouped as [rows, channels, m]), and at its loop's
// index clamped to the rows (padding), moves to the scratch buffer too; the
// reshapes view it as they did the allocation.
// CHECK-LABEL: func.func @shrunk_reshaped_temporary
// CHECK-SAME: %{{[^:]*}}: memref<4x4x4xf32>, %[[SCRATCH:[^:]*]]: memref<256xi8> {llvm.noalias}
// CHECK: %[[T:.*]] = memref.view %[[SCRATCH]]
// CHECK: memref.store %{{.*}}, %[[T]][
// CHECK: %[[FLAT:.*]] = memref.collapse_shape %[[T]]
// CHECK: %[[CHANNELS:.*]] = memref.expand_shape %[[FLAT]]
// CHECK: memref.load %[[CHANNELS]][
// CHECK-NOT: memref.dealloc
func.func @shrunk_reshaped_temporary(%wg: index, %wgc: index, %x: memref<4x2x8xf32>, %out: memref<4x4x4xf32>)
    attributes {kiln_kernel.workgroup_extent = 4 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %t = memref.alloc() {alignment = 64 : i64} : memref<4x2x8xf32>
  scf.for %i = %c0 to %c4 step %c1 {
    scf.for %g = %c0 to %c2 step %c1 {
      scf.for %j = %c0 to %c8 step %c1 {
        %v = memref.load %x[%i, %g, %j] : memref<4x2x8xf32>
        memref.store %v, %t[%i, %g, %j] : memref<4x2x8xf32>
      }
    }
  }
  %flat = memref.collapse_shape %t [[0, 1, 2]] : memref<4x2x8xf32> into memref<64xf32>
  %channels = memref.expand_shape %flat [[0, 1, 2]] output_shape [4, 4, 4] : memref<64xf32> into memref<4x4x4xf32>
  scf.for %i = %c0 to %c4 step %c1 {
    %lo = arith.maxsi %i, %c0 : index
    %row = arith.minsi %lo, %c3 : index
    scf.for %c = %c0 to %c4 step %c1 {
      scf.for %j = %c0 to %c4 step %c1 {
        %v = memref.load %channels[%row, %c, %j] : memref<4x4x4xf32>
        memref.store %v, %out[%i, %c, %j] : memref<4x4x4xf32>
      }
    }
  }
  memref.dealloc %t : memref<4x2x8xf32>
  return
}

// -----

// A view that regroups the rows themselves ([4, 16] read as [8, 8]) keeps the
// temporary each workgroup's own: a workgroup's rows are not the view's rows.
// CHECK-LABEL: func.func @regrouped_rows_kept
// CHECK-NOT: kiln_kernel.scratch_bytes
// CHECK: memref.alloc() {alignment = 64 : i64} : memref<4x16xf32>
// CHECK: memref.expand_shape
func.func @regrouped_rows_kept(%wg: index, %wgc: index, %x: memref<4x16xf32>, %out: memref<4x8xf32>)
    attributes {kiln_kernel.workgroup_extent = 4 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %t = memref.alloc() {alignment = 64 : i64} : memref<4x16xf32>
  scf.for %i = %c0 to %c4 step %c1 {
    scf.for %j = %c0 to %c16 step %c1 {
      %v = memref.load %x[%i, %j] : memref<4x16xf32>
      memref.store %v, %t[%i, %j] : memref<4x16xf32>
    }
  }
  %pairs = memref.expand_shape %t [[0], [1, 2]] output_shape [4, 2, 8] : memref<4x16xf32> into memref<4x2x8xf32>
  %flat = memref.collapse_shape %pairs [[0, 1], [2]] : memref<4x2x8xf32> into memref<8x8xf32>
  scf.for %i = %c0 to %c4 step %c1 {
    scf.for %j = %c0 to %c8 step %c1 {
      %v = memref.load %flat[%i, %j] : memref<8x8xf32>
      memref.store %v, %out[%i, %j] : memref<4x8xf32>
    }
  }
  memref.dealloc %t : memref<4x16xf32>
  return
}

// -----

// A kernel run by one workgroup owns all its temporaries: each static one
// moves to the scratch buffer, at 64-byte aligned offsets, before the size
// symbols; a dynamic one stays an allocation.
// CHECK-LABEL: func.func @single_workgroup_scratch
// CHECK-SAME: %[[SCRATCH:[^:]*]]: memref<128xi8> {llvm.noalias}, %{{[^:]*}}: index
// CHECK-SAME: kiln_kernel.scratch_bytes = 128 : i64
// CHECK: memref.view %[[SCRATCH]][%{{.*}}][] : memref<128xi8> to memref<1x3xf32>
// CHECK-NEXT: %[[C64:.*]] = arith.constant 64 : index
// CHECK-NEXT: memref.view %[[SCRATCH]][%[[C64]]][] : memref<128xi8> to memref<1x2xi64>
// CHECK: memref.alloc(%{{.*}}) : memref<?xf32>
func.func @single_workgroup_scratch(%wg: index, %wgc: index, %out: memref<1x3xf32>, %n: index)
    attributes {kiln_kernel.workgroup_extent = 1 : i64, kiln_kernel.num_symbols = 1 : i64} {
  %c0 = arith.constant 0 : index
  %f = arith.constant 0.0 : f32
  %i = arith.constant 0 : i64
  %a = memref.alloc() : memref<1x3xf32>
  %b = memref.alloc() : memref<1x2xi64>
  %d = memref.alloc(%n) : memref<?xf32>
  memref.store %f, %a[%c0, %c0] : memref<1x3xf32>
  memref.store %i, %b[%c0, %c0] : memref<1x2xi64>
  memref.store %f, %d[%c0] : memref<?xf32>
  %v = memref.load %a[%c0, %c0] : memref<1x3xf32>
  memref.store %v, %out[%c0, %c0] : memref<1x3xf32>
  memref.dealloc %a : memref<1x3xf32>
  memref.dealloc %b : memref<1x2xi64>
  memref.dealloc %d : memref<?xf32>
  return
}
