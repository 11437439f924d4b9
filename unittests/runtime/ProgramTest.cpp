//===- ProgramTest.cpp - Loading and running artifacts with real kernels -===//
//
// test_kernels.c is built as a real shared object; its bytes go into an
// artifact exactly as the compiler would put them there.
//
//===----------------------------------------------------------------------===//

#include "kiln/runtime/HostCpu.h"
#include "kiln/runtime/Runtime.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <optional>
#include <cstdlib>
#include <thread>

using namespace kiln::runtime;

namespace {

constexpr int64_t kN = 1000; // elements per kernel call, fixed in the kernels

std::vector<uint8_t> readKernelLibrary() {
  std::ifstream file(KILN_TEST_KERNELS_PATH, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(file), {});
}

TensorDesc f32(std::vector<int64_t> shape) {
  return TensorDesc{DType::F32, std::move(shape)};
}

/// out = 2 * (x + y), computed into the second half of a scratch buffer, with
/// views of views and an output that aliases an input.
Artifact sampleArtifact() {
  Artifact a;
  a.target = hostCpuTarget();
  a.graphName = "add_then_double";
  a.buffers = {
      {BufferKind::Input, f32({kN}), 0, 0},        // 0: x
      {BufferKind::Input, f32({kN}), 1, 0},        // 1: y
      {BufferKind::Alloc, f32({2 * kN}), 0, 0},    // 2: scratch
      {BufferKind::View, f32({kN}), 2, 4 * kN},    // 3: second half of 2
      {BufferKind::View, f32({10, 10}), 3, 400},   // 4: 3[100:200]
      {BufferKind::View, f32({10, 100}), 1, 0},    // 5: y reshaped
  };
  a.kernels = {{"add_f32", 3, "kernel_0_add"},
               {"double_f32", 1, "kernel_1_double"},
               {"poison_f32", 1, "kernel_2_poison"}};
  a.launches = {{0, 4, {0, 1, 3}}, {1, 3, {3}}, {2, 0, {3}}};
  a.outputs = {3, 4, 5};
  a.library = readKernelLibrary();
  a.metadata = "{}";
  return a;
}

/// Sends the artifact through the encoder and decoder, as a file would.
Artifact roundTrip(const Artifact &artifact) {
  std::vector<uint8_t> bytes = serializeArtifact(artifact);
  Artifact parsed;
  Status status = parseArtifact(bytes.data(), bytes.size(), parsed);
  EXPECT_TRUE(status.ok()) << status.message();
  return parsed;
}

std::unique_ptr<Program> loadSample(CpuDevice &device) {
  StatusOr<std::unique_ptr<Program>> program =
      Program::load(roundTrip(sampleArtifact()), device);
  EXPECT_TRUE(program.ok()) << program.status().message();
  return program.ok() ? std::move(*program) : nullptr;
}

struct Inputs {
  std::vector<float> x, y;
  explicit Inputs(float seed) : x(kN), y(kN) {
    for (int64_t i = 0; i < kN; ++i) {
      x[i] = seed + static_cast<float>(i);
      y[i] = 0.5f * static_cast<float>(i);
    }
  }
  std::vector<void *> pointers() { return {x.data(), y.data()}; }
  std::vector<TensorDesc> descs() const { return {f32({kN}), f32({kN})}; }
};

const float *at(const std::shared_ptr<Buffer> &buffer, int64_t byteOffset) {
  return reinterpret_cast<const float *>(
      static_cast<const char *>(buffer->data()) + byteOffset);
}

/// Runs once and checks every output.
void runAndCheck(const Program &program, float seed) {
  Inputs in(seed);
  HostAllocator allocator;
  std::vector<std::shared_ptr<Buffer>> allocated;
  std::vector<OutputRef> outputs;
  Status status =
      program.run(in.pointers(), in.descs(), allocator, allocated, outputs);
  ASSERT_TRUE(status.ok()) << status.message();
  ASSERT_EQ(allocated.size(), 1u);
  ASSERT_EQ(outputs.size(), 3u);

  EXPECT_EQ(outputs[0].buffer, 0);
  EXPECT_EQ(outputs[0].input, -1);
  EXPECT_EQ(outputs[0].byteOffset, 4 * kN);
  EXPECT_EQ(outputs[0].type, f32({kN}));
  const float *out = at(allocated[0], outputs[0].byteOffset);
  for (int64_t i = 0; i < kN; ++i)
    ASSERT_FLOAT_EQ(out[i], 2.0f * (in.x[i] + in.y[i])) << "element " << i;

  EXPECT_EQ(outputs[1].buffer, 0);
  EXPECT_EQ(outputs[1].input, -1);
  EXPECT_EQ(outputs[1].byteOffset, 4 * kN + 400);
  EXPECT_EQ(outputs[1].type, f32({10, 10}));
  EXPECT_EQ(at(allocated[0], outputs[1].byteOffset)[0], out[100]);

  EXPECT_EQ(outputs[2].buffer, -1);
  EXPECT_EQ(outputs[2].input, 1);
  EXPECT_EQ(outputs[2].byteOffset, 0);
  EXPECT_EQ(outputs[2].type, f32({10, 100}));
}

#define EXPECT_ERROR_HAS(status, text)                                         \
  do {                                                                         \
    Status s_ = (status);                                                      \
    EXPECT_FALSE(s_.ok());                                                     \
    EXPECT_NE(s_.message().find(text), std::string::npos)                      \
        << "message: " << s_.message();                                        \
  } while (0)

/// Hands out host memory but records what it was asked for, or fails.
class RecordingAllocator : public Allocator {
public:
  std::vector<TensorDesc> requests;
  bool fail = false;
  StatusOr<std::shared_ptr<Buffer>> allocate(const TensorDesc &desc) override {
    requests.push_back(desc);
    if (fail)
      return Status::error("pool exhausted");
    return host.allocate(desc);
  }

private:
  HostAllocator host;
};

} // namespace

TEST(ProgramTest, RunsKernels) {
  ASSERT_FALSE(readKernelLibrary().empty()) << KILN_TEST_KERNELS_PATH;
  CpuDevice device(2);
  std::unique_ptr<Program> program = loadSample(device);
  ASSERT_TRUE(program);
  EXPECT_EQ(program->artifact().graphName, "add_then_double");
  ASSERT_EQ(program->inputDescs().size(), 2u);
  runAndCheck(*program, 1.0f);
  runAndCheck(*program, -3.0f); // programs run many times
}

TEST(ProgramTest, ConcurrentRuns) {
  CpuDevice device(2);
  std::unique_ptr<Program> program = loadSample(device);
  ASSERT_TRUE(program);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&program, t] {
      for (int round = 0; round < 20; ++round)
        runAndCheck(*program, static_cast<float>(t * 100 + round));
    });
  for (std::thread &thread : threads)
    thread.join();
}

TEST(ProgramTest, UsesGivenAllocator) {
  CpuDevice device(2);
  std::unique_ptr<Program> program = loadSample(device);
  ASSERT_TRUE(program);
  Inputs in(0.0f);
  RecordingAllocator allocator;
  std::vector<std::shared_ptr<Buffer>> allocated;
  std::vector<OutputRef> outputs;
  ASSERT_TRUE(
      program->run(in.pointers(), in.descs(), allocator, allocated, outputs)
          .ok());
  ASSERT_EQ(allocator.requests.size(), 1u);
  EXPECT_EQ(allocator.requests[0], f32({2 * kN}));

  allocator.fail = true;
  EXPECT_ERROR_HAS(
      program->run(in.pointers(), in.descs(), allocator, allocated, outputs),
      "allocating buffer 2 (float32[2000]): pool exhausted");
  EXPECT_TRUE(allocated.empty());
  EXPECT_TRUE(outputs.empty());
}

TEST(ProgramTest, RejectsMismatchedInputs) {
  CpuDevice device(2);
  std::unique_ptr<Program> program = loadSample(device);
  ASSERT_TRUE(program);
  Inputs in(0.0f);
  HostAllocator allocator;
  std::vector<std::shared_ptr<Buffer>> allocated;
  std::vector<OutputRef> outputs;

  std::vector<TensorDesc> descs = in.descs();
  descs[1] = f32({999});
  EXPECT_ERROR_HAS(
      program->run(in.pointers(), descs, allocator, allocated, outputs),
      "input 1: expected float32[1000], got float32[999]");

  descs = in.descs();
  descs[0].dtype = DType::I32;
  EXPECT_ERROR_HAS(
      program->run(in.pointers(), descs, allocator, allocated, outputs),
      "input 0: expected float32[1000], got int32[1000]");

  EXPECT_ERROR_HAS(program->run({in.x.data()}, {f32({kN})}, allocator,
                                allocated, outputs),
                   "takes 2 inputs, got 1 pointers and 1 descs");

  EXPECT_ERROR_HAS(program->run({in.x.data(), nullptr}, in.descs(), allocator,
                                allocated, outputs),
                   "input 1 (float32[1000]): null data pointer");
}

TEST(ProgramTest, MissingSymbolIsNamed) {
  Artifact artifact = sampleArtifact();
  artifact.kernels[1].symbol = "no_such_kernel";
  CpuDevice device(2);
  StatusOr<std::unique_ptr<Program>> program =
      Program::load(roundTrip(artifact), device);
  ASSERT_FALSE(program.ok());
  EXPECT_ERROR_HAS(program.status(), "no symbol 'no_such_kernel'");
  EXPECT_ERROR_HAS(program.status(), "kernel_1_double");
}

TEST(ProgramTest, GarbageLibraryIsAnError) {
  Artifact artifact = sampleArtifact();
  artifact.library = {'n', 'o', 't', ' ', 'e', 'l', 'f'};
  CpuDevice device(1);
  StatusOr<std::unique_ptr<Program>> program =
      Program::load(std::move(artifact), device);
  ASSERT_FALSE(program.ok());
  EXPECT_ERROR_HAS(program.status(), "dlopen failed");
}

TEST(ProgramTest, RejectsOtherTargets) {
  Artifact artifact = sampleArtifact();
  artifact.target = "cuda-sm90";
  CpuDevice device(1);
  StatusOr<std::unique_ptr<Program>> program =
      Program::load(std::move(artifact), device);
  ASSERT_FALSE(program.ok());
  EXPECT_ERROR_HAS(program.status(), "compiled for target 'cuda-sm90'");
}

TEST(ProgramTest, RejectsKernelsForAnotherCpu) {
  // The features are checked against the CPU before any kernel code runs
  // (a missing one would be SIGILL); the error names what is missing.
  std::vector<std::string> missing = missingCpuFeatures(
      {"avx2", "avx512f", "fast-gather", "avx512bf16"}, [](std::string_view name) {
        if (name == "fast-gather")
          return std::optional<bool>(); // a tuning flag: nothing to ask
        return std::optional<bool>(name == "avx2");
      });
  EXPECT_EQ(missing, (std::vector<std::string>{"avx512f", "avx512bf16"}));
#if defined(__x86_64__)
  if (hostHasCpuFeature("avx512er") != false)
    GTEST_SKIP() << "this CPU has AVX-512ER (a Xeon Phi): no feature left to miss";
  ASSERT_EQ(hostHasCpuFeature("sse4.1"), true) << "every x86-64 CPU Kiln runs on has SSE4.1";
  Artifact artifact = sampleArtifact();
  artifact.cpu = "knl";
  artifact.cpuFeatures = {"sse4.1", "avx512er"};
  CpuDevice device(1);
  StatusOr<std::unique_ptr<Program>> program = Program::load(std::move(artifact), device);
  ASSERT_FALSE(program.ok());
  EXPECT_ERROR_HAS(program.status(), "compiled for CPU 'knl', and this CPU lacks avx512er");
#endif
}

TEST(ProgramTest, RejectsInvalidArtifact) {
  Artifact artifact = sampleArtifact();
  artifact.launches[0].bindings[0] = 42;
  CpuDevice device(1);
  StatusOr<std::unique_ptr<Program>> program =
      Program::load(std::move(artifact), device);
  ASSERT_FALSE(program.ok());
  EXPECT_ERROR_HAS(program.status(), "launch 0: binding 0 refers to buffer 42");
}

TEST(ProgramTest, ProgramWithoutKernels) {
  Artifact artifact;
  artifact.target = hostCpuTarget();
  artifact.buffers = {{BufferKind::Input, f32({4}), 0, 0},
                      {BufferKind::View, f32({2}), 0, 8}};
  artifact.outputs = {1};
  CpuDevice device(1);
  StatusOr<std::unique_ptr<Program>> program =
      Program::load(std::move(artifact), device);
  ASSERT_TRUE(program.ok()) << program.status().message();
  float data[4] = {1, 2, 3, 4};
  HostAllocator allocator;
  std::vector<std::shared_ptr<Buffer>> allocated;
  std::vector<OutputRef> outputs;
  ASSERT_TRUE((*program)
                  ->run({data}, {f32({4})}, allocator, allocated, outputs)
                  .ok());
  ASSERT_EQ(outputs.size(), 1u);
  EXPECT_EQ(outputs[0].input, 0);
  EXPECT_EQ(outputs[0].byteOffset, 8);
}

/// A check reads a bool once the launches before it have run; a false one
/// fails the run with the check's code and message and skips later launches.
TEST(ProgramTest, FailedCheckStopsTheRun) {
  Artifact artifact = sampleArtifact();
  artifact.buffers.push_back({BufferKind::Input, {DType::Bool, {}}, 2, 0});
  uint32_t flag = artifact.buffers.size() - 1;
  artifact.checks = {{flag, 1, StatusCode::IndexOutOfRange, "index out of range in test"}};
  CpuDevice device(2);
  StatusOr<std::unique_ptr<Program>> program =
      Program::load(roundTrip(artifact), device);
  ASSERT_TRUE(program.ok()) << program.status().message();

  Inputs in(1.0f);
  std::vector<void *> pointers = in.pointers();
  std::vector<TensorDesc> descs = in.descs();
  uint8_t ok = 0;
  pointers.push_back(&ok);
  descs.push_back({DType::Bool, {}});
  HostAllocator allocator;
  std::vector<std::shared_ptr<Buffer>> allocated;
  std::vector<OutputRef> outputs;
  std::vector<double> launchMs;
  Status status = (*program)->run(pointers, descs, allocator, allocated, outputs, &launchMs);
  EXPECT_EQ(status.code(), StatusCode::IndexOutOfRange);
  EXPECT_EQ(status.message(), "index out of range in test");
  EXPECT_TRUE(outputs.empty());
  ASSERT_EQ(launchMs.size(), 3u);
  EXPECT_EQ(launchMs[1], 0.0) << "the launch after the failed check ran";

  ok = 1;
  status = (*program)->run(pointers, descs, allocator, allocated, outputs);
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(outputs.size(), 3u);
}

TEST(HostAllocatorTest, AlignedAndNonNull) {
  HostAllocator allocator;
  for (TensorDesc desc : {TensorDesc{DType::F32, {0}},
                          TensorDesc{DType::Bool, {}},
                          TensorDesc{DType::F64, {3, 7}}}) {
    StatusOr<std::shared_ptr<Buffer>> buffer = allocator.allocate(desc);
    ASSERT_TRUE(buffer.ok()) << buffer.status().message();
    void *data = (*buffer)->data();
    ASSERT_NE(data, nullptr) << desc.str();
    EXPECT_EQ(reinterpret_cast<uintptr_t>(data) % HostAllocator::kAlignment,
              0u);
  }
  EXPECT_FALSE(allocator.allocate({DType::F32, {-3}}).ok());
  StatusOr<std::shared_ptr<Buffer>> huge =
      allocator.allocate({DType::I64, {1ll << 58}});
  EXPECT_ERROR_HAS(huge.status(), "out of host memory");
  EXPECT_EQ(huge.status().code(), StatusCode::OutOfMemory); // Python's MemoryError
}

namespace {
// Two live executables must each get their own library: the loader caches
// libraries by path, and memfd paths are reused once a descriptor closes.
TEST(ProgramTest, TwoLiveLibrariesStayDistinct) {
  std::vector<uint8_t> first = readKernelLibrary();
  std::ifstream file(KILN_TEST_OTHER_KERNELS_PATH, std::ios::binary);
  std::vector<uint8_t> second((std::istreambuf_iterator<char>(file)),
                              std::istreambuf_iterator<char>());
  ASSERT_FALSE(second.empty());
  auto a = CpuExecutable::load(first, {{"add_f32", 3, "add"}});
  ASSERT_TRUE(a.ok()) << a.status().message();
  auto b = CpuExecutable::load(second, {{"negate_f32", 2, "negate"}});
  ASSERT_TRUE(b.ok()) << b.status().message();
  float in[4] = {1, 2, 3, 4}, out[4] = {};
  void *bindings[2] = {in, out};
  (*b)->kernel(0)(0, 1, bindings);
  EXPECT_EQ(out[3], -4.0f);
}
} // namespace

namespace {

/// out = 2x + y, where 2x is a Persistent buffer made by a cached launch from
/// input x alone (as a packed weight is): x + x, then + y.
Artifact cachedArtifact() {
  Artifact a;
  a.target = hostCpuTarget();
  a.graphName = "cached_double";
  a.buffers = {
      {BufferKind::Input, f32({kN}), 0, 0},      // 0: x, the "weight"
      {BufferKind::Input, f32({kN}), 1, 0},      // 1: y
      {BufferKind::Persistent, f32({kN}), 0, 0}, // 2: x + x, kept across calls
      {BufferKind::Alloc, f32({kN}), 0, 0},      // 3: out
  };
  a.kernels = {{"add_f32", 3, "kernel_add"}};
  LaunchCmd pack{0, 2, {0, 0, 2}, {}};
  pack.cached = true;
  a.launches = {pack, {0, 2, {2, 1, 3}, {}}};
  a.outputs = {3};
  a.library = readKernelLibrary();
  a.metadata = "{}";
  return a;
}

/// Runs `program` on x and y and returns out[0] (2x[0] + y[0] when fresh).
float runCached(const Program &program, std::vector<float> &x, std::vector<float> &y,
                const InputVersions *versions) {
  HostAllocator allocator;
  std::vector<std::shared_ptr<Buffer>> allocated;
  std::vector<OutputRef> outputs;
  Status status = program.run({x.data(), y.data()}, {f32({kN}), f32({kN})}, allocator,
                              allocated, outputs, nullptr, versions);
  EXPECT_TRUE(status.ok()) << status.message();
  return status.ok() ? at(allocated[outputs[0].buffer], outputs[0].byteOffset)[0] : NAN;
}

} // namespace

TEST(ProgramTest, CachedLaunchRunsWhenItsInputsChange) {
  CpuDevice device(2);
  StatusOr<std::unique_ptr<Program>> loaded = Program::load(roundTrip(cachedArtifact()), device);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  const Program &program = **loaded;
  EXPECT_EQ(program.persistentBytes(), (4 * kN + 63) / 64 * 64); // 64-byte aligned
  EXPECT_EQ(program.cachedReads(), std::vector<uint32_t>{0});
  std::vector<float> x(kN, 1.0f), y(kN, 10.0f);
  InputVersions versions;
  versions.values = {7, InputVersions::kUntracked}; // y is not read by the cached launch
  EXPECT_EQ(runCached(program, x, y, &versions), 12.0f);
  EXPECT_EQ(program.cachedRuns(), 1);
  y[0] = 20.0f; // other activations: the cached result still serves
  EXPECT_EQ(runCached(program, x, y, &versions), 22.0f);
  EXPECT_EQ(program.cachedRuns(), 1);
  // x changed behind the version counter's back: the copy made from it is
  // served (which is why callers must report every change)...
  x[0] = 3.0f;
  EXPECT_EQ(runCached(program, x, y, &versions), 22.0f);
  // ...and a new version makes it anew.
  versions.values[0] = 8;
  EXPECT_EQ(runCached(program, x, y, &versions), 26.0f);
  EXPECT_EQ(program.cachedRuns(), 2);
  // Another x at another address, with the same version: made anew.
  std::vector<float> other(kN, 5.0f);
  EXPECT_EQ(runCached(program, other, y, &versions), 30.0f);
  EXPECT_EQ(program.cachedRuns(), 3);
  // Untracked (no versions, or kUntracked): every call runs it.
  EXPECT_EQ(runCached(program, other, y, nullptr), 30.0f);
  versions.values[0] = InputVersions::kUntracked;
  EXPECT_EQ(runCached(program, other, y, &versions), 30.0f);
  EXPECT_EQ(program.cachedRuns(), 5);
}

TEST(ProgramTest, ConcurrentCallsShareTheCachedResult) {
  CpuDevice device(2);
  StatusOr<std::unique_ptr<Program>> loaded = Program::load(cachedArtifact(), device);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  const Program &program = **loaded;
  std::vector<float> x(kN, 1.0f);
  InputVersions versions;
  versions.values = {1, 1};
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      std::vector<float> y(kN, static_cast<float>(t));
      for (int i = 0; i < 50; ++i)
        if (runCached(program, x, y, &versions) != 2.0f + t)
          ++wrong;
    });
  for (std::thread &thread : threads)
    thread.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(program.cachedRuns(), 1);
}

namespace {
/// Sets an environment variable for one scope.
class ScopedEnv {
public:
  ScopedEnv(const char *name, const char *value) : name_(name) {
    if (const char *old = std::getenv(name))
      old_ = old;
    if (value)
      setenv(name, value, 1);
    else
      unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_)
      setenv(name_, old_->c_str(), 1);
    else
      unsetenv(name_);
  }

private:
  const char *name_;
  std::optional<std::string> old_;
};

float negateFirst(const CpuExecutable &executable) {
  float in[4] = {1, 2, 3, 4}, out[4] = {};
  void *bindings[2] = {in, out};
  executable.kernel(0)(0, 1, bindings);
  return out[0];
}

std::vector<uint8_t> otherKernelLibrary() {
  std::ifstream file(KILN_TEST_OTHER_KERNELS_PATH, std::ios::binary);
  return {std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
}

// Libraries load through a memfd, so an unusable temporary directory (a
// noexec /tmp, a TMPDIR that does not exist) does not matter.
TEST(ProgramTest, LoadsThroughAMemfdWhateverTheTemporaryDirectory) {
  ScopedEnv tmpdir("TMPDIR", "/nonexistent/kiln-test");
  ScopedEnv loading("KILN_KERNEL_LOADING", nullptr);
  auto executable = CpuExecutable::load(otherKernelLibrary(), {{"negate_f32", 2, "negate"}});
  ASSERT_TRUE(executable.ok()) << executable.status().message();
  EXPECT_EQ(negateFirst(**executable), -1.0f);
}

// Through a file, it honours TMPDIR, and says where it failed.
TEST(ProgramTest, LoadsThroughAFileInTMPDIR) {
  ScopedEnv loading("KILN_KERNEL_LOADING", "file");
  std::string dir = ::testing::TempDir();
  {
    ScopedEnv tmpdir("TMPDIR", dir.c_str());
    auto executable = CpuExecutable::load(otherKernelLibrary(), {{"negate_f32", 2, "negate"}});
    ASSERT_TRUE(executable.ok()) << executable.status().message();
    EXPECT_EQ(negateFirst(**executable), -1.0f);
  }
  ScopedEnv tmpdir("TMPDIR", "/nonexistent/kiln-test");
  auto refused = CpuExecutable::load(otherKernelLibrary(), {{"negate_f32", 2, "negate"}});
  EXPECT_ERROR_HAS(refused.status(), "/nonexistent/kiln-test/kiln-kernels-");
  ScopedEnv bad("KILN_KERNEL_LOADING", "disk");
  EXPECT_ERROR_HAS(CpuExecutable::load(otherKernelLibrary(), {{"negate_f32", 2, "negate"}})
                       .status(),
                   "use memfd or file");
}

// Loading and unloading many libraries reuses descriptors (and their /proc
// paths) and never returns a stale library.
TEST(ProgramTest, ReloadedLibrariesAreNeverStale) {
  ScopedEnv loading("KILN_KERNEL_LOADING", "memfd");
  std::vector<uint8_t> add = readKernelLibrary(), negate = otherKernelLibrary();
  for (int i = 0; i < 20; ++i) {
    auto executable = i % 2 ? CpuExecutable::load(negate, {{"negate_f32", 2, "negate"}})
                            : CpuExecutable::load(add, {{"add_f32", 3, "add"}});
    ASSERT_TRUE(executable.ok()) << executable.status().message();
    if (i % 2)
      EXPECT_EQ(negateFirst(**executable), -1.0f);
  }
}
} // namespace
