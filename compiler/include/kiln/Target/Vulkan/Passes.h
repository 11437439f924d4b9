#ifndef KILN_TARGET_VULKAN_PASSES_H
#define KILN_TARGET_VULKAN_PASSES_H

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVDialect.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace kiln::vulkan {

#define GEN_PASS_DECL
#include "kiln/Target/Vulkan/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "kiln/Target/Vulkan/Passes.h.inc"

} // namespace kiln::vulkan

#endif
