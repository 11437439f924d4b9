//===- RunGraph.cpp - kiln-run: load, feed, run, print --------------------===//

#include "kiln/tooling/RunGraph.h"

#include "kiln/tooling/Checksum.h"
#include "kiln/runtime/ThreadPool.h"
#include "kiln/tooling/Profile.h"

#include "FileUtil.h"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>

namespace kiln::runtime {

void printRunError(const std::string &message) {
  std::fprintf(stderr, "kiln-run: error: %s\n", message.c_str());
}

namespace {

/// `array` as .npy holds it: bfloat16, which .npy has no type for, widened
/// to float32 (exactly: its bits are a float32's high half).
NamedArray forNpy(NamedArray array) {
  if (array.desc.dtype != DType::BF16)
    return array;
  std::vector<uint8_t> wide(array.data.size() * 2);
  for (size_t i = 0; i < array.data.size() / 2; ++i) {
    uint32_t bits = uint32_t(array.data[2 * i] | (array.data[2 * i + 1] << 8)) << 16;
    std::memcpy(wide.data() + 4 * i, &bits, 4);
  }
  array.desc.dtype = DType::F32;
  array.data = std::move(wide);
  return array;
}

/// An output's bytes, copied from the device.
Status readOutput(Device &device, const OutputRef &ref,
                  const std::vector<std::shared_ptr<Buffer>> &allocated,
                  const std::vector<std::shared_ptr<Buffer>> &inputs,
                  std::vector<uint8_t> &bytes) {
  const std::shared_ptr<Buffer> &root =
      ref.buffer >= 0 ? allocated[static_cast<size_t>(ref.buffer)]
                      : inputs[static_cast<size_t>(ref.input)];
  bytes.resize(static_cast<size_t>(ref.type.byteSize()));
  return device.copyDeviceToHost(bytes.data(), static_cast<const uint8_t *>(root->data()) +
                                                   ref.byteOffset,
                                 bytes.size());
}

void printOutput(size_t index, const TensorDesc &desc, const uint8_t *data) {
  std::printf("output %zu: %s", index, desc.str().c_str());
  if (desc.numElements() == 0) {
    std::printf(" checksum=0 (empty)\n");
    return;
  }
  TensorStats stats = tensorStats(desc, data);
  std::printf(" checksum=%.9g min=%.9g max=%.9g\n", stats.checksum, stats.min,
              stats.max);
}

void printGraph(const Program &program, const Device &device, int threads) {
  const Artifact &graph = program.artifact();
  const std::vector<TensorDesc> &inputDescs = program.inputDescs();
  const ExecutableDesc *executable = executableFor(graph, device);
  std::printf("graph: %s\ntarget: %s (cpu %s, %zu features)\nkernels: %zu\nthreads: %d\n",
              graph.graphName.c_str(), executable->format.c_str(), executable->cpu.c_str(),
              executable->cpuFeatures.size(), graph.kernels.size(), threads);
  for (const SymbolDesc &symbol : graph.symbols)
    std::printf("symbol %s: input %u dim %u, in [%lld, %s]\n", symbol.name.c_str(),
                symbol.input, symbol.dim, (long long)symbol.min,
                symbol.max == INT64_MAX ? "inf" : std::to_string(symbol.max).c_str());
  std::vector<std::string> names = program.symbolNames();
  for (size_t i = 0; i < inputDescs.size(); ++i) {
    std::printf("input %zu: %s", i, inputDescs[i].str().c_str());
    // Symbolic dims, with their expressions over the symbols.
    for (const BufferDesc &buffer : graph.buffers)
      if (buffer.kind == BufferKind::Input && buffer.source == i && !buffer.dims.empty()) {
        std::string dims;
        for (const SizeExpr &dim : buffer.dims)
          dims += (dims.empty() ? "" : ", ") + dim.str(names);
        std::printf(" (? = %s)", dims.c_str());
      }
    std::printf("\n");
  }
}

} // namespace

int runGraph(const RunGraphOptions &options) {
  const std::string &path = options.artifactPath;
  std::vector<uint8_t> bytes;
  Artifact artifact;
  Status status = readFileBytes(path, bytes);
  if (status.ok())
    status = parseArtifact(bytes.data(), bytes.size(), artifact);
  if (!status.ok()) {
    printRunError(path + ": " + status.message());
    return 1;
  }
  bytes = {};

  DeviceOptions deviceOptions;
  deviceOptions.numThreads = options.threads;
  StatusOr<std::unique_ptr<Device>> created = createDevice(options.device, deviceOptions);
  if (!created.ok()) {
    printRunError(created.status().message());
    return 1;
  }
  Device &device = **created;
  StatusOr<std::unique_ptr<Program>> loaded = Program::load(std::move(artifact), device);
  if (!loaded.ok()) {
    printRunError(path + ": " + loaded.status().message());
    return 1;
  }
  const Program &program = **loaded;
  if (!options.quiet)
    printGraph(program, device, device.threadPool() ? device.threadPool()->size() : 1);

  std::vector<NamedArray> arrays;
  status = gatherInputs(options.inputs, program, arrays);
  if (!status.ok()) {
    printRunError(status.message());
    return 1;
  }
  if (!options.saveInputs.empty()) {
    std::vector<NamedArray> inputs;
    for (size_t i = 0; i < arrays.size(); ++i)
      inputs.push_back(forNpy({"input_" + std::to_string(i), arrays[i].desc, arrays[i].data}));
    status = writeNpz(options.saveInputs, inputs);
    if (!status.ok()) {
      printRunError(status.message());
      return 1;
    }
  }
  // Kernels may rely on the alignment device buffers have, so the arrays are
  // copied into them rather than used in place.
  DeviceAllocator allocator(device);
  std::vector<std::shared_ptr<Buffer>> inputBuffers;
  std::vector<void *> inputPointers;
  std::vector<TensorDesc> actualDescs; // the arrays' own shapes
  for (const NamedArray &array : arrays) {
    actualDescs.push_back(array.desc);
    StatusOr<std::shared_ptr<Buffer>> buffer = allocator.allocate(array.desc);
    if (buffer.ok())
      status = device.copyHostToDevice((*buffer)->data(), array.data.data(), array.data.size());
    if (!buffer.ok() || !status.ok()) {
      printRunError((buffer.ok() ? status : buffer.status()).message());
      return 1;
    }
    inputPointers.push_back((*buffer)->data());
    inputBuffers.push_back(std::move(*buffer));
  }
  arrays = {};

  std::vector<std::vector<double>> launchTimes; // per timed run
  std::vector<double> launchMs;
  // The inputs never change between runs: cached launches (packed weights)
  // run on the first only, as in a model's steady state.
  InputVersions unchanged;
  unchanged.values.assign(inputPointers.size(), 0);
  auto runOnce = [&](std::vector<std::shared_ptr<Buffer>> &allocated,
                     std::vector<OutputRef> &outputs) {
    Status result = program.run(inputPointers, actualDescs, allocator, allocated,
                                outputs, options.profile ? &launchMs : nullptr, &unchanged);
    if (!result.ok())
      printRunError(path + ": " + result.message());
    return result.ok();
  };

  std::vector<std::shared_ptr<Buffer>> allocated;
  std::vector<OutputRef> outputs;
  if (!runOnce(allocated, outputs))
    return 1;
  if (!options.quiet)
    if (StatusOr<Program::Footprint> footprint = program.footprint(inputPointers, actualDescs);
        footprint.ok())
      std::printf("memory: outputs %lld bytes, intermediates %lld bytes in a %lld-byte arena "
                  "(shared by liveness, reused by every call)\n",
                  (long long)footprint->outputs, (long long)footprint->intermediates,
                  (long long)footprint->arena);
  std::vector<NamedArray> saved;
  for (size_t i = 0; i < outputs.size(); ++i) {
    std::vector<uint8_t> data;
    status = readOutput(device, outputs[i], allocated, inputBuffers, data);
    if (!status.ok()) {
      printRunError(status.message());
      return 1;
    }
    printOutput(i, outputs[i].type, data.data());
    if (!options.saveOutputs.empty())
      saved.push_back(forNpy({"output_" + std::to_string(i), outputs[i].type, std::move(data)}));
  }
  if (!options.saveOutputs.empty()) {
    status = writeNpz(options.saveOutputs, saved);
    if (!status.ok()) {
      printRunError(status.message());
      return 1;
    }
    if (!options.quiet)
      std::printf("saved %zu outputs to %s\n", saved.size(),
                  options.saveOutputs.c_str());
  }

  // Each timed run allocates its outputs afresh, as a call from torch does.
  std::vector<double> times;
  for (uint64_t i = 0; i < options.warmup + options.repeat; ++i) {
    std::vector<std::shared_ptr<Buffer>> scratch;
    std::vector<OutputRef> scratchOutputs;
    auto start = std::chrono::steady_clock::now();
    if (!runOnce(scratch, scratchOutputs))
      return 1;
    auto end = std::chrono::steady_clock::now();
    if (i >= options.warmup) {
      times.push_back(
          std::chrono::duration<double, std::milli>(end - start).count());
      if (options.profile)
        launchTimes.push_back(launchMs);
    }
  }
  if (!times.empty())
    printTimes(std::move(times));
  if (!launchTimes.empty())
    printProfile(program.artifact(), launchTimes);
  return 0;
}

} // namespace kiln::runtime
