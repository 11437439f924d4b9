// RUN: kiln-opt %s -split-input-file -kiln-emit-kernel-abi | FileCheck %s

// The kernel becomes an internal body called from an exported wrapper that
// takes the bindings as an array of pointers.
// CHECK-LABEL: llvm.func @kernel_0(
// CHECK-SAME: %[[ID:.*]]: i64, %[[COUNT:.*]]: i64, %[[BINDINGS:.*]]: !llvm.ptr) {
// CHECK-NEXT: %[[S0:.*]] = llvm.getelementptr %[[BINDINGS]][0] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK-NEXT: %[[P0:.*]] = llvm.load %[[S0]] : !llvm.ptr -> !llvm.ptr
// CHECK-NEXT: %[[S1:.*]] = llvm.getelementptr %[[BINDINGS]][1] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK-NEXT: %[[P1:.*]] = llvm.load %[[S1]] : !llvm.ptr -> !llvm.ptr
// CHECK-NEXT: %[[S2:.*]] = llvm.getelementptr %[[BINDINGS]][2] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK-NEXT: %[[P2:.*]] = llvm.load %[[S2]] : !llvm.ptr -> !llvm.ptr
// CHECK-NEXT: llvm.call @kernel_0_body(%[[ID]], %[[COUNT]], %[[P0]], %[[P1]], %[[P2]]) : (i64, i64, !llvm.ptr, !llvm.ptr, !llvm.ptr) -> ()
// CHECK-NEXT: llvm.return
// CHECK-NEXT: }
// CHECK-NEXT: llvm.func internal @kernel_0_body(%{{.*}}: i64, %{{.*}}: i64, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr)
// CHECK-NOT: kiln_kernel.kernel
// CHECK-SAME: {
llvm.func @kernel_0(%wg: i64, %wgc: i64, %a: !llvm.ptr, %b: !llvm.ptr, %out: !llvm.ptr) attributes {kiln_kernel.kernel = "kernel_0"} {
  llvm.return
}

// -----

// A kernel without bindings still gets the uniform signature.
// CHECK-LABEL: llvm.func @kernel_1(
// CHECK-SAME: %[[ID:.*]]: i64, %[[COUNT:.*]]: i64, %{{.*}}: !llvm.ptr) {
// CHECK-NEXT: llvm.call @kernel_1_body(%[[ID]], %[[COUNT]]) : (i64, i64) -> ()
// CHECK-NEXT: llvm.return
// CHECK: llvm.func internal @kernel_1_body(%{{.*}}: i64, %{{.*}}: i64)
llvm.func @kernel_1(%wg: i64, %wgc: i64) attributes {kiln_kernel.kernel = "kernel_1"} {
  llvm.return
}

// -----

// Functions that are not kernels, and kernel declarations, are untouched.
// CHECK-LABEL: llvm.func @helper(%{{.*}}: i64) {
// CHECK-NOT: _body
// CHECK-LABEL: llvm.func @external_kernel(i64, i64, !llvm.ptr) attributes {kiln_kernel.kernel = "external_kernel"}
// CHECK-NOT: _body
llvm.func @helper(%x: i64) {
  llvm.return
}
llvm.func @external_kernel(i64, i64, !llvm.ptr) attributes {kiln_kernel.kernel = "external_kernel"}

// -----

// A kernel of a graph with symbolic sizes takes the size symbols last: the
// bindings array holds its buffer pointers, then the symbols' int64 values.
// CHECK-LABEL: llvm.func @kernel_2(
// CHECK-SAME: %[[ID:.*]]: i64, %[[COUNT:.*]]: i64, %[[BINDINGS:.*]]: !llvm.ptr) {
// CHECK-NEXT: %[[S0:.*]] = llvm.getelementptr %[[BINDINGS]][0] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK-NEXT: %[[P0:.*]] = llvm.load %[[S0]] : !llvm.ptr -> !llvm.ptr
// CHECK-NEXT: %[[S1:.*]] = llvm.getelementptr %[[BINDINGS]][1] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK-NEXT: %[[SYM0:.*]] = llvm.load %[[S1]] : !llvm.ptr -> i64
// CHECK-NEXT: %[[S2:.*]] = llvm.getelementptr %[[BINDINGS]][2] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK-NEXT: %[[SYM1:.*]] = llvm.load %[[S2]] : !llvm.ptr -> i64
// CHECK-NEXT: llvm.call @kernel_2_body(%[[ID]], %[[COUNT]], %[[P0]], %[[SYM0]], %[[SYM1]]) : (i64, i64, !llvm.ptr, i64, i64) -> ()
llvm.func @kernel_2(%wg: i64, %wgc: i64, %buffer: !llvm.ptr, %s0: i64, %s1: i64)
    attributes {kiln_kernel.kernel = "kernel_2", kiln_kernel.num_symbols = 2 : i64} {
  llvm.return
}
