// Compiles kiln_graph modules to artifacts and runs them with the runtime.
#include "CompileForTest.h"

#include <atomic>
#include <map>
#include <cmath>
#include <thread>

namespace rt = kiln::runtime;

namespace {

rt::Artifact compile(llvm::StringRef source) { return kiln::testing::compileForTest(source); }

float readFloat(rt::Buffer &buffer, int64_t i) {
  return static_cast<float *>(buffer.data())[i];
}

TEST(CompileAndRunTest, LinearReluSoftmaxMatchesReference) {
  rt::Artifact artifact = compile(R"mlir(
    func.func @g(%x: tensor<64x8xf32>, %w: tensor<4x8xf32>, %b: tensor<4xf32>) -> tensor<64x4xf32> {
      %wt = kiln_graph.permute %w {dims = array<i64: 1, 0>} : tensor<4x8xf32> -> tensor<8x4xf32>
      %0 = kiln_graph.matmul %x, %wt : tensor<64x8xf32>, tensor<8x4xf32> -> tensor<64x4xf32>
      %1 = kiln_graph.add %0, %b : tensor<64x4xf32>, tensor<4xf32> -> tensor<64x4xf32>
      %2 = kiln_graph.relu %1 : tensor<64x4xf32> -> tensor<64x4xf32>
      %3 = kiln_graph.softmax %2 {dim = 1 : i64} : tensor<64x4xf32> -> tensor<64x4xf32>
      return %3 : tensor<64x4xf32>
    })mlir");
  ASSERT_EQ(artifact.kernels.size(), 1u) << "matmul, bias, relu and softmax fuse";

  std::vector<float> x(64 * 8), w(4 * 8), b(4);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.1f * i);
  for (size_t i = 0; i < w.size(); ++i) w[i] = std::cos(0.3f * i);
  for (size_t i = 0; i < b.size(); ++i) b[i] = 0.1f * i - 0.1f;

  std::unique_ptr<rt::Device> device = kiln::testing::cpuDevice(2);
  auto program = rt::Program::load(artifact, *device);
  ASSERT_TRUE(program.ok()) << program.status().message();
  rt::HostAllocator allocator;
  std::vector<std::shared_ptr<rt::Buffer>> allocated;
  std::vector<rt::OutputRef> outputs;
  rt::Status status = (*program)->run(
      {x.data(), w.data(), b.data()},
      {{rt::DType::F32, {64, 8}}, {rt::DType::F32, {4, 8}}, {rt::DType::F32, {4}}},
      allocator, allocated, outputs);
  ASSERT_TRUE(status.ok()) << status.message();
  ASSERT_EQ(outputs.size(), 1u);
  rt::Buffer &out = *allocated[outputs[0].buffer];
  for (int r = 0; r < 64; ++r) {
    float row[4], max = -INFINITY, sum = 0;
    for (int c = 0; c < 4; ++c) {
      float acc = b[c];
      for (int k = 0; k < 8; ++k)
        acc += x[r * 8 + k] * w[c * 8 + k];
      row[c] = std::max(acc, 0.0f);
      max = std::max(max, row[c]);
    }
    for (float &v : row) sum += (v = std::exp(v - max));
    for (int c = 0; c < 4; ++c)
      EXPECT_NEAR(readFloat(out, r * 4 + c), row[c] / sum, 1e-5) << r << "," << c;
  }
}

TEST(CompileAndRunTest, ReshapeBetweenKernelsIsAView) {
  rt::Artifact artifact = compile(R"mlir(
    func.func @g(%x: tensor<4x6xf32>) -> tensor<24xf32> {
      %0 = kiln_graph.exp %x : tensor<4x6xf32> -> tensor<4x6xf32>
      %1 = kiln_graph.reshape %0 : tensor<4x6xf32> -> tensor<24xf32>
      return %1 : tensor<24xf32>
    })mlir");
  ASSERT_EQ(artifact.kernels.size(), 1u);
  // The output is the reshape: a view of exactly the buffer the exp kernel
  // wrote (its launch's last binding), with the reshaped type.
  ASSERT_EQ(artifact.launches.size(), 1u);
  ASSERT_FALSE(artifact.launches[0].bindings.empty());
  uint32_t produced = artifact.launches[0].bindings.back();
  EXPECT_EQ(artifact.buffers[produced].type, (rt::TensorDesc{rt::DType::F32, {4, 6}}));
  ASSERT_EQ(artifact.outputs.size(), 1u);
  const rt::BufferDesc &output = artifact.buffers[artifact.outputs[0]];
  EXPECT_EQ(output.kind, rt::BufferKind::View);
  EXPECT_EQ(output.source, produced);
  EXPECT_EQ(output.byteOffset, 0);
  EXPECT_EQ(output.type, (rt::TensorDesc{rt::DType::F32, {24}}));
}

TEST(CompileAndRunTest, InvalidGraphReportsLocatedDiagnostics) {
  // The add's declared result shape is not its operands' broadcast shape:
  // the error names the op's source location (the user's file and line).
  const char *source = R"mlir(
    func.func @g(%x: tensor<4xf32>, %y: tensor<3x4xf32>) -> tensor<4xf32> {
      %0 = kiln_graph.exp %x : tensor<4xf32> -> tensor<4xf32> loc("model.py":3:0)
      %1 = kiln_graph.add %0, %y : tensor<4xf32>, tensor<3x4xf32> -> tensor<4xf32> loc("model.py":7:4)
      return %1 : tensor<4xf32>
    })mlir";
  kiln::CompileOptions options;
  auto compiled = kiln::compileSource(source, "graph.mlir", options);
  ASSERT_FALSE(compiled);
  std::string message = llvm::toString(compiled.takeError());
  EXPECT_NE(message.find("loc(\"model.py\":7:4): 'kiln_graph.add' op result shape"),
            std::string::npos)
      << message;
}

TEST(CompileAndRunTest, UnknownTargetIsAnErrorListingTheTargets) {
  mlir::MLIRContext context;
  kiln::loadCompilerDialects(context);
  auto module = mlir::parseSourceString<mlir::ModuleOp>(R"mlir(
    func.func @g(%x: tensor<4xf32>) -> tensor<4xf32> {
      %0 = kiln_graph.exp %x : tensor<4xf32> -> tensor<4xf32>
      return %0 : tensor<4xf32>
    })mlir", &context);
  ASSERT_TRUE(module);
  kiln::CompileOptions options;
  options.target = "tpu";
  auto compiled = kiln::compileGraphModule(*module, options);
  ASSERT_FALSE(compiled);
  std::string message = llvm::toString(compiled.takeError());
  EXPECT_NE(message.find("unknown target 'tpu'"), std::string::npos) << message;
  EXPECT_NE(message.find("cpu:x86-64-v3"), std::string::npos) << message;
}

TEST(CompileAndRunTest, FailureNamesTheFxNodesItIsLocatedAt) {
  // The declared result shape is wrong: the verifier rejects the op, and the
  // failure names its FX node so the backend can run just that op eagerly.
  const char *json = R"json({"version": 1, "name": "g",
    "inputs": [{"name": "x", "shape": [2, 3], "dtype": "float32"}],
    "nodes": [
      {"name": "exp", "target": "aten.exp.default", "args": [{"ref": "x", "index": 0}],
       "kwargs": {}, "outputs": [{"shape": [2, 3], "dtype": "float32"}], "loc": null},
      {"name": "add_7", "target": "aten.add.Tensor",
       "args": [{"ref": "exp", "index": 0}, {"ref": "x", "index": 0}], "kwargs": {},
       "outputs": [{"shape": [3, 3], "dtype": "float32"}],
       "loc": {"file": "/u.py", "line": 5, "code": "y = x.exp() + x"}}],
    "outputs": [{"ref": "add_7", "index": 0}]})json";
  kiln::CompileOptions options;
  auto compiled = kiln::compileFxGraphJson(json, options);
  ASSERT_FALSE(compiled);
  std::vector<std::string> nodes;
  std::string message;
  llvm::handleAllErrors(compiled.takeError(), [&](const kiln::CompileFailure &failure) {
    nodes = failure.nodes;
    message = failure.message;
  });
  EXPECT_EQ(nodes, std::vector<std::string>{"add_7"});
  EXPECT_NE(message.find("\"/u.py\":5"), std::string::npos) << message;
  EXPECT_NE(message.find("broadcast"), std::string::npos) << message;
}

} // namespace

namespace {

// x -> mm -> t1 -> mm -> t2 -> mm -> t3 -> mm -> out: t1 dies when t3 is
// born, so they share arena bytes; the output keeps a buffer of its own.
constexpr const char *kMatmulChain = R"mlir(
  func.func @g(%x: tensor<32x32xf32>, %w: tensor<32x32xf32>) -> tensor<32x32xf32> {
    %0 = kiln_graph.matmul %x, %w : tensor<32x32xf32>, tensor<32x32xf32> -> tensor<32x32xf32>
    %1 = kiln_graph.matmul %0, %w : tensor<32x32xf32>, tensor<32x32xf32> -> tensor<32x32xf32>
    %2 = kiln_graph.matmul %1, %w : tensor<32x32xf32>, tensor<32x32xf32> -> tensor<32x32xf32>
    %3 = kiln_graph.matmul %2, %w : tensor<32x32xf32>, tensor<32x32xf32> -> tensor<32x32xf32>
    return %3 : tensor<32x32xf32>
  })mlir";

std::vector<float> runChain(const rt::Program &program, const std::vector<float> &x,
                            const std::vector<float> &w) {
  rt::HostAllocator allocator;
  std::vector<std::shared_ptr<rt::Buffer>> allocated;
  std::vector<rt::OutputRef> outputs;
  rt::Status status = program.run(
      {const_cast<float *>(x.data()), const_cast<float *>(w.data())},
      {{rt::DType::F32, {32, 32}}, {rt::DType::F32, {32, 32}}}, allocator, allocated, outputs);
  EXPECT_TRUE(status.ok()) << status.message();
  if (!status.ok())
    return {};
  EXPECT_EQ(allocated.size(), 1u) << "only the output is allocated per call";
  const float *out = static_cast<const float *>(allocated[outputs[0].buffer]->data());
  return std::vector<float>(out, out + 32 * 32);
}

TEST(CompileAndRunTest, IntermediatesShareOneArenaReusedAcrossConcurrentCalls) {
  rt::Artifact artifact = compile(kMatmulChain);
  ASSERT_EQ(artifact.kernels.size(), 4u);
  std::unique_ptr<rt::Device> device = kiln::testing::cpuDevice(2);
  auto program = rt::Program::load(artifact, *device);
  ASSERT_TRUE(program.ok()) << program.status().message();
  std::vector<float> x(32 * 32), w(32 * 32), reference(32 * 32);
  for (size_t i = 0; i < x.size(); ++i) {
    x[i] = std::sin(0.01f * i);
    w[i] = std::cos(0.07f * i) / 8;
  }
  auto bytes = (*program)->footprint({x.data(), w.data()},
                                     {{rt::DType::F32, {32, 32}}, {rt::DType::F32, {32, 32}}});
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  EXPECT_EQ(bytes->intermediates, 3 * 32 * 32 * 4) << "three intermediates";
  EXPECT_EQ(bytes->arena, 2 * 32 * 32 * 4) << "the first and the third share bytes";
  EXPECT_EQ(bytes->outputs, 32 * 32 * 4);
  std::vector<float> value = x;
  for (int layer = 0; layer < 4; ++layer) {
    for (int r = 0; r < 32; ++r)
      for (int c = 0; c < 32; ++c) {
        double acc = 0;
        for (int k = 0; k < 32; ++k)
          acc += value[r * 32 + k] * w[k * 32 + c];
        reference[r * 32 + c] = static_cast<float>(acc);
      }
    value = reference;
  }
  std::vector<float> serial = runChain(**program, x, w);
  ASSERT_EQ(serial.size(), reference.size());
  for (size_t i = 0; i < reference.size(); ++i)
    ASSERT_NEAR(serial[i], reference[i], 1e-4 * (1 + std::fabs(reference[i]))) << i;

  // Concurrent calls of one program: each holds an arena of its own.
  std::vector<std::thread> threads;
  std::atomic<int> mismatches{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 50; ++i)
        mismatches += runChain(**program, x, w) != serial;
    });
  for (std::thread &thread : threads)
    thread.join();
  EXPECT_EQ(mismatches.load(), 0);
  EXPECT_GE((*program)->arenasAllocated(), 1u);
  EXPECT_LE((*program)->arenasAllocated(), 5u);
}

} // namespace

namespace {

/// Loads `artifact` and runs it once; its first output's buffer (null, with
/// a failure recorded, if loading or running failed).
std::shared_ptr<rt::Buffer> runForFirstOutput(const rt::Artifact &artifact,
                                              const std::vector<void *> &inputs,
                                              const std::vector<rt::TensorDesc> &descs) {
  std::unique_ptr<rt::Device> device = kiln::testing::cpuDevice(2);
  auto program = rt::Program::load(artifact, *device);
  if (!program.ok()) {
    ADD_FAILURE() << program.status().message();
    return nullptr;
  }
  rt::HostAllocator allocator;
  std::vector<std::shared_ptr<rt::Buffer>> allocated;
  std::vector<rt::OutputRef> outputs;
  rt::Status status = (*program)->run(inputs, descs, allocator, allocated, outputs);
  if (!status.ok() || outputs.empty() || outputs[0].buffer < 0) {
    ADD_FAILURE() << status.message();
    return nullptr;
  }
  return allocated[outputs[0].buffer];
}

TEST(CompileAndRunTest, RepeatedLayersShareOneLoweredKernel) {
  // Two identical layers, softmax(exp(t + bias)), the second's bias the
  // column sums of the first's output (a kernel between them): the second
  // layer's kernel takes the first's code, and each computes its own input.
  mlir::MLIRContext context;
  kiln::loadCompilerDialects(context);
  auto module = mlir::parseSourceString<mlir::ModuleOp>(R"mlir(
    func.func @g(%x: tensor<64x32xf32>, %b: tensor<32xf32>) -> tensor<64x32xf32> {
      %0 = kiln_graph.add %x, %b : tensor<64x32xf32>, tensor<32xf32> -> tensor<64x32xf32>
      %1 = kiln_graph.exp %0 : tensor<64x32xf32> -> tensor<64x32xf32>
      %2 = kiln_graph.softmax %1 {dim = 1 : i64} : tensor<64x32xf32> -> tensor<64x32xf32>
      %3 = kiln_graph.sum %2 {dims = array<i64: 0>} : tensor<64x32xf32> -> tensor<32xf32>
      %4 = kiln_graph.add %2, %3 : tensor<64x32xf32>, tensor<32xf32> -> tensor<64x32xf32>
      %5 = kiln_graph.exp %4 : tensor<64x32xf32> -> tensor<64x32xf32>
      %6 = kiln_graph.softmax %5 {dim = 1 : i64} : tensor<64x32xf32> -> tensor<64x32xf32>
      return %6 : tensor<64x32xf32>
    })mlir", &context);
  ASSERT_TRUE(module);
  auto compiled = kiln::compileGraphModule(*module, {});
  ASSERT_TRUE(static_cast<bool>(compiled)) << llvm::toString(compiled.takeError());
  const rt::Artifact &artifact = compiled->artifact;
  ASSERT_EQ(artifact.kernels.size(), 3u);
  EXPECT_EQ(artifact.kernels[0].symbol, artifact.kernels[2].symbol);
  EXPECT_NE(artifact.kernels[0].symbol, artifact.kernels[1].symbol);
  EXPECT_EQ(compiled->kernelsReused, 1);

  std::vector<float> x(64 * 32), b(32);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.01f * i);
  for (size_t i = 0; i < b.size(); ++i) b[i] = 0.05f * i - 0.5f;
  std::shared_ptr<rt::Buffer> result =
      runForFirstOutput(artifact, {x.data(), b.data()},
                        {{rt::DType::F32, {64, 32}}, {rt::DType::F32, {32}}});
  ASSERT_TRUE(result);
  auto layer = [](const std::vector<float> &in, const std::vector<float> &bias) {
    std::vector<float> out(in.size());
    for (int r = 0; r < 64; ++r) {
      float max = -INFINITY, sum = 0;
      for (int c = 0; c < 32; ++c)
        max = std::max(max, out[r * 32 + c] = std::exp(in[r * 32 + c] + bias[c]));
      for (int c = 0; c < 32; ++c)
        sum += (out[r * 32 + c] = std::exp(out[r * 32 + c] - max));
      for (int c = 0; c < 32; ++c)
        out[r * 32 + c] /= sum;
    }
    return out;
  };
  std::vector<float> first = layer(x, b), columns(32, 0.0f);
  for (int r = 0; r < 64; ++r)
    for (int c = 0; c < 32; ++c)
      columns[c] += first[r * 32 + c];
  std::vector<float> expected = layer(first, columns);
  for (size_t i = 0; i < expected.size(); ++i)
    ASSERT_NEAR(readFloat(*result, i), expected[i], 1e-5) << i;
}

} // namespace

namespace {

TEST(CompileAndRunTest, KernelTemporariesLiveInTheLaunchScratchBuffer) {
  // A normalization over rows whose centred values feed both the variance
  // and the output: the kernel keeps them in a temporary, which moves into
  // a scratch buffer of the plan (bound last, private to the launch) that
  // the workgroups share, each writing its own rows. (48 KB: more than a
  // kernel puts on its stack.)
  rt::Artifact artifact = compile(R"mlir(
    func.func @g(%x: tensor<6x4x512xf32>) -> tensor<6x4x512xf32> {
      %mean = kiln_graph.mean %x {dims = array<i64: 2>, keepdim = true} : tensor<6x4x512xf32> -> tensor<6x4x1xf32>
      %d = kiln_graph.sub %x, %mean : tensor<6x4x512xf32>, tensor<6x4x1xf32> -> tensor<6x4x512xf32>
      %sq = kiln_graph.mul %d, %d : tensor<6x4x512xf32>, tensor<6x4x512xf32> -> tensor<6x4x512xf32>
      %var = kiln_graph.mean %sq {dims = array<i64: 2>, keepdim = true} : tensor<6x4x512xf32> -> tensor<6x4x1xf32>
      %r = kiln_graph.rsqrt %var : tensor<6x4x1xf32> -> tensor<6x4x1xf32>
      %y = kiln_graph.mul %d, %r : tensor<6x4x512xf32>, tensor<6x4x1xf32> -> tensor<6x4x512xf32>
      return %y : tensor<6x4x512xf32>
    })mlir");
  ASSERT_EQ(artifact.kernels.size(), 1u);
  ASSERT_EQ(artifact.launches.size(), 1u);
  const rt::LaunchCmd &launch = artifact.launches[0];
  ASSERT_EQ(launch.bindings.size(), artifact.kernels[0].numBindings);
  const rt::BufferDesc &scratch = artifact.buffers[launch.bindings.back()];
  EXPECT_EQ(scratch.kind, rt::BufferKind::Alloc);
  EXPECT_EQ(scratch.type.dtype, rt::DType::U8);
  ASSERT_EQ(scratch.type.shape.size(), 1u);
  EXPECT_GE(scratch.type.shape[0], 6 * 4 * 512 * 4) << "the whole centred tensor, shared";

  std::vector<float> x(6 * 4 * 512);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.37f * i) + 0.01f * (i % 512);
  for (int threads : {1, 2, 4}) {
    std::unique_ptr<rt::Device> device = kiln::testing::cpuDevice(threads);
    auto program = rt::Program::load(artifact, *device);
    ASSERT_TRUE(program.ok()) << program.status().message();
    rt::HostAllocator allocator;
    std::vector<std::shared_ptr<rt::Buffer>> allocated;
    std::vector<rt::OutputRef> outputs;
    rt::Status status = (*program)->run({x.data()}, {{rt::DType::F32, {6, 4, 512}}}, allocator,
                                        allocated, outputs);
    ASSERT_TRUE(status.ok()) << status.message();
    rt::Buffer &out = *allocated[outputs[0].buffer];
    for (int row = 0; row < 6 * 4; ++row) {
      double mean = 0, var = 0;
      for (int i = 0; i < 512; ++i) mean += x[row * 512 + i] / 512.0;
      for (int i = 0; i < 512; ++i) var += std::pow(x[row * 512 + i] - mean, 2) / 512.0;
      for (int i = 0; i < 512; ++i)
        ASSERT_NEAR(readFloat(out, row * 512 + i), (x[row * 512 + i] - mean) / std::sqrt(var), 1e-4)
            << threads << " threads, row " << row << ", " << i;
    }
  }
}

} // namespace
