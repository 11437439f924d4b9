// RUN: kiln-opt %s -split-input-file -kiln-emit-kernel-abi -verify-diagnostics

// expected-error @+1 {{kernel must take (i64, i64, ptr..., i64 symbols...) after lowering with the bare-pointer memref convention}}
llvm.func @memref_descriptor(%wg: i64, %wgc: i64, %a: !llvm.struct<(ptr, ptr, i64)>) attributes {kiln_kernel.kernel = "k"} {
  llvm.return
}

// -----

// expected-error @+1 {{kernel must take (i64, i64, ptr..., i64 symbols...) after lowering with the bare-pointer memref convention}}
llvm.func @index_32(%wg: i32, %wgc: i32, %a: !llvm.ptr) attributes {kiln_kernel.kernel = "k"} {
  llvm.return
}

// -----

// expected-error @+1 {{kernel must take (i64, i64, ptr..., i64 symbols...) after lowering with the bare-pointer memref convention}}
llvm.func @too_few(%a: !llvm.ptr) attributes {kiln_kernel.kernel = "k"} {
  llvm.return
}

// -----

// Symbols come after every pointer and are int64s.
// expected-error @+1 {{kernel must take (i64, i64, ptr..., i64 symbols...) after lowering with the bare-pointer memref convention}}
llvm.func @symbols_before_buffers(%wg: i64, %wgc: i64, %s0: i64, %buffer: !llvm.ptr)
    attributes {kiln_kernel.kernel = "k", kiln_kernel.num_symbols = 1 : i64} {
  llvm.return
}
