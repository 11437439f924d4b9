// The target seam: a target registered from outside the compiler (a toy that
// emits CPU code under another name and another vector width) compiles a
// graph end to end, and the passes see its description, not the machine's.
#include "CompileForTest.h"

#include "kiln/InitAll.h"
#include "kiln/Target/CPU/CpuCodegen.h"
#include "kiln/Target/CPU/CpuTarget.h"
#include "kiln/Target/CPU/TileSizes.h"
#include "kiln/Target/Target.h"

#include "mlir/IR/Builders.h"

namespace rt = kiln::runtime;
using namespace kiln;

namespace {

/// This machine's CPU under the name "toy", with 128-bit vectors only.
class ToyTarget final : public Target {
public:
  kernel::TargetAttr describe(mlir::MLIRContext &context) const override {
    cpu::CpuTarget host = cpu::CpuTarget::host();
    return kernel::TargetAttr::get(&context, "toy", "toy", host.format(), host.triple, host.cpu,
                                   host.features, /*vector_bits=*/128,
                                   /*vector_registers=*/16, 0, 0, 0, 0, 0);
  }
  std::vector<PipelineStage> kernelStages() const override { return cpu::kernelStages(); }
  llvm::Expected<SerializedKernels> serializeKernels(mlir::ModuleOp kernels,
                                                     bool keepText) const override {
    return cpu::generateSharedObject(kernels, cpu::CpuTarget::host(), keepText);
  }
};

void registerToy() {
  registerAllTargets();
  TargetRegistry::add({"toy", "'toy' (the registry test's target)",
                       [](llvm::StringRef name) -> llvm::Expected<std::unique_ptr<Target>> {
                         if (name != "toy")
                           return llvm::createStringError("toy takes no options");
                         return std::make_unique<ToyTarget>();
                       }});
}

constexpr const char *kPointwise = R"mlir(
  func.func @g(%x: tensor<37x19xf32>, %y: tensor<37x19xf32>) -> tensor<37x19xf32> {
    %0 = kiln_graph.add %x, %y : tensor<37x19xf32>, tensor<37x19xf32> -> tensor<37x19xf32>
    %1 = kiln_graph.relu %0 : tensor<37x19xf32> -> tensor<37x19xf32>
    %2 = kiln_graph.mul %1, %1 : tensor<37x19xf32>, tensor<37x19xf32> -> tensor<37x19xf32>
    return %2 : tensor<37x19xf32>
  })mlir";

TEST(TargetRegistryTest, AToyTargetCompilesAndRunsAPointwiseGraph) {
  registerToy();
  mlir::MLIRContext context;
  loadCompilerDialects(context);
  auto module = mlir::parseSourceString<mlir::ModuleOp>(kPointwise, &context);
  ASSERT_TRUE(module);
  CompileOptions options;
  options.target = "toy";
  options.keepStages = true;
  auto compiled = compileGraphModule(*module, options);
  ASSERT_TRUE(bool(compiled)) << llvm::toString(compiled.takeError());
  // The passes saw the toy's description on the module.
  ASSERT_GE(compiled->stages.size(), 2u);
  EXPECT_NE(compiled->stages[1].second.find("kind = \"toy\""), std::string::npos);
  EXPECT_NE(compiled->stages[1].second.find("vector_bits = 128"), std::string::npos);
  ASSERT_EQ(compiled->artifact.executables.size(), 1u);
  EXPECT_EQ(compiled->artifact.executables[0].format, cpu::CpuTarget::host().format());
  ASSERT_EQ(compiled->artifact.kernels.size(), 1u);

  std::vector<uint8_t> bytes = rt::serializeArtifact(compiled->artifact);
  rt::Artifact artifact;
  ASSERT_TRUE(rt::parseArtifact(bytes.data(), bytes.size(), artifact).ok());
  std::vector<float> x(37 * 19), y(37 * 19);
  for (size_t i = 0; i < x.size(); ++i) {
    x[i] = std::sin(0.37f * i);
    y[i] = std::cos(0.11f * i) - 0.3f;
  }
  std::unique_ptr<rt::Device> device = kiln::testing::cpuDevice(2);
  auto program = rt::Program::load(artifact, *device);
  ASSERT_TRUE(program.ok()) << program.status().message();
  rt::HostAllocator allocator;
  std::vector<std::shared_ptr<rt::Buffer>> allocated;
  std::vector<rt::OutputRef> outputs;
  rt::Status status = (*program)->run({x.data(), y.data()},
                                      {{rt::DType::F32, {37, 19}}, {rt::DType::F32, {37, 19}}},
                                      allocator, allocated, outputs);
  ASSERT_TRUE(status.ok()) << status.message();
  ASSERT_EQ(outputs.size(), 1u);
  const float *out = static_cast<const float *>(allocated[outputs[0].buffer]->data());
  for (size_t i = 0; i < x.size(); ++i) {
    float sum = std::max(x[i] + y[i], 0.0f);
    EXPECT_FLOAT_EQ(out[i], sum * sum) << i;
  }
}

TEST(TargetRegistryTest, AnUnknownNameListsEveryKind) {
  registerToy();
  auto parsed = TargetRegistry::parse("tpu:v5");
  ASSERT_FALSE(bool(parsed));
  std::string message = llvm::toString(parsed.takeError());
  EXPECT_NE(message.find("unknown target 'tpu:v5'"), std::string::npos) << message;
  EXPECT_NE(message.find("'cpu:x86-64-v3'"), std::string::npos) << message;
  EXPECT_NE(message.find("'toy'"), std::string::npos) << message;
}

/// The description of `name`, from the registry.
kernel::TargetAttr describe(mlir::MLIRContext &context, llvm::StringRef name) {
  registerAllTargets();
  auto parsed = TargetRegistry::parse(name);
  if (!parsed) {
    ADD_FAILURE() << llvm::toString(parsed.takeError());
    return {};
  }
  return (*parsed)->describe(context);
}

TEST(TargetRegistryTest, CpuNamesDescribeTheirHardware) {
  mlir::MLIRContext context;
  loadCompilerDialects(context);
  kernel::TargetAttr v3 = describe(context, "cpu:x86-64-v3");
  ASSERT_TRUE(v3);
  EXPECT_EQ(v3.getKind(), "cpu");
  EXPECT_EQ(v3.getFormat(), "cpu-x86_64");
  EXPECT_EQ(v3.getVectorBits(), 256);
  EXPECT_EQ(v3.getVectorRegisters(), 16);
  EXPECT_TRUE(v3.hasFeature("avx2"));
  EXPECT_FALSE(v3.hasFeature("avx512f"));
  kernel::TargetAttr v4 = describe(context, "cpu:x86-64-v4");
  ASSERT_TRUE(v4);
  EXPECT_EQ(v4.getVectorBits(), 512);
  EXPECT_EQ(v4.getVectorRegisters(), 32);
  // Parsed by the registry, so the Python option takes it too.
  kernel::TargetAttr arm = describe(context, "cpu:aarch64:neoverse-n1");
  ASSERT_TRUE(arm);
  EXPECT_EQ(arm.getFormat(), "cpu-aarch64");
  EXPECT_EQ(arm.getChip(), "neoverse-n1");
  EXPECT_EQ(arm.getVectorBits(), 128);
  EXPECT_EQ(arm.getVectorRegisters(), 32);
}

TEST(TileSizesTest, EachCpuGetsItsOwnTiles) {
  mlir::MLIRContext context;
  loadCompilerDialects(context);
  mlir::Builder b(&context);
  struct Expected {
    const char *target;
    int64_t vectorLength, rows, columns, dotRows;
  } cases[] = {
      {"cpu:x86-64-v4", 16, 8, 32, 4},
      {"cpu:x86-64-v3", 8, 6, 16, 3},
      {"cpu:x86-64-v2", 4, 6, 8, 3},
      {"cpu:aarch64", 4, 8, 8, 4}, // NEON's 32 registers: its own, taller tile
  };
  for (const Expected &expected : cases) {
    kernel::TargetAttr target = describe(context, expected.target);
    ASSERT_TRUE(target);
    cpu::MatmulTiles tiles = cpu::matmulTiles(target, b.getF32Type());
    EXPECT_EQ(tiles.vectorLength, expected.vectorLength) << expected.target;
    EXPECT_EQ(tiles.broadcast.rows, expected.rows) << expected.target;
    EXPECT_EQ(tiles.broadcast.columns, expected.columns) << expected.target;
    EXPECT_EQ(tiles.dot.rows, expected.dotRows) << expected.target;
  }
}

} // namespace
