// splitKernels: one module per kernel, named by content, so equal kernels
// compile once; and the driver sharing their code in an artifact.
#include "CompileForTest.h"
#include "kiln/Target/CPU/SplitKernels.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/IR/Verifier.h"

namespace {

// Two kernels with the same code under different names, and a third that
// differs by one constant; all call the same declaration.
constexpr const char *kKernels = R"mlir(
  llvm.func @expf(f32) -> f32
  llvm.func @kernel_0_exp(%a: i64, %b: i64, %p: !llvm.ptr) {
    llvm.call @kernel_0_exp_body(%p) : (!llvm.ptr) -> ()
    llvm.return
  }
  llvm.func internal @kernel_0_exp_body(%p: !llvm.ptr) {
    %0 = llvm.load %p : !llvm.ptr -> f32
    %1 = llvm.call @expf(%0) : (f32) -> f32
    llvm.store %1, %p : f32, !llvm.ptr
    llvm.return
  }
  llvm.func @kernel_1_exp(%a: i64, %b: i64, %p: !llvm.ptr) {
    llvm.call @kernel_1_exp_body(%p) : (!llvm.ptr) -> ()
    llvm.return
  }
  llvm.func internal @kernel_1_exp_body(%p: !llvm.ptr) {
    %0 = llvm.load %p : !llvm.ptr -> f32
    %1 = llvm.call @expf(%0) : (f32) -> f32
    llvm.store %1, %p : f32, !llvm.ptr
    llvm.return
  }
  llvm.func @kernel_2_add(%a: i64, %b: i64, %p: !llvm.ptr) {
    llvm.call @kernel_2_add_body(%p) : (!llvm.ptr) -> ()
    llvm.return
  }
  llvm.func internal @kernel_2_add_body(%p: !llvm.ptr) {
    %0 = llvm.load %p : !llvm.ptr -> f32
    %c = llvm.mlir.constant(2.0 : f32) : f32
    %1 = llvm.fadd %0, %c : f32
    llvm.store %1, %p : f32, !llvm.ptr
    llvm.return
  }
)mlir";

std::vector<std::string> symbolNames(mlir::ModuleOp module) {
  std::vector<std::string> names;
  for (mlir::Operation &op : module.getBody()->getOperations())
    if (auto symbol = mlir::dyn_cast<mlir::SymbolOpInterface>(op))
      names.push_back(symbol.getName().str());
  return names;
}

TEST(SplitKernelsTest, EqualKernelsShareASymbolAndEachModuleHoldsOnlyItsKernel) {
  mlir::MLIRContext context;
  context.loadDialect<mlir::LLVM::LLVMDialect>();
  auto module = mlir::parseSourceString<mlir::ModuleOp>(kKernels, &context);
  ASSERT_TRUE(module);
  std::vector<kiln::cpu::KernelModule> kernels = kiln::cpu::splitKernels(*module);
  ASSERT_EQ(kernels.size(), 3u);
  EXPECT_EQ(kernels[0].name, "kernel_0_exp");
  EXPECT_EQ(kernels[1].name, "kernel_1_exp");
  EXPECT_EQ(kernels[2].name, "kernel_2_add");
  EXPECT_EQ(kernels[0].symbol, kernels[1].symbol);
  EXPECT_NE(kernels[0].symbol, kernels[2].symbol);
  EXPECT_EQ(kernels[0].symbol.rfind("kiln_", 0), 0u) << kernels[0].symbol;

  const std::string &exp = kernels[0].symbol;
  EXPECT_EQ(symbolNames(*kernels[0].module),
            (std::vector<std::string>{"expf", exp, exp + "_body"}));
  const std::string &add = kernels[2].symbol;
  EXPECT_EQ(symbolNames(*kernels[2].module), (std::vector<std::string>{add, add + "_body"}))
      << "the declaration it does not call is left out";
  EXPECT_TRUE(mlir::succeeded(mlir::verify(*kernels[2].module)));
  // The original module is untouched.
  EXPECT_EQ(symbolNames(*module).size(), 7u);
}

TEST(SplitKernelsTest, RepeatedLayersShareCodeInTheArtifactAndCompileOncePerProcess) {
  // Two equal matmuls, one after the other (a layer applied twice): two kernels in
  // the plan, one symbol in the library.
  constexpr const char *graph = R"mlir(
    func.func @g(%x: tensor<16x8xf32>, %w: tensor<8x8xf32>) -> (tensor<16x8xf32>, tensor<16x8xf32>) {
      %0 = kiln_graph.matmul %x, %w : tensor<16x8xf32>, tensor<8x8xf32> -> tensor<16x8xf32>
      %1 = kiln_graph.matmul %0, %w : tensor<16x8xf32>, tensor<8x8xf32> -> tensor<16x8xf32>
      return %0, %1 : tensor<16x8xf32>, tensor<16x8xf32>
    })mlir";
  auto compile = [&] {
    mlir::MLIRContext context;
    kiln::loadCompilerDialects(context);
    auto module = mlir::parseSourceString<mlir::ModuleOp>(graph, &context);
    EXPECT_TRUE(module);
    auto compiled = kiln::compileGraphModule(*module, {});
    if (!compiled) {
      ADD_FAILURE() << llvm::toString(compiled.takeError());
      return kiln::CompiledGraph{};
    }
    return std::move(*compiled);
  };
  kiln::CompiledGraph first = compile();
  const auto &kernels = first.artifact.kernels;
  ASSERT_EQ(kernels.size(), 2u);
  EXPECT_NE(kernels[0].name, kernels[1].name);
  EXPECT_EQ(kernels[0].symbol, kernels[1].symbol);
  EXPECT_EQ(first.kernelsCompiled + first.kernelsReused, 2);
  EXPECT_GE(first.kernelsReused, 1);

  kiln::CompiledGraph second = compile();
  EXPECT_EQ(second.kernelsCompiled, 0) << "compiled earlier in this process";
  EXPECT_EQ(second.kernelsReused, 2);
  EXPECT_EQ(second.artifact.kernels[0].symbol, kernels[0].symbol);
}

} // namespace
