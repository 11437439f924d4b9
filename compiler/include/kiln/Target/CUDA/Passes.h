#ifndef KILN_TARGET_CUDA_PASSES_H
#define KILN_TARGET_CUDA_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace kiln::cuda {

#define GEN_PASS_DECL
#include "kiln/Target/CUDA/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "kiln/Target/CUDA/Passes.h.inc"

} // namespace kiln::cuda

#endif
