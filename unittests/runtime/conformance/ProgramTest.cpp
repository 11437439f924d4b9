//===- ProgramTest.cpp - Loading and running artifacts on every driver ---===//
//
// The test kernels (test_kernels.c, built for each driver's format) go into
// artifacts exactly as the compiler would put them there. Inputs and outputs
// live in device memory and are read back with copies, as a host of any
// device would.
//
//===----------------------------------------------------------------------===//

#include "Conformance.h"

#include <atomic>
#include <cmath>
#include <thread>

using namespace kiln::runtime;
using namespace kiln::runtime::conformance;

namespace {

constexpr int64_t kN = 1000; // elements per kernel call, fixed in the kernels

TensorDesc f32(std::vector<int64_t> shape) {
  return TensorDesc{DType::F32, std::move(shape)};
}

/// Sends the artifact through the encoder and decoder, as a file would.
Artifact roundTrip(const Artifact &artifact) {
  std::vector<uint8_t> bytes = serializeArtifact(artifact);
  Artifact parsed;
  Status status = parseArtifact(bytes.data(), bytes.size(), parsed);
  EXPECT_TRUE(status.ok()) << status.message();
  return parsed;
}

class ProgramTest : public DeviceTest {
protected:
  /// out = 2 * (x + y), computed into the second half of a scratch buffer,
  /// with views of views and an output that aliases an input.
  Artifact sampleArtifact() {
    Artifact a;
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
    a.executables = {testExecutable()};
    a.executables[0].blockSizes = testBlockSizes(a.executables[0], a.kernels);
    a.metadata = "{}";
    return a;
  }

  /// out = 2x + y, where 2x is a Persistent buffer made by a cached launch
  /// from input x alone (as a packed weight is): x + x, then + y.
  Artifact cachedArtifact() {
    Artifact a;
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
    a.executables = {testExecutable()};
    a.executables[0].blockSizes = testBlockSizes(a.executables[0], a.kernels);
    a.metadata = "{}";
    return a;
  }

  std::unique_ptr<Program> load(const Artifact &artifact) {
    StatusOr<std::unique_ptr<Program>> program = Program::load(roundTrip(artifact), *device);
    EXPECT_TRUE(program.ok()) << program.status().message();
    return program.ok() ? std::move(*program) : nullptr;
  }

  /// x and y of the sample, in device memory.
  struct Inputs {
    std::vector<float> x, y;
    DeviceBuffer dx, dy;
    std::vector<void *> pointers() const { return {dx.address(), dy.address()}; }
    std::vector<TensorDesc> descs() const { return {f32({kN}), f32({kN})}; }
  };
  Inputs inputs(float seed) {
    Inputs in;
    for (int64_t i = 0; i < kN; ++i) {
      in.x.push_back(seed + static_cast<float>(i));
      in.y.push_back(0.5f * static_cast<float>(i));
    }
    in.dx = upload(in.x);
    in.dy = upload(in.y);
    return in;
  }

  /// `count` floats of an output.
  std::vector<float> read(const std::shared_ptr<Buffer> &buffer, int64_t byteOffset,
                          size_t count) {
    return download<float>(static_cast<const char *>(buffer->data()) + byteOffset, count);
  }

  /// Runs the sample once and checks every output.
  void runAndCheck(const Program &program, float seed) {
    Inputs in = inputs(seed);
    DeviceAllocator allocator(*device);
    std::vector<std::shared_ptr<Buffer>> allocated;
    std::vector<OutputRef> outputs;
    Status status = program.run(in.pointers(), in.descs(), allocator, allocated, outputs);
    ASSERT_TRUE(status.ok()) << status.message();
    ASSERT_EQ(allocated.size(), 1u);
    ASSERT_EQ(outputs.size(), 3u);

    EXPECT_EQ(outputs[0].buffer, 0);
    EXPECT_EQ(outputs[0].input, -1);
    EXPECT_EQ(outputs[0].byteOffset, 4 * kN);
    EXPECT_EQ(outputs[0].type, f32({kN}));
    std::vector<float> out = read(allocated[0], outputs[0].byteOffset, kN);
    for (int64_t i = 0; i < kN; ++i)
      ASSERT_FLOAT_EQ(out[i], 2.0f * (in.x[i] + in.y[i])) << "element " << i;

    EXPECT_EQ(outputs[1].buffer, 0);
    EXPECT_EQ(outputs[1].input, -1);
    EXPECT_EQ(outputs[1].byteOffset, 4 * kN + 400);
    EXPECT_EQ(outputs[1].type, f32({10, 10}));
    EXPECT_EQ(read(allocated[0], outputs[1].byteOffset, 1)[0], out[100]);

    EXPECT_EQ(outputs[2].buffer, -1);
    EXPECT_EQ(outputs[2].input, 1);
    EXPECT_EQ(outputs[2].byteOffset, 0);
    EXPECT_EQ(outputs[2].type, f32({10, 100}));
  }

  /// Runs the cached program on x and y and returns out[0] (2x[0] + y[0]
  /// when fresh).
  float runCached(const Program &program, const DeviceBuffer &x, const DeviceBuffer &y,
                  const InputVersions *versions) {
    DeviceAllocator allocator(*device);
    std::vector<std::shared_ptr<Buffer>> allocated;
    std::vector<OutputRef> outputs;
    Status status = program.run({x.address(), y.address()}, {f32({kN}), f32({kN})}, allocator,
                                allocated, outputs, nullptr, versions);
    EXPECT_TRUE(status.ok()) << status.message();
    return status.ok() ? read(allocated[outputs[0].buffer], outputs[0].byteOffset, 1)[0] : NAN;
  }
  /// Sets the first float at a device buffer.
  void setFirst(const DeviceBuffer &buffer, float value) {
    ASSERT_TRUE(device->copyHostToDevice(buffer.address(), &value, sizeof(value)).ok());
  }
};

/// Hands out device memory but records what it was asked for, or fails.
class RecordingAllocator : public Allocator {
public:
  explicit RecordingAllocator(Device &device) : inner_(device) {}
  std::vector<TensorDesc> requests;
  bool fail = false;
  StatusOr<std::shared_ptr<Buffer>> allocate(const TensorDesc &desc) override {
    requests.push_back(desc);
    if (fail)
      return Status::error("pool exhausted");
    return inner_.allocate(desc);
  }

private:
  DeviceAllocator inner_;
};

TEST_P(ProgramTest, RunsKernels) {
  std::unique_ptr<Program> program = load(sampleArtifact());
  ASSERT_TRUE(program);
  EXPECT_EQ(program->artifact().graphName, "add_then_double");
  ASSERT_EQ(program->inputDescs().size(), 2u);
  runAndCheck(*program, 1.0f);
  runAndCheck(*program, -3.0f); // programs run many times
}

TEST_P(ProgramTest, ConcurrentRuns) {
  std::unique_ptr<Program> program = load(sampleArtifact());
  ASSERT_TRUE(program);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([this, &program, t] {
      for (int round = 0; round < 20; ++round)
        runAndCheck(*program, static_cast<float>(t * 100 + round));
    });
  for (std::thread &thread : threads)
    thread.join();
}

// Without waiting, runs may return with their launches queued; later runs
// and a synchronize() see each one complete.
TEST_P(ProgramTest, RunsWithoutWaitingCompleteInOrder) {
  std::unique_ptr<Program> program = load(sampleArtifact());
  ASSERT_TRUE(program);
  DeviceAllocator allocator(*device);
  std::vector<std::vector<std::shared_ptr<Buffer>>> allocated(3);
  std::vector<std::vector<OutputRef>> outputs(3);
  std::vector<Inputs> in;
  for (int k = 0; k < 3; ++k)
    in.push_back(inputs(static_cast<float>(10 * k)));
  for (int k = 0; k < 3; ++k) {
    Status status = program->run(in[k].pointers(), in[k].descs(), allocator, allocated[k],
                                 outputs[k], nullptr, nullptr, /*wait=*/false);
    ASSERT_TRUE(status.ok()) << status.message();
  }
  ASSERT_TRUE(device->synchronize().ok());
  for (int k = 0; k < 3; ++k) {
    std::vector<float> out = read(allocated[k][0], outputs[k][0].byteOffset, kN);
    for (int64_t i = 0; i < kN; ++i)
      ASSERT_FLOAT_EQ(out[i], 2.0f * (in[k].x[i] + in[k].y[i])) << "run " << k << " element " << i;
  }
}

TEST_P(ProgramTest, UsesGivenAllocator) {
  std::unique_ptr<Program> program = load(sampleArtifact());
  ASSERT_TRUE(program);
  Inputs in = inputs(0.0f);
  RecordingAllocator allocator(*device);
  std::vector<std::shared_ptr<Buffer>> allocated;
  std::vector<OutputRef> outputs;
  ASSERT_TRUE(program->run(in.pointers(), in.descs(), allocator, allocated, outputs).ok());
  ASSERT_EQ(allocator.requests.size(), 1u);
  EXPECT_EQ(allocator.requests[0], f32({2 * kN}));

  allocator.fail = true;
  EXPECT_ERROR_HAS(program->run(in.pointers(), in.descs(), allocator, allocated, outputs),
                   "allocating buffer 2 (float32[2000]): pool exhausted");
  EXPECT_TRUE(allocated.empty());
  EXPECT_TRUE(outputs.empty());
}

TEST_P(ProgramTest, RejectsMismatchedInputs) {
  std::unique_ptr<Program> program = load(sampleArtifact());
  ASSERT_TRUE(program);
  Inputs in = inputs(0.0f);
  DeviceAllocator allocator(*device);
  std::vector<std::shared_ptr<Buffer>> allocated;
  std::vector<OutputRef> outputs;

  std::vector<TensorDesc> descs = in.descs();
  descs[1] = f32({999});
  EXPECT_ERROR_HAS(program->run(in.pointers(), descs, allocator, allocated, outputs),
                   "input 1: expected float32[1000], got float32[999]");

  descs = in.descs();
  descs[0].dtype = DType::I32;
  EXPECT_ERROR_HAS(program->run(in.pointers(), descs, allocator, allocated, outputs),
                   "input 0: expected float32[1000], got int32[1000]");

  EXPECT_ERROR_HAS(program->run({in.dx.address()}, {f32({kN})}, allocator, allocated, outputs),
                   "takes 2 inputs, got 1 pointers and 1 descs");

  EXPECT_ERROR_HAS(
      program->run({in.dx.address(), nullptr}, in.descs(), allocator, allocated, outputs),
      "input 1 (float32[1000]): null data pointer");
}

TEST_P(ProgramTest, MissingSymbolIsNamed) {
  Artifact artifact = sampleArtifact();
  artifact.kernels[1].symbol = "no_such_kernel";
  // Not through the file format: a verifier that reads the executable (the
  // SPIR-V container's) rejects it there already, which is the same error.
  StatusOr<std::unique_ptr<Program>> program = Program::load(artifact, *device);
  ASSERT_FALSE(program.ok());
  EXPECT_ERROR_HAS(program.status(), "cannot load graph 'add_then_double'");
  EXPECT_ERROR_HAS(program.status(), "no_such_kernel");
  EXPECT_ERROR_HAS(program.status(), "kernel_1_double");
}

TEST_P(ProgramTest, GarbageExecutableIsAnError) {
  Artifact artifact = sampleArtifact();
  artifact.executables[0].bytes = {'n', 'o', 't', ' ', 'c', 'o', 'd', 'e'};
  StatusOr<std::unique_ptr<Program>> program = Program::load(std::move(artifact), *device);
  ASSERT_FALSE(program.ok());
  EXPECT_ERROR_HAS(program.status(), "cannot load graph 'add_then_double'");
}

TEST_P(ProgramTest, RejectsOtherTargetsNamingBoth) {
  Artifact artifact = sampleArtifact();
  artifact.executables[0].format = "kiln-other-format";
  if (format() == "kiln-other-format")
    artifact.executables[0].format = "cpu-x86_64";
  std::string other = artifact.executables[0].format;
  StatusOr<std::unique_ptr<Program>> program = Program::load(artifact, *device);
  ASSERT_FALSE(program.ok());
  EXPECT_ERROR_HAS(program.status(), "compiled for target '" + other + "'");
  EXPECT_ERROR_HAS(program.status(), "runs '" + format() + "'");

  // With several executables, the message lists them all.
  ExecutableDesc third = artifact.executables[0];
  third.format = "kiln-test-format";
  artifact.executables.push_back(third);
  program = Program::load(artifact, *device);
  ASSERT_FALSE(program.ok());
  EXPECT_ERROR_HAS(program.status(),
                   "compiled for targets '" + other + "', 'kiln-test-format', but this device (" +
                       GetParam() + ") runs '" + format() + "'");
}

TEST_P(ProgramTest, PicksTheExecutableOfItsFormat) {
  Artifact artifact = sampleArtifact();
  ExecutableDesc mine = artifact.executables[0];
  // A garbage executable of another format first: never loaded.
  artifact.executables[0].format = "kiln-test-format";
  artifact.executables[0].bytes = {1, 2, 3};
  artifact.executables.push_back(mine);
  std::unique_ptr<Program> program = load(artifact);
  ASSERT_TRUE(program);
  runAndCheck(*program, 2.0f);
}

TEST_P(ProgramTest, RejectsInvalidArtifact) {
  Artifact artifact = sampleArtifact();
  artifact.launches[0].bindings[0] = 42;
  StatusOr<std::unique_ptr<Program>> program = Program::load(std::move(artifact), *device);
  ASSERT_FALSE(program.ok());
  EXPECT_ERROR_HAS(program.status(), "launch 0: binding 0 refers to buffer 42");
}

TEST_P(ProgramTest, ProgramWithoutKernels) {
  Artifact artifact;
  artifact.executables = {{format(), "", {}, {}, {}}};
  artifact.buffers = {{BufferKind::Input, f32({4}), 0, 0},
                      {BufferKind::View, f32({2}), 0, 8}};
  artifact.outputs = {1};
  StatusOr<std::unique_ptr<Program>> program = Program::load(std::move(artifact), *device);
  ASSERT_TRUE(program.ok()) << program.status().message();
  DeviceBuffer data = upload(std::vector<float>{1, 2, 3, 4});
  DeviceAllocator allocator(*device);
  std::vector<std::shared_ptr<Buffer>> allocated;
  std::vector<OutputRef> outputs;
  ASSERT_TRUE(
      (*program)->run({data.address()}, {f32({4})}, allocator, allocated, outputs).ok());
  ASSERT_EQ(outputs.size(), 1u);
  EXPECT_EQ(outputs[0].input, 0);
  EXPECT_EQ(outputs[0].byteOffset, 8);
}

/// A check reads a bool once the launches before it have run; a false one
/// fails the run with the check's code and message and skips later launches.
TEST_P(ProgramTest, FailedCheckStopsTheRun) {
  Artifact artifact = sampleArtifact();
  artifact.buffers.push_back({BufferKind::Input, {DType::Bool, {}}, 2, 0});
  uint32_t flag = artifact.buffers.size() - 1;
  artifact.checks = {{flag, 1, StatusCode::IndexOutOfRange, "index out of range in test"}};
  std::unique_ptr<Program> program = load(artifact);
  ASSERT_TRUE(program);

  Inputs in = inputs(1.0f);
  DeviceBuffer ok = upload(std::vector<uint8_t>{0});
  std::vector<void *> pointers = in.pointers();
  std::vector<TensorDesc> descs = in.descs();
  pointers.push_back(ok.address());
  descs.push_back({DType::Bool, {}});
  DeviceAllocator allocator(*device);
  std::vector<std::shared_ptr<Buffer>> allocated;
  std::vector<OutputRef> outputs;
  std::vector<double> launchMs;
  Status status = program->run(pointers, descs, allocator, allocated, outputs, &launchMs);
  EXPECT_EQ(status.code(), StatusCode::IndexOutOfRange);
  EXPECT_EQ(status.message(), "index out of range in test");
  EXPECT_TRUE(outputs.empty());
  ASSERT_EQ(launchMs.size(), 3u);
  EXPECT_EQ(launchMs[1], 0.0) << "the launch after the failed check ran";

  uint8_t one = 1;
  ASSERT_TRUE(device->copyHostToDevice(ok.address(), &one, 1).ok());
  status = program->run(pointers, descs, allocator, allocated, outputs);
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(outputs.size(), 3u);
}

/// A communicator for one process: an all_reduce sums `ranks` copies of
/// this rank's input (as if every rank held the same), an all_gather
/// repeats it. It moves the bytes only when waited for, so a run that used
/// an output before waiting would read garbage; it records what it was
/// asked, and when.
class LoopbackCommunicator : public Communicator {
public:
  explicit LoopbackCommunicator(int64_t ranks) : ranks_(ranks) {}
  StatusOr<std::unique_ptr<PendingCollective>> start(const Collective &collective,
                                                     const void *input,
                                                     const TensorDesc &inputType, void *output,
                                                     const TensorDesc &outputType) override {
    std::string name = std::string(collectiveKindName(collective.kind));
    calls.push_back("start " + name + " " + collective.group + " " + inputType.str() + " -> " +
                    outputType.str());
    if (collective.kind != CollectiveKind::AllReduce &&
        collective.kind != CollectiveKind::AllGather)
      return Status::error("the loopback communicator has no " + name);
    return std::unique_ptr<PendingCollective>(
        new Deferred(*this, collective.kind, static_cast<const float *>(input),
                     inputType.numElements(), static_cast<float *>(output)));
  }
  std::vector<std::string> calls;

private:
  class Deferred : public PendingCollective {
  public:
    Deferred(LoopbackCommunicator &owner, CollectiveKind kind, const float *in, int64_t n,
             float *out)
        : owner_(owner), kind_(kind), in_(in), n_(n), out_(out) {}
    Status wait() override {
      owner_.calls.push_back("wait " + std::string(collectiveKindName(kind_)));
      for (int64_t r = 0; r < owner_.ranks_; ++r)
        for (int64_t i = 0; i < n_; ++i) {
          if (kind_ == CollectiveKind::AllReduce)
            out_[i] = (r == 0 ? 0.0f : out_[i]) + in_[i];
          else
            out_[r * n_ + i] = in_[i];
        }
      return Status::OK();
    }

  private:
    LoopbackCommunicator &owner_;
    CollectiveKind kind_;
    const float *in_;
    int64_t n_;
    float *out_;
  };
  int64_t ranks_;
};

/// x + y, all-reduced over 2 ranks while x + y is computed again, doubled in
/// place, all-gathered: the collectives start between the launches, on
/// device memory (host copies on a GPU driver), are waited for where their
/// outputs are read, and their outputs get memory of their own.
Artifact collectiveArtifact(const ExecutableDesc &executable, const std::vector<KernelInfo> &kernels) {
  Artifact a;
  a.graphName = "tensor_parallel";
  a.buffers = {
      {BufferKind::Input, f32({kN}), 0, 0},     // 0: x
      {BufferKind::Input, f32({kN}), 1, 0},     // 1: y
      {BufferKind::Alloc, f32({kN}), 0, 0},     // 2: x + y
      {BufferKind::Alloc, f32({kN}), 0, 0},     // 3: all_reduce(2), doubled in place
      {BufferKind::Alloc, f32({2 * kN}), 0, 0}, // 4: all_gather(3)
      {BufferKind::Alloc, f32({kN}), 0, 0},     // 5: x + y, while 3 is in flight
  };
  a.kernels = kernels;
  a.launches = {{0, 4, {0, 1, 2}}, {0, 4, {0, 1, 5}}, {1, 3, {3}}};
  a.collectives = {{{CollectiveKind::AllReduce, ReduceOp::Sum, "tp", 2}, 2, 3, 1},
                   {{CollectiveKind::AllGather, ReduceOp::Sum, "tp", 2}, 3, 4, 3}};
  a.outputs = {4, 5};
  a.executables = {executable};
  return a;
}

TEST_P(ProgramTest, CollectivesRunBetweenLaunchesThroughTheCommunicator) {
  Artifact sample = sampleArtifact();
  std::unique_ptr<Program> program =
      load(roundTrip(collectiveArtifact(sample.executables[0], sample.kernels)));
  ASSERT_TRUE(program);
  // Launch 1 runs while the all_reduce is in flight; the all_gather is last.
  EXPECT_EQ(program->launchesOverlappingCollectives(), 1);
  Inputs in = inputs(1.0f);
  DeviceAllocator allocator(*device);
  std::vector<std::shared_ptr<Buffer>> allocated;
  std::vector<OutputRef> outputs;
  LoopbackCommunicator communicator(2);
  Status status = program->run(in.pointers(), in.descs(), allocator, allocated, outputs, nullptr,
                               nullptr, true, &communicator);
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(communicator.calls,
            (std::vector<std::string>{"start all_reduce tp float32[1000] -> float32[1000]",
                                      "wait all_reduce",
                                      "start all_gather tp float32[1000] -> float32[2000]",
                                      "wait all_gather"}));
  ASSERT_EQ(outputs.size(), 2u);
  std::vector<float> out = read(allocated[outputs[0].buffer], outputs[0].byteOffset, 2 * kN);
  for (int64_t i = 0; i < 2 * kN; ++i)
    ASSERT_FLOAT_EQ(out[i], 4.0f * (in.x[i % kN] + in.y[i % kN])) << "element " << i;
  std::vector<float> sum = read(allocated[outputs[1].buffer], outputs[1].byteOffset, kN);
  for (int64_t i = 0; i < kN; ++i)
    ASSERT_FLOAT_EQ(sum[i], in.x[i] + in.y[i]) << "element " << i;

  // Without a communicator the run fails naming the collective and graph.
  status = program->run(in.pointers(), in.descs(), allocator, allocated, outputs);
  EXPECT_ERROR_HAS(status, "collective 0 (all_reduce over group 'tp') of graph 'tensor_parallel'");
  EXPECT_ERROR_HAS(status, "no communicator");
}

/// A communicator whose collectives fail when waited for (a peer gone).
class FailingCommunicator : public Communicator {
public:
  StatusOr<std::unique_ptr<PendingCollective>> start(const Collective &, const void *,
                                                     const TensorDesc &, void *,
                                                     const TensorDesc &) override {
    ++started;
    return finishedCollective(Status::error("rank 1 closed the connection"));
  }
  int started = 0;
};

TEST_P(ProgramTest, AFailedCollectiveFailsTheRunNamingIt) {
  Artifact sample = sampleArtifact();
  std::unique_ptr<Program> program =
      load(roundTrip(collectiveArtifact(sample.executables[0], sample.kernels)));
  ASSERT_TRUE(program);
  Inputs in = inputs(1.0f);
  DeviceAllocator allocator(*device);
  std::vector<std::shared_ptr<Buffer>> allocated;
  std::vector<OutputRef> outputs;
  FailingCommunicator communicator;
  Status status = program->run(in.pointers(), in.descs(), allocator, allocated, outputs, nullptr,
                               nullptr, true, &communicator);
  EXPECT_ERROR_HAS(status, "collective 0 (all_reduce over group 'tp') of graph 'tensor_parallel'");
  EXPECT_ERROR_HAS(status, "rank 1 closed the connection");
  EXPECT_EQ(communicator.started, 1); // the run stopped there
  EXPECT_TRUE(outputs.empty());
}

TEST_P(ProgramTest, CachedLaunchRunsWhenItsInputsChange) {
  std::unique_ptr<Program> loaded = load(cachedArtifact());
  ASSERT_TRUE(loaded);
  const Program &program = *loaded;
  EXPECT_EQ(program.persistentBytes(), (4 * kN + 63) / 64 * 64); // 64-byte aligned
  EXPECT_EQ(program.cachedReads(), std::vector<uint32_t>{0});
  DeviceBuffer x = upload(std::vector<float>(kN, 1.0f)), y = upload(std::vector<float>(kN, 10.0f));
  InputVersions versions;
  versions.values = {7, InputVersions::kUntracked}; // y is not read by the cached launch
  EXPECT_EQ(runCached(program, x, y, &versions), 12.0f);
  EXPECT_EQ(program.cachedRuns(), 1);
  setFirst(y, 20.0f); // other activations: the cached result still serves
  EXPECT_EQ(runCached(program, x, y, &versions), 22.0f);
  EXPECT_EQ(program.cachedRuns(), 1);
  // x changed behind the version counter's back: the copy made from it is
  // served (which is why callers must report every change)...
  setFirst(x, 3.0f);
  EXPECT_EQ(runCached(program, x, y, &versions), 22.0f);
  // ...and a new version makes it anew.
  versions.values[0] = 8;
  EXPECT_EQ(runCached(program, x, y, &versions), 26.0f);
  EXPECT_EQ(program.cachedRuns(), 2);
  // Another x at another address, with the same version: made anew.
  DeviceBuffer other = upload(std::vector<float>(kN, 5.0f));
  EXPECT_EQ(runCached(program, other, y, &versions), 30.0f);
  EXPECT_EQ(program.cachedRuns(), 3);
  // Untracked (no versions, or kUntracked): every call runs it.
  EXPECT_EQ(runCached(program, other, y, nullptr), 30.0f);
  versions.values[0] = InputVersions::kUntracked;
  EXPECT_EQ(runCached(program, other, y, &versions), 30.0f);
  EXPECT_EQ(program.cachedRuns(), 5);
}

TEST_P(ProgramTest, ConcurrentCallsShareTheCachedResult) {
  std::unique_ptr<Program> loaded = load(cachedArtifact());
  ASSERT_TRUE(loaded);
  const Program &program = *loaded;
  DeviceBuffer x = upload(std::vector<float>(kN, 1.0f));
  std::vector<DeviceBuffer> ys;
  for (int t = 0; t < 4; ++t)
    ys.push_back(upload(std::vector<float>(kN, static_cast<float>(t))));
  InputVersions versions;
  versions.values = {1, 1};
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i)
        if (runCached(program, x, ys[t], &versions) != 2.0f + t)
          ++wrong;
    });
  for (std::thread &thread : threads)
    thread.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(program.cachedRuns(), 1);
}

INSTANTIATE_TEST_SUITE_P(Drivers, ProgramTest, ::testing::ValuesIn(driverNames()),
                         [](const ::testing::TestParamInfo<std::string> &info) {
                           return info.param;
                         });

} // namespace
