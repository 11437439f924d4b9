// Graphs with symbolic sizes: one artifact, run at many sizes, checked
// against a reference computed here, and inputs that break the graph's
// relations rejected with an error that names them.
#include "CompileForTest.h"

#include <cmath>

namespace rt = kiln::runtime;

namespace {

rt::Artifact compile(llvm::StringRef source) { return kiln::testing::compileForTest(source); }

// x [s0, 8] -> softmax(relu(x @ w + b)) with w [8, 20]: a matmul whose M is
// symbolic and whose N (20) is not a multiple of any vector width.
constexpr const char *kLinearSoftmax = R"mlir(
  #s0 = affine_map<()[s0] -> (s0)>
  func.func @g(%x: tensor<?x8xf32, #s0>, %w: tensor<8x20xf32>, %b: tensor<20xf32>)
      -> tensor<?x20xf32, #s0>
      attributes {kiln_graph.symbols = [{name = "s77", min = 1 : i64, max = 100000 : i64}]} {
    %0 = kiln_graph.matmul %x, %w : tensor<?x8xf32, #s0>, tensor<8x20xf32> -> tensor<?x20xf32, #s0>
    %1 = kiln_graph.add %0, %b : tensor<?x20xf32, #s0>, tensor<20xf32> -> tensor<?x20xf32, #s0>
    %2 = kiln_graph.relu %1 : tensor<?x20xf32, #s0> -> tensor<?x20xf32, #s0>
    %3 = kiln_graph.softmax %2 {dim = 1 : i64} : tensor<?x20xf32, #s0> -> tensor<?x20xf32, #s0>
    return %3 : tensor<?x20xf32, #s0>
  })mlir";

struct RunResult {
  rt::Status status;
  std::vector<std::shared_ptr<rt::Buffer>> allocated;
  std::vector<rt::OutputRef> outputs;
};

RunResult run(const rt::Program &program, const std::vector<void *> &inputs,
        const std::vector<rt::TensorDesc> &descs) {
  RunResult result;
  rt::HostAllocator allocator;
  result.status = program.run(inputs, descs, allocator, result.allocated, result.outputs);
  return result;
}

TEST(SymbolicShapesTest, OneArtifactRunsEveryBatchSize) {
  rt::Artifact artifact = compile(kLinearSoftmax);
  ASSERT_EQ(artifact.symbols.size(), 1u);
  EXPECT_EQ(artifact.symbols[0].name, "s77");
  EXPECT_EQ(artifact.symbols[0].input, 0u);
  EXPECT_EQ(artifact.symbols[0].dim, 0u);
  ASSERT_EQ(artifact.kernels.size(), 1u) << "matmul, bias, relu and softmax fuse";
  EXPECT_FALSE(artifact.launches[0].symbolicWorkgroups.empty());

  std::unique_ptr<rt::Device> device = kiln::testing::cpuDevice(2);
  auto program = rt::Program::load(artifact, *device);
  ASSERT_TRUE(program.ok()) << program.status().message();
  std::vector<float> w(8 * 20), b(20);
  for (size_t i = 0; i < w.size(); ++i) w[i] = std::cos(0.3f * i);
  for (size_t i = 0; i < b.size(); ++i) b[i] = 0.05f * i - 0.3f;
  for (int64_t batch : {1, 2, 5, 6, 7, 13, 64, 97, 1000}) {
    std::vector<float> x(batch * 8);
    for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.1f * i + batch);
    RunResult r = run(**program, {x.data(), w.data(), b.data()},
                {{rt::DType::F32, {batch, 8}}, {rt::DType::F32, {8, 20}}, {rt::DType::F32, {20}}});
    ASSERT_TRUE(r.status.ok()) << r.status.message();
    ASSERT_EQ(r.outputs.size(), 1u);
    EXPECT_EQ(r.outputs[0].type.shape, (std::vector<int64_t>{batch, 20}));
    const float *out = static_cast<const float *>(r.allocated[r.outputs[0].buffer]->data());
    for (int64_t row = 0; row < batch; ++row) {
      float values[20], max = -INFINITY, sum = 0;
      for (int c = 0; c < 20; ++c) {
        float acc = b[c];
        for (int k = 0; k < 8; ++k)
          acc += x[row * 8 + k] * w[k * 20 + c];
        values[c] = std::max(acc, 0.0f);
        max = std::max(max, values[c]);
      }
      for (float &v : values) sum += (v = std::exp(v - max));
      for (int c = 0; c < 20; ++c)
        ASSERT_NEAR(out[row * 20 + c], values[c] / sum, 1e-5) << batch << ": " << row << "," << c;
    }
  }
}

TEST(SymbolicShapesTest, ReshapesAndReductionsOverProductsOfSymbols) {
  // [s0, s1, 4] -> mean over the last two dims of x * 2, viewed as [s0 * s1, 4].
  rt::Artifact artifact = compile(R"mlir(
    #a = affine_map<()[s0, s1] -> (s0, s1)>
    #p = affine_map<()[s0, s1] -> (s0 * s1)>
    #b = affine_map<()[s0] -> (s0)>
    func.func @g(%x: tensor<?x?x4xf32, #a>) -> (tensor<?x4xf32, #p>, tensor<?xf32, #b>)
        attributes {kiln_graph.symbols = [{name = "s0", min = 2 : i64, max = 4096 : i64},
                                          {name = "s1", min = 2 : i64, max = 4096 : i64}]} {
      %two = kiln_graph.constant dense<2.0> : tensor<f32>
      %0 = kiln_graph.mul %x, %two : tensor<?x?x4xf32, #a>, tensor<f32> -> tensor<?x?x4xf32, #a>
      %1 = kiln_graph.reshape %0 : tensor<?x?x4xf32, #a> -> tensor<?x4xf32, #p>
      %2 = kiln_graph.mean %0 {dims = array<i64: 1, 2>} : tensor<?x?x4xf32, #a> -> tensor<?xf32, #b>
      return %1, %2 : tensor<?x4xf32, #p>, tensor<?xf32, #b>
    })mlir");
  std::unique_ptr<rt::Device> device = kiln::testing::cpuDevice(2);
  auto program = rt::Program::load(artifact, *device);
  ASSERT_TRUE(program.ok()) << program.status().message();
  for (auto [s0, s1] : std::vector<std::pair<int64_t, int64_t>>{{2, 3}, {5, 17}, {33, 2}}) {
    std::vector<float> x(s0 * s1 * 4);
    for (size_t i = 0; i < x.size(); ++i) x[i] = 0.25f * (i % 7);
    RunResult r = run(**program, {x.data()}, {{rt::DType::F32, {s0, s1, 4}}});
    ASSERT_TRUE(r.status.ok()) << r.status.message();
    EXPECT_EQ(r.outputs[0].type.shape, (std::vector<int64_t>{s0 * s1, 4}));
    EXPECT_EQ(r.outputs[1].type.shape, (std::vector<int64_t>{s0}));
    auto data = [&](int o) {
      const rt::OutputRef &ref = r.outputs[o];
      return reinterpret_cast<const float *>(
          static_cast<const char *>(r.allocated[ref.buffer]->data()) + ref.byteOffset);
    };
    for (size_t i = 0; i < x.size(); ++i)
      ASSERT_FLOAT_EQ(data(0)[i], 2 * x[i]);
    for (int64_t i = 0; i < s0; ++i) {
      double sum = 0;
      for (int64_t j = 0; j < s1 * 4; ++j)
        sum += 2 * x[i * s1 * 4 + j];
      ASSERT_NEAR(data(1)[i], sum / (s1 * 4), 1e-5);
    }
  }
}

TEST(SymbolicShapesTest, InputsThatBreakTheGraphsRelationsAreNamed) {
  rt::Artifact artifact = compile(R"mlir(
    #s0 = affine_map<()[s0] -> (s0)>
    func.func @g(%x: tensor<?x4xf32, #s0>, %y: tensor<?x4xf32, #s0>) -> tensor<?x4xf32, #s0>
        attributes {kiln_graph.symbols = [{name = "s77", min = 2 : i64, max = 64 : i64}]} {
      %0 = kiln_graph.add %x, %y : tensor<?x4xf32, #s0>, tensor<?x4xf32, #s0> -> tensor<?x4xf32, #s0>
      return %0 : tensor<?x4xf32, #s0>
    })mlir");
  std::unique_ptr<rt::Device> device = kiln::testing::cpuDevice(1);
  auto program = rt::Program::load(artifact, *device);
  ASSERT_TRUE(program.ok()) << program.status().message();
  std::vector<float> x(100 * 4), y(100 * 4);
  RunResult r = run(**program, {x.data(), y.data()},
              {{rt::DType::F32, {3, 4}}, {rt::DType::F32, {5, 4}}});
  ASSERT_FALSE(r.status.ok());
  EXPECT_NE(r.status.message().find("input 1 (float32[5x4]) dim 0 is 5, but the graph requires "
                                    "it to equal s77 = 3"),
            std::string::npos)
      << r.status.message();

  r = run(**program, {x.data(), y.data()}, {{rt::DType::F32, {1, 4}}, {rt::DType::F32, {1, 4}}});
  ASSERT_FALSE(r.status.ok());
  EXPECT_NE(r.status.message().find("dim 0 is 1, but the graph was compiled for s77 in [2, 64]"),
            std::string::npos)
      << r.status.message();

  r = run(**program, {x.data(), y.data()}, {{rt::DType::F32, {3, 5}}, {rt::DType::F32, {3, 4}}});
  ASSERT_FALSE(r.status.ok());
  EXPECT_NE(r.status.message().find("input 0: expected float32[?x4]"), std::string::npos)
      << r.status.message();

  r = run(**program, {x.data(), y.data()}, {{rt::DType::F32, {64, 4}}, {rt::DType::F32, {64, 4}}});
  EXPECT_TRUE(r.status.ok()) << r.status.message();
}

TEST(SymbolicShapesTest, ASymbolThatIsNoInputsDimIsPassedAsAValue) {
  // arange(n) for an int argument n: the plan reads s0 from the 0-d input.
  rt::Artifact artifact = compile(R"mlir(
    #s0 = affine_map<()[s0] -> (s0)>
    func.func @g(%n: tensor<i64> {kiln_graph.symbol = 0 : i64}) -> tensor<?xi64, #s0>
        attributes {kiln_graph.symbols = [{name = "s5", min = 2 : i64, max = 1000 : i64}]} {
      %0 = kiln_graph.iota {start = 3 : i64, step = 2 : i64} : tensor<?xi64, #s0>
      return %0 : tensor<?xi64, #s0>
    })mlir");
  ASSERT_EQ(artifact.symbols.size(), 1u);
  EXPECT_EQ(artifact.symbols[0].dim, rt::kSymbolValue);
  std::unique_ptr<rt::Device> device = kiln::testing::cpuDevice(1);
  auto program = rt::Program::load(artifact, *device);
  ASSERT_TRUE(program.ok()) << program.status().message();
  for (int64_t n : {2, 7, 100}) {
    RunResult r = run(**program, {&n}, {{rt::DType::I64, {}}});
    ASSERT_TRUE(r.status.ok()) << r.status.message();
    EXPECT_EQ(r.outputs[0].type.shape, (std::vector<int64_t>{n}));
    const int64_t *out = static_cast<const int64_t *>(r.allocated[r.outputs[0].buffer]->data());
    for (int64_t i = 0; i < n; ++i)
      ASSERT_EQ(out[i], 3 + 2 * i);
  }
  int64_t tooBig = 1001;
  RunResult r = run(**program, {&tooBig}, {{rt::DType::I64, {}}});
  ASSERT_FALSE(r.status.ok());
  EXPECT_NE(r.status.message().find("is 1001, but the graph was compiled for s5 in [2, 1000]"),
            std::string::npos)
      << r.status.message();
}

} // namespace
