//===- Program.cpp - Executing an artifact's launch list ------------------===//

#include "kiln/runtime/Program.h"

#include <chrono>

#include <string>

namespace kiln::runtime {

StatusOr<std::unique_ptr<Program>> Program::load(Artifact artifact,
                                                 CpuDevice &device) {
  std::string context = "cannot load graph '" + artifact.graphName + "'";
  // Artifacts built in memory skip parseArtifact, and the plan below indexes
  // with the artifact's ids, so verify here too.
  KILN_RETURN_IF_ERROR(verifyArtifact(artifact).withContext(context));
  if (artifact.target != hostCpuTarget())
    return Status::error(context + ": it was compiled for target '" +
                         artifact.target + "', but this device runs '" +
                         hostCpuTarget() + "'");

  StatusOr<std::unique_ptr<CpuExecutable>> executable =
      CpuExecutable::load(artifact.library, artifact.kernels);
  if (!executable.ok())
    return executable.status().withContext(context);

  std::unique_ptr<Program> program(
      new Program(std::move(artifact), device, std::move(*executable)));
  program->plan();
  return program;
}

Program::Program(Artifact artifact, CpuDevice &device,
                 std::unique_ptr<CpuExecutable> executable)
    : artifact_(std::move(artifact)), device_(device),
      executable_(std::move(executable)) {}

/// Resolves every buffer to its root once, so run() only adds offsets.
/// verifyArtifact guarantees views point backwards, making one pass enough.
void Program::plan() {
  const std::vector<BufferDesc> &buffers = artifact_.buffers;
  inputDescs_.resize(artifact_.numInputs());
  roots_.reserve(buffers.size());
  for (size_t id = 0; id < buffers.size(); ++id) {
    const BufferDesc &buffer = buffers[id];
    switch (buffer.kind) {
    case BufferKind::Input:
      inputDescs_[buffer.source] = buffer.type;
      roots_.push_back({BufferKind::Input, buffer.source, 0});
      break;
    case BufferKind::Alloc:
      roots_.push_back({BufferKind::Alloc,
                        static_cast<uint32_t>(allocBuffers_.size()), 0});
      allocBuffers_.push_back(static_cast<uint32_t>(id));
      break;
    case BufferKind::View: {
      Root root = roots_[buffer.source];
      root.byteOffset += buffer.byteOffset;
      roots_.push_back(root);
      break;
    }
    }
  }
}

Status Program::checkInputs(const std::vector<void *> &inputs,
                            const std::vector<TensorDesc> &inputDescs) const {
  if (inputs.size() != inputDescs_.size() ||
      inputDescs.size() != inputDescs_.size())
    return Status::error("graph '" + artifact_.graphName + "' takes " +
                         std::to_string(inputDescs_.size()) + " inputs, got " +
                         std::to_string(inputs.size()) + " pointers and " +
                         std::to_string(inputDescs.size()) + " descs");
  for (size_t i = 0; i < inputs.size(); ++i) {
    const TensorDesc &expected = inputDescs_[i];
    if (inputDescs[i] != expected)
      return Status::error("input " + std::to_string(i) + ": expected " +
                           expected.str() + ", got " + inputDescs[i].str());
    if (!inputs[i] && expected.byteSize() != 0)
      return Status::error("input " + std::to_string(i) + " (" +
                           expected.str() + "): null data pointer");
  }
  return Status::OK();
}

Status Program::run(const std::vector<void *> &inputs,
                    const std::vector<TensorDesc> &inputDescs,
                    Allocator &allocator,
                    std::vector<std::shared_ptr<Buffer>> &allocated,
                    std::vector<OutputRef> &outputs,
                    std::vector<double> *launchMs) const {
  allocated.clear();
  outputs.clear();
  Status status = checkInputs(inputs, inputDescs);
  if (status.ok())
    status = runImpl(inputs, allocator, allocated, outputs, launchMs);
  if (!status.ok()) {
    allocated.clear();
    outputs.clear();
  }
  return status;
}

Status Program::runImpl(const std::vector<void *> &inputs,
                        Allocator &allocator,
                        std::vector<std::shared_ptr<Buffer>> &allocated,
                        std::vector<OutputRef> &outputs,
                        std::vector<double> *launchMs) const {
  const std::vector<BufferDesc> &buffers = artifact_.buffers;
  allocated.reserve(allocBuffers_.size());
  for (uint32_t id : allocBuffers_) {
    const TensorDesc &type = buffers[id].type;
    std::string context =
        "allocating buffer " + std::to_string(id) + " (" + type.str() + ")";
    StatusOr<std::shared_ptr<Buffer>> buffer = allocator.allocate(type);
    if (!buffer.ok())
      return buffer.status().withContext(context);
    if (!*buffer || !(*buffer)->data())
      return Status::error(context + ": the allocator returned no memory");
    allocated.push_back(std::move(*buffer));
  }

  std::vector<void *> pointers(buffers.size());
  for (size_t id = 0; id < buffers.size(); ++id) {
    const Root &root = roots_[id];
    void *base = root.kind == BufferKind::Input ? inputs[root.index]
                                                : allocated[root.index]->data();
    pointers[id] = static_cast<char *>(base) + root.byteOffset;
  }

  // Checks run as soon as the launches before them have finished, so a
  // failed index check stops the run before later kernels use the result.
  size_t nextCheck = 0;
  auto runChecks = [&](size_t launchesDone) -> Status {
    for (; nextCheck < artifact_.checks.size() &&
           artifact_.checks[nextCheck].afterLaunches <= launchesDone;
         ++nextCheck) {
      const CheckCmd &check = artifact_.checks[nextCheck];
      if (*static_cast<const uint8_t *>(pointers[check.buffer]) == 0)
        return Status::error(check.code, check.message);
    }
    return Status::OK();
  };

  std::vector<void *> bindings;
  if (launchMs)
    launchMs->assign(artifact_.launches.size(), 0.0);
  for (size_t index = 0; index < artifact_.launches.size(); ++index) {
    KILN_RETURN_IF_ERROR(runChecks(index));
    const LaunchCmd &launch = artifact_.launches[index];
    if (launch.workgroups == 0)
      continue;
    bindings.clear();
    for (uint32_t id : launch.bindings)
      bindings.push_back(pointers[id]);
    KernelFn fn = executable_->kernel(launch.kernel);
    void **args = bindings.data();
    int64_t count = launch.workgroups;
    auto start = std::chrono::steady_clock::now();
    device_.pool().parallelFor(
        count, [fn, count, args](int64_t wg) { fn(wg, count, args); });
    if (launchMs)
      (*launchMs)[index] = std::chrono::duration<double, std::milli>(
                               std::chrono::steady_clock::now() - start)
                               .count();
  }

  KILN_RETURN_IF_ERROR(runChecks(artifact_.launches.size()));

  outputs.reserve(artifact_.outputs.size());
  for (uint32_t id : artifact_.outputs) {
    const Root &root = roots_[id];
    OutputRef ref;
    (root.kind == BufferKind::Input ? ref.input : ref.buffer) = root.index;
    ref.byteOffset = root.byteOffset;
    ref.type = buffers[id].type;
    outputs.push_back(std::move(ref));
  }
  return Status::OK();
}

} // namespace kiln::runtime
