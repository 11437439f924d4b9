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

// -----

// atan2 of two zeros is 0 or pi by x's sign bit, signed as y, where the
// polynomial divides 0 by 0.
// CHECK-LABEL: func.func @atan2_of_zeros
// CHECK-SAME: (%[[Y:.*]]: f32, %[[X:.*]]: f32)
// CHECK-DAG: %[[PI:.*]] = arith.constant 3.14159{{[0-9]*}} : f32
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1.0{{.*}} : f32
// CHECK: %[[SIGN:.*]] = math.copysign %[[ONE]], %[[X]] : f32
// CHECK-NEXT: %[[NEG:.*]] = arith.cmpf olt, %[[SIGN]], %[[ZERO:.*]] : f32
// CHECK-NEXT: %[[YZERO:.*]] = arith.cmpf oeq, %[[Y]], %[[ZERO]] : f32
// CHECK-NEXT: %[[XZERO:.*]] = arith.cmpf oeq, %[[X]], %[[ZERO]] : f32
// CHECK-NEXT: %[[BOTH:.*]] = arith.andi %[[YZERO]], %[[XZERO]] : i1
// CHECK-NEXT: %[[ANGLE:.*]] = arith.select %[[NEG]], %[[PI]], %[[ZERO]] : f32
// CHECK-NEXT: %[[AXIS:.*]] = math.copysign %[[ANGLE]], %[[Y]] : f32
// CHECK-NEXT: %[[R:.*]] = arith.select %[[BOTH]], %[[AXIS]], %{{.*}} : f32
// CHECK-NEXT: return %[[R]]
// CHECK-NOT: math.atan2
func.func @atan2_of_zeros(%y: f32, %x: f32) -> f32 {
  %a = math.atan2 %y, %x : f32
  return %a : f32
}
