// RUN: kiln-opt %s -split-input-file -kiln-approximate-math | FileCheck %s

// f32 transcendentals become polynomials (fma chains) that vectorize.
// CHECK-LABEL: func.func @scalar_f32
// CHECK-NOT: math.exp
// CHECK-NOT: math.tanh
// CHECK-NOT: math.erf
// CHECK-NOT: math.log
// CHECK: math.fma
// CHECK-NOT: math.exp
// CHECK-NOT: math.tanh
// CHECK-NOT: math.erf
// CHECK-NOT: math.log
// CHECK: return
func.func @scalar_f32(%x: f32) -> (f32, f32, f32, f32) {
  %0 = math.exp %x : f32
  %1 = math.tanh %x : f32
  %2 = math.erf %x : f32
  %3 = math.log %x : f32
  return %0, %1, %2, %3 : f32, f32, f32, f32
}

// -----

// CHECK-LABEL: func.func @vector_f32
// CHECK-NOT: math.exp
// CHECK: math.fma %{{.*}}, %{{.*}}, %{{.*}} : vector<8xf32>
// CHECK-NOT: math.exp
// CHECK: return %{{.*}} : vector<8xf32>
func.func @vector_f32(%x: vector<8xf32>) -> vector<8xf32> {
  %0 = math.exp %x : vector<8xf32>
  return %0 : vector<8xf32>
}

// -----

// Inside a kernel's loop body, as the CPU pipeline runs it.
// CHECK-LABEL: func.func @in_loop
// CHECK: scf.for
// CHECK-NOT: math.exp
// CHECK: memref.store
func.func @in_loop(%buf: memref<16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  scf.for %i = %c0 to %c16 step %c1 {
    %v = memref.load %buf[%i] : memref<16xf32>
    %e = math.exp %v : f32
    memref.store %e, %buf[%i] : memref<16xf32>
  }
  return
}

// -----

// f64 keeps the libm-accurate op.
// CHECK-LABEL: func.func @f64_kept
// CHECK: %[[E:.*]] = math.exp %{{.*}} : f64
// CHECK-NEXT: return %[[E]]
func.func @f64_kept(%x: f64) -> f64 {
  %0 = math.exp %x : f64
  return %0 : f64
}

// -----

// Inverse trigonometric and hyperbolic functions call libm (f32 names end
// in f); f64 erf does too. Each callee is declared once.
// CHECK-LABEL: func.func private @asinf(f32) -> f32
// CHECK-LABEL: func.func private @atan2(f64, f64) -> f64
// CHECK-LABEL: func.func @libm_calls
// CHECK: call @asinf(%{{.*}}) : (f32) -> f32
// CHECK: call @asinf(%{{.*}}) : (f32) -> f32
// CHECK: call @atan2(%{{.*}}, %{{.*}}) : (f64, f64) -> f64
// CHECK-NOT: math.
// CHECK: return
func.func @libm_calls(%x: f32, %y: f64) -> (f32, f32, f64) {
  %0 = math.asin %x : f32
  %1 = math.asin %0 : f32
  %2 = math.atan2 %y, %y : f64
  return %0, %1, %2 : f32, f32, f64
}
