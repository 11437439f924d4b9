// RUN: kiln-opt %s -split-input-file '-kiln-approximate-math=libm-calls=false' | FileCheck %s

// Without libm (GPU kernels): no calls; the inverse hyperbolic functions go
// through log1p (then its polynomial), powf through the exponent split,
// atan2, asin and acos through their polynomials.
// CHECK-LABEL: func.func @no_calls
// CHECK-NOT: call
// CHECK-NOT: math.asinh
// CHECK-NOT: math.acosh
// CHECK-NOT: math.atanh
// CHECK-NOT: math.powf
// CHECK-NOT: math.atan2
// CHECK-NOT: math.asin
// CHECK-NOT: math.acos
// CHECK: arith.extf %{{.*}} : f32 to f64
// CHECK: math.roundeven %{{.*}} : f64
func.func @no_calls(%x: f32, %y: f32) -> (f32, f32, f32, f32, f32, f32, f32) {
  %a = math.asinh %x : f32
  %b = math.acosh %x : f32
  %c = math.atanh %x : f32
  %d = math.powf %x, %y : f32
  %e = math.atan2 %x, %y : f32
  %f = math.asin %x : f32
  %g = math.acos %x : f32
  return %a, %b, %c, %d, %e, %f, %g : f32, f32, f32, f32, f32, f32, f32
}
