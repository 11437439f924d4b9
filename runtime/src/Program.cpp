//===- Program.cpp - Executing an artifact's launch list on a device ------===//
//
// Device-neutral: the device loads the executable, holds the memory and runs
// the launches; this file plans memory, binds buffers and sizes, and
// evaluates the run-time checks.
//
//===----------------------------------------------------------------------===//

#include "kiln/runtime/Program.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include <string>

namespace kiln::runtime {

StatusOr<std::unique_ptr<Program>> Program::load(Artifact artifact, Device &device) {
  std::string context = "cannot load graph '" + artifact.graphName + "'";
  // Artifacts built in memory skip parseArtifact, and the plan below indexes
  // with the artifact's ids, so verify here too.
  KILN_RETURN_IF_ERROR(verifyArtifact(artifact).withContext(context));
  std::string format(device.executableFormat());
  const ExecutableDesc *executable = executableFor(artifact, device);
  if (!executable)
    return Status::error(context + ": it was compiled for target" +
                         (artifact.executables.size() == 1 ? " " : "s ") +
                         artifact.formatList() + ", but this device (" +
                         std::string(device.driverName()) + ") runs '" + format + "'");

  StatusOr<std::unique_ptr<Executable>> loaded =
      device.loadExecutable(*executable, artifact.kernels);
  if (!loaded.ok())
    return loaded.status().withContext(context);

  std::unique_ptr<Program> program(
      new Program(std::move(artifact), device, std::move(*loaded)));
  KILN_RETURN_IF_ERROR(program->plan().withContext(context));
  return program;
}

Program::Program(Artifact artifact, Device &device, std::unique_ptr<Executable> executable)
    : artifact_(std::move(artifact)), device_(device), executable_(std::move(executable)),
      arenas_(device) {}

/// Resolves every buffer to its root once, so run() only adds offsets.
/// verifyArtifact guarantees views point backwards, making one pass enough.
Status Program::plan() {
  const std::vector<BufferDesc> &buffers = artifact_.buffers;
  for (const LaunchCmd &launch : artifact_.launches)
    maxBindings_ = std::max(maxBindings_, launch.bindings.size());
  inputDescs_.resize(artifact_.numInputs());
  inputBuffers_.resize(artifact_.numInputs());
  roots_.reserve(buffers.size());
  for (size_t id = 0; id < buffers.size(); ++id) {
    const BufferDesc &buffer = buffers[id];
    switch (buffer.kind) {
    case BufferKind::Input:
      inputDescs_[buffer.source] = buffer.type;
      inputBuffers_[buffer.source] = static_cast<uint32_t>(id);
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
    case BufferKind::Persistent:
      roots_.push_back({BufferKind::Persistent,
                        static_cast<uint32_t>(persistent_.offsets.size()), 0});
      persistent_.offsets.push_back(persistent_.bytes);
      persistent_.bytes += (buffer.type.byteSize() + 63) / 64 * 64;
      break;
    }
  }
  StatusOr<DeviceBuffer> empty = device_.allocate(0);
  if (!empty.ok())
    return empty.status();
  emptyMemory_ = std::move(*empty);
  if (persistent_.bytes > 0) {
    StatusOr<DeviceBuffer> memory = device_.allocate(static_cast<size_t>(persistent_.bytes));
    if (!memory.ok())
      return memory.status().withContext("allocating " + std::to_string(persistent_.bytes) +
                                         " bytes of persistent buffers failed");
    persistentMemory_ = std::move(*memory);
  }
  for (const LaunchCmd &launch : artifact_.launches) {
    if (!launch.cached)
      continue;
    hasCached_ = true;
    for (uint32_t id : launch.bindings)
      if (roots_[id].kind == BufferKind::Input)
        cachedReads_.push_back(roots_[id].index);
  }
  std::sort(cachedReads_.begin(), cachedReads_.end());
  cachedReads_.erase(std::unique(cachedReads_.begin(), cachedReads_.end()), cachedReads_.end());

  // Outputs keep buffers of their own; the rest share the arena by liveness.
  std::vector<bool> escapes(allocBuffers_.size(), false);
  for (uint32_t id : artifact_.outputs)
    if (roots_[id].kind == BufferKind::Alloc)
      escapes[roots_[id].index] = true;
  int64_t next = 0;
  for (bool escaping : escapes)
    allocatedIndex_.push_back(escaping ? next++ : -1);
  lifetimes_.assign(allocBuffers_.size(), Lifetime());
  auto use = [&](uint32_t id, int64_t step) {
    if (roots_[id].kind == BufferKind::Alloc)
      lifetimes_[roots_[id].index].extend(step);
  };
  // Steps: launch i is 2i + 1; a collective after p launches starts at 2p,
  // between launch p - 1 and launch p, and its buffers stay live until it is
  // waited for before launch w (2w), so no launch in flight with it shares
  // their memory.
  for (size_t index = 0; index < artifact_.launches.size(); ++index)
    for (uint32_t id : artifact_.launches[index].bindings)
      use(id, 2 * static_cast<int64_t>(index) + 1);
  // A check reads its flag once the launches before it have run.
  for (const CheckCmd &check : artifact_.checks)
    use(check.buffer, std::max<int64_t>(0, 2 * static_cast<int64_t>(check.afterLaunches) - 1));
  const std::vector<CollectiveCmd> &collectives = artifact_.collectives;
  for (size_t index = 0; index < collectives.size(); ++index) {
    const CollectiveCmd &command = collectives[index];
    auto touches = [&](uint32_t id) {
      return sharesMemory(id, command.input) || sharesMemory(id, command.output);
    };
    CollectiveWait wait{artifact_.launches.size(), collectives.size()};
    for (size_t launch = command.afterLaunches; launch < artifact_.launches.size(); ++launch)
      if (std::any_of(artifact_.launches[launch].bindings.begin(),
                      artifact_.launches[launch].bindings.end(), touches)) {
        wait.launch = launch;
        break;
      }
    for (size_t later = index + 1; later < collectives.size(); ++later)
      if (touches(collectives[later].input) || touches(collectives[later].output)) {
        wait.collective = later;
        break;
      }
    // Launches before this many may run while it is in flight (a later
    // collective that touches its memory waits for it before it starts).
    wait.launchesBefore = wait.launch;
    if (wait.collective < collectives.size())
      wait.launchesBefore = std::min<size_t>(wait.launchesBefore,
                                             collectives[wait.collective].afterLaunches);
    collectiveWaits_.push_back(wait);
    for (uint32_t id : {command.input, command.output}) {
      use(id, 2 * static_cast<int64_t>(command.afterLaunches));
      use(id, 2 * static_cast<int64_t>(wait.launchesBefore));
    }
  }
  if (artifact_.symbols.empty()) {
    std::vector<TensorDesc> types;
    for (const BufferDesc &buffer : buffers) {
      types.push_back(buffer.type);
      staticBytes_.push_back(static_cast<uint64_t>(buffer.type.byteSize()));
    }
    staticMemory_ = planArena(types);
  }
  return Status::OK();
}

/// Whether buffers `a` and `b` may overlap in memory: views of one root do
/// (conservatively, whatever their offsets).
bool Program::sharesMemory(uint32_t a, uint32_t b) const {
  return roots_[a].kind == roots_[b].kind && roots_[a].index == roots_[b].index;
}

int64_t Program::launchesOverlappingCollectives() const {
  int64_t launches = 0;
  for (size_t index = 0; index < artifact_.collectives.size(); ++index)
    launches += static_cast<int64_t>(collectiveWaits_[index].launchesBefore) -
                static_cast<int64_t>(artifact_.collectives[index].afterLaunches);
  return launches;
}

MemoryPlan Program::planArena(const std::vector<TensorDesc> &types) const {
  std::vector<int64_t> sizes(allocBuffers_.size(), 0);
  for (size_t slot = 0; slot < allocBuffers_.size(); ++slot)
    if (allocatedIndex_[slot] < 0)
      sizes[slot] = types[allocBuffers_[slot]].byteSize();
  return planMemory(sizes, lifetimes_);
}

StatusOr<Program::Footprint> Program::footprint(const std::vector<void *> &inputs,
                                                const std::vector<TensorDesc> &inputDescs) const {
  std::vector<int64_t> symbols;
  KILN_RETURN_IF_ERROR(checkInputs(inputs, inputDescs, symbols));
  StatusOr<std::shared_ptr<const Resolved>> sizes = resolvedFor(symbols);
  if (!sizes.ok())
    return sizes.status();
  std::shared_ptr<const Resolved> resolved = std::move(*sizes);
  const MemoryPlan *memory = resolved ? &resolved->memory : &staticMemory_;
  Footprint result;
  result.arena = memory->bytes;
  for (size_t slot = 0; slot < allocBuffers_.size(); ++slot) {
    uint32_t id = allocBuffers_[slot];
    int64_t bytes = (resolved ? resolved->types[id] : artifact_.buffers[id].type).byteSize();
    if (allocatedIndex_[slot] >= 0)
      result.outputs += bytes;
    else if (lifetimes_[slot].used())
      result.intermediates += bytes;
  }
  return result;
}

std::vector<std::string> Program::symbolNames() const {
  std::vector<std::string> names;
  for (const SymbolDesc &symbol : artifact_.symbols)
    names.push_back(symbol.name);
  return names;
}

/// The symbols' values from the input shapes they are bound to, each checked
/// against its range; then every input dim against its expression.
Status Program::bindSymbols(const std::vector<void *> &inputs,
                            const std::vector<TensorDesc> &inputDescs,
                            std::vector<int64_t> &symbols) const {
  symbols.clear();
  for (const SymbolDesc &symbol : artifact_.symbols) {
    const TensorDesc &input = inputDescs[symbol.input];
    // (Messages are built only on failure: this runs on every call.)
    auto where = [&] { return "input " + std::to_string(symbol.input) + " (" + input.str() + ")"; };
    int64_t value;
    if (symbol.dim == kSymbolValue) { // a size passed as a 0-d int64
      if (!inputs[symbol.input])
        return Status::error(where() + ", the value of " + symbol.name + ": null data pointer");
      std::memcpy(&value, inputs[symbol.input], sizeof(value));
      if (value < symbol.min || value > symbol.max)
        return Status::error(where() + " is " + std::to_string(value) +
                             ", but the graph was compiled for " + symbol.name + " in [" +
                             std::to_string(symbol.min) + ", " +
                             (symbol.max == INT64_MAX ? std::string("inf")
                                                      : std::to_string(symbol.max)) +
                             "]");
      symbols.push_back(value);
      continue;
    }
    if (symbol.dim >= input.shape.size())
      return Status::error(where() + " has no dim " + std::to_string(symbol.dim) +
                           ", which gives the size " + symbol.name);
    value = input.shape[symbol.dim];
    if (value < symbol.min || value > symbol.max)
      return Status::error(
          where() + " dim " + std::to_string(symbol.dim) + " is " + std::to_string(value) +
          ", but the graph was compiled for " + symbol.name + " in [" +
          std::to_string(symbol.min) + ", " +
          (symbol.max == INT64_MAX ? std::string("inf") : std::to_string(symbol.max)) +
          "] (Dynamo specializes the sizes 0 and 1, and mark_dynamic may set bounds)");
    symbols.push_back(value);
  }
  for (size_t i = 0; i < inputDescs.size(); ++i) {
    const BufferDesc &buffer = artifact_.buffers[inputBuffers_[i]];
    if (buffer.dims.empty())
      continue; // static: checkInputs compared it
    const TensorDesc &actual = inputDescs[i];
    // Each symbolic dim against its expression (the static dims matched in
    // checkInputs), evaluated in place: this runs on every call.
    for (size_t d = 0, nth = 0; d < actual.shape.size(); ++d) {
      if (buffer.type.shape[d] != -1)
        continue;
      if (nth >= buffer.dims.size())
        return Status::error("input " + std::to_string(i) +
                             ": a symbolic dim without its expression");
      const SizeExpr &expr = buffer.dims[nth++];
      StatusOr<int64_t> expected = evaluateSizeExpr(expr, symbols);
      if (!expected.ok())
        return expected.status().withContext("input " + std::to_string(i));
      if (*expected != actual.shape[d])
        return Status::error("input " + std::to_string(i) + " (" + actual.str() + ") dim " +
                             std::to_string(d) + " is " + std::to_string(actual.shape[d]) +
                             ", but the graph requires it to equal " + expr.str(symbolNames()) +
                             " = " + std::to_string(*expected));
    }
  }
  return Status::OK();
}

/// The concrete shape of every buffer for these symbol values.
Status Program::resolve(const std::vector<int64_t> &symbols, Resolved &resolved) const {
  const std::vector<BufferDesc> &buffers = artifact_.buffers;
  resolved.symbols = symbols;
  std::vector<TensorDesc> &types = resolved.types;
  types.resize(buffers.size());
  for (size_t id = 0; id < buffers.size(); ++id) {
    const BufferDesc &buffer = buffers[id];
    StatusOr<TensorDesc> desc = resolveBufferDesc(buffer, symbols);
    if (!desc.ok())
      return desc.status().withContext("buffer " + std::to_string(id));
    TensorDesc &type = types[id];
    type = std::move(*desc);
    KILN_RETURN_IF_ERROR(validateTensorDesc(type).withContext("buffer " + std::to_string(id)));
    if (buffer.kind == BufferKind::View &&
        type.byteSize() > types[buffer.source].byteSize())
      return Status::error("buffer " + std::to_string(id) + " views " + type.str() +
                           " in buffer " + std::to_string(buffer.source) + " (" +
                           types[buffer.source].str() + "), which is smaller");
  }
  resolved.bytes.clear();
  for (const TensorDesc &type : types)
    resolved.bytes.push_back(static_cast<uint64_t>(type.byteSize()));
  resolved.workgroups.resize(artifact_.launches.size());
  for (size_t index = 0; index < artifact_.launches.size(); ++index) {
    const LaunchCmd &launch = artifact_.launches[index];
    int64_t count = launch.workgroups;
    if (!launch.symbolicWorkgroups.empty()) {
      StatusOr<int64_t> computed = evaluateSizeExpr(launch.symbolicWorkgroups, symbols);
      if (!computed.ok())
        return computed.status().withContext("the workgroup count of launch " +
                                             std::to_string(index));
      count = std::clamp<int64_t>(*computed, 0, kMaxWorkgroups);
    }
    resolved.workgroups[index] = count;
  }
  resolved.memory = planArena(resolved.types);
  return Status::OK();
}

StatusOr<std::shared_ptr<const Program::Resolved>>
Program::resolvedFor(const std::vector<int64_t> &symbols) const {
  if (artifact_.symbols.empty())
    return std::shared_ptr<const Resolved>();
  {
    std::lock_guard<std::mutex> lock(lastResolvedMutex_);
    if (lastResolved_ && lastResolved_->symbols == symbols)
      return lastResolved_;
  }
  auto fresh = std::make_shared<Resolved>();
  KILN_RETURN_IF_ERROR(resolve(symbols, *fresh));
  std::shared_ptr<const Resolved> result = std::move(fresh);
  std::lock_guard<std::mutex> lock(lastResolvedMutex_);
  lastResolved_ = result;
  return result;
}

Status Program::checkInputs(const std::vector<void *> &inputs,
                            const std::vector<TensorDesc> &inputDescs,
                            std::vector<int64_t> &symbols) const {
  if (inputs.size() != inputDescs_.size() ||
      inputDescs.size() != inputDescs_.size())
    return Status::error("graph '" + artifact_.graphName + "' takes " +
                         std::to_string(inputDescs_.size()) + " inputs, got " +
                         std::to_string(inputs.size()) + " pointers and " +
                         std::to_string(inputDescs.size()) + " descs");
  bool symbolic = !artifact_.symbols.empty();
  for (size_t i = 0; i < inputs.size(); ++i) {
    const TensorDesc &expected = inputDescs_[i];
    bool matches = symbolic ? inputDescs[i].dtype == expected.dtype &&
                                  inputDescs[i].shape.size() == expected.shape.size()
                            : inputDescs[i] == expected;
    if (matches && symbolic)
      for (size_t d = 0; d < expected.shape.size(); ++d)
        matches &= expected.shape[d] == -1 || expected.shape[d] == inputDescs[i].shape[d];
    if (!matches)
      return Status::error("input " + std::to_string(i) + ": expected " +
                           expected.str() + ", got " + inputDescs[i].str());
  }
  if (symbolic)
    KILN_RETURN_IF_ERROR(bindSymbols(inputs, inputDescs, symbols));
  for (size_t i = 0; i < inputs.size(); ++i)
    if (!inputs[i] && inputDescs[i].byteSize() != 0)
      return Status::error("input " + std::to_string(i) + " (" +
                           inputDescs[i].str() + "): null data pointer");
  return Status::OK();
}

int64_t Program::cachedRuns() const { return cachedRuns_.load(); }

std::optional<Program::CachedInputs>
Program::cachedInputsOf(const std::vector<void *> &inputs,
                        const InputVersions *versions) const {
  if (!versions || versions->values.size() != inputs.size())
    return std::nullopt;
  CachedInputs identity;
  for (uint32_t input : cachedReads_) {
    uint64_t version = versions->values[input];
    if (version == InputVersions::kUntracked)
      return std::nullopt;
    identity.pointers.push_back(inputs[input]);
    identity.versions.push_back(version);
  }
  return identity;
}

Status Program::run(const std::vector<void *> &inputs,
                    const std::vector<TensorDesc> &inputDescs,
                    Allocator &allocator,
                    std::vector<std::shared_ptr<Buffer>> &allocated,
                    std::vector<OutputRef> &outputs,
                    std::vector<double> *launchMs,
                    const InputVersions *versions, bool wait,
                    Communicator *communicator) const {
  allocated.clear();
  outputs.clear();
  std::unique_lock<std::mutex> oneCallAtATime(collectiveMutex_, std::defer_lock);
  if (!artifact_.collectives.empty())
    oneCallAtATime.lock();
  std::vector<int64_t> symbols;
  Status status = checkInputs(inputs, inputDescs, symbols);
  if (status.ok() && !hasCached_) {
    status = runImpl(wait, inputs, symbols, allocator, allocated, outputs, launchMs, false,
                     communicator);
  } else if (status.ok()) {
    // Reuse the cached launches' results if they were made from these very
    // inputs (shared: calls that reuse them run at once); else make them
    // anew, excluding every other call meanwhile.
    std::optional<CachedInputs> identity = cachedInputsOf(inputs, versions);
    bool reused = false;
    if (identity) {
      std::shared_lock<std::shared_mutex> lock(cacheMutex_);
      if (cachedFrom_ && *cachedFrom_ == *identity) {
        status = runImpl(wait, inputs, symbols, allocator, allocated, outputs, launchMs, false,
                     communicator);
        reused = true;
      }
    }
    if (!reused) {
      std::unique_lock<std::shared_mutex> lock(cacheMutex_);
      bool current = identity && cachedFrom_ && *cachedFrom_ == *identity;
      cachedFrom_.reset(); // until the launches below have made them
      status = runImpl(wait, inputs, symbols, allocator, allocated, outputs, launchMs, !current,
                     communicator);
      if (status.ok() && identity) {
        if (versions->keepAlive)
          identity->keepAlive = versions->keepAlive();
        cachedFrom_ = std::move(identity);
      }
    }
  }
  if (!status.ok()) {
    allocated.clear();
    outputs.clear();
  }
  return status;
}

Status Program::runImpl(bool wait, const std::vector<void *> &inputs,
                        const std::vector<int64_t> &symbols,
                        Allocator &allocator,
                        std::vector<std::shared_ptr<Buffer>> &allocated,
                        std::vector<OutputRef> &outputs,
                        std::vector<double> *launchMs, bool runCached,
                        Communicator *communicator) const {
  const std::vector<BufferDesc> &buffers = artifact_.buffers;
  // A symbolic graph's sizes for this call; a static graph's are its own.
  StatusOr<std::shared_ptr<const Resolved>> sizes = resolvedFor(symbols);
  if (!sizes.ok())
    return sizes.status();
  std::shared_ptr<const Resolved> resolved = std::move(*sizes);
  auto typeOf = [&](size_t id) -> const TensorDesc & {
    return resolved ? resolved->types[id] : buffers[id].type;
  };
  const MemoryPlan &memory = resolved ? resolved->memory : staticMemory_;
  const std::vector<uint64_t> &bufferBytes = resolved ? resolved->bytes : staticBytes_;
  // (A graph with no intermediates, an eager op's, needs no arena.)
  ArenaPool::Lease arena =
      memory.bytes > 0 ? arenas_.acquire(static_cast<size_t>(memory.bytes)) : ArenaPool::Lease();
  if (memory.bytes > 0 && !arena.data())
    return Status::error(StatusCode::OutOfMemory, "allocating the " + std::to_string(memory.bytes) +
                         "-byte arena of graph '" + artifact_.graphName + "' failed");
  // Unused and empty intermediates still get a valid, aligned address.
  char *arenaBase = static_cast<char *>(arena.data() ? arena.data() : emptyMemory_.address());
  for (size_t slot = 0; slot < allocBuffers_.size(); ++slot) {
    if (allocatedIndex_[slot] < 0)
      continue; // in the arena
    uint32_t id = allocBuffers_[slot];
    const TensorDesc &type = typeOf(id);
    auto context = [&] { return "allocating buffer " + std::to_string(id) + " (" + type.str() + ")"; };
    StatusOr<std::shared_ptr<Buffer>> buffer = allocator.allocate(type);
    if (!buffer.ok())
      return buffer.status().withContext(context());
    if (!*buffer || !(*buffer)->data())
      return Status::error(context() + ": the allocator returned no memory");
    allocated.push_back(std::move(*buffer));
  }

  std::vector<void *> pointers(buffers.size());
  for (size_t id = 0; id < buffers.size(); ++id) {
    const Root &root = roots_[id];
    char *base;
    if (root.kind == BufferKind::Input)
      base = static_cast<char *>(inputs[root.index]);
    else if (root.kind == BufferKind::Persistent)
      base = static_cast<char *>(persistentMemory_.address()) + persistent_.offsets[root.index];
    else if (allocatedIndex_[root.index] < 0)
      base = arenaBase + memory.offsets[root.index];
    else
      base = static_cast<char *>(allocated[allocatedIndex_[root.index]]->data());
    pointers[id] = base + root.byteOffset;
  }

  // Checks run as soon as the launches before them have finished, so a
  // failed index check stops the run before later kernels use the result.
  // The flag is read back from the device, which waits for those launches.
  size_t nextCheck = 0;
  auto runChecks = [&](size_t launchesDone) -> Status {
    for (; nextCheck < artifact_.checks.size() &&
           artifact_.checks[nextCheck].afterLaunches <= launchesDone;
         ++nextCheck) {
      const CheckCmd &check = artifact_.checks[nextCheck];
      uint8_t flag = 0;
      KILN_RETURN_IF_ERROR(device_.copyDeviceToHost(&flag, pointers[check.buffer], 1));
      if (flag == 0)
        return Status::error(check.code, check.message);
    }
    return Status::OK();
  };

  // Collectives start after the checks due at their position and are
  // waited for where their memory is next used. On any return, those in
  // flight are waited for first (they write memory this call owns).
  struct InFlight {
    size_t index;
    std::unique_ptr<PendingCollective> pending;
  };
  struct InFlightList : std::vector<InFlight> {
    ~InFlightList() {
      for (InFlight &collective : *this)
        (void)collective.pending->wait(); // a failure here is not this call's first
    }
  } inFlight;
  auto describe = [&](size_t index) {
    const CollectiveCmd &command = artifact_.collectives[index];
    return "collective " + std::to_string(index) + " (" +
           std::string(collectiveKindName(command.collective.kind)) + " over group '" +
           command.collective.group + "') of graph '" + artifact_.graphName + "'";
  };
  // Waits, in start order, for the collectives in flight that `due` names.
  auto waitFor = [&](auto due) -> Status {
    for (auto it = inFlight.begin(); it != inFlight.end();) {
      if (!due(collectiveWaits_[it->index])) {
        ++it;
        continue;
      }
      std::unique_ptr<PendingCollective> pending = std::move(it->pending);
      size_t index = it->index;
      it = inFlight.erase(it);
      if (Status status = pending->wait(); !status.ok())
        return status.withContext(describe(index));
    }
    return Status::OK();
  };
  size_t nextCollective = 0;
  auto startCollectives = [&](size_t launchesDone) -> Status {
    for (; nextCollective < artifact_.collectives.size() &&
           artifact_.collectives[nextCollective].afterLaunches <= launchesDone;
         ++nextCollective) {
      size_t index = nextCollective;
      KILN_RETURN_IF_ERROR(
          waitFor([&](const CollectiveWait &wait) { return wait.collective <= index; }));
      const CollectiveCmd &command = artifact_.collectives[index];
      StatusOr<std::unique_ptr<PendingCollective>> pending =
          startCollective(command, communicator, pointers[command.input], typeOf(command.input),
                          pointers[command.output], typeOf(command.output));
      if (!pending.ok())
        return pending.status().withContext(describe(index));
      inFlight.push_back({index, std::move(*pending)});
    }
    return Status::OK();
  };

  std::vector<void *> bindings;
  std::vector<uint64_t> bindingBytes;
  bindings.reserve(maxBindings_);
  bindingBytes.reserve(maxBindings_);
  if (launchMs)
    launchMs->assign(artifact_.launches.size(), 0.0);
  for (size_t index = 0; index < artifact_.launches.size(); ++index) {
    KILN_RETURN_IF_ERROR(runChecks(index));
    KILN_RETURN_IF_ERROR(startCollectives(index));
    KILN_RETURN_IF_ERROR(
        waitFor([&](const CollectiveWait &wait) { return wait.launch <= index; }));
    const LaunchCmd &launch = artifact_.launches[index];
    int64_t count = resolved ? resolved->workgroups[index] : launch.workgroups;
    if (count == 0 || (launch.cached && !runCached))
      continue;
    bindings.clear();
    bindingBytes.clear();
    for (uint32_t id : launch.bindings) {
      bindings.push_back(pointers[id]);
      bindingBytes.push_back(bufferBytes[id]);
    }
    LaunchParams params;
    params.workgroups.x = count;
    params.bindings = bindings.data();
    params.numBindings = static_cast<uint32_t>(bindings.size());
    params.bindingBytes = bindingBytes.data();
    // Symbolic kernels take the symbols' values after their bindings.
    if (artifact_.kernels[launch.kernel].numSymbols) {
      params.values = symbols.data();
      params.numValues = static_cast<uint32_t>(symbols.size());
    }
    auto start = std::chrono::steady_clock::now();
    if (Status launched = device_.launch(*executable_, launch.kernel, params); !launched.ok())
      return launched.withContext("launch " + std::to_string(index));
    if (launchMs) {
      // Profiling times each launch alone, so wait for it.
      KILN_RETURN_IF_ERROR(device_.synchronize());
      (*launchMs)[index] = std::chrono::duration<double, std::milli>(
                               std::chrono::steady_clock::now() - start)
                               .count();
    }
  }

  KILN_RETURN_IF_ERROR(runChecks(artifact_.launches.size()));
  KILN_RETURN_IF_ERROR(startCollectives(artifact_.launches.size()));
  KILN_RETURN_IF_ERROR(waitFor([](const CollectiveWait &) { return true; }));
  // The outputs are complete, and a kernel fault is this call's error.
  if (wait)
    KILN_RETURN_IF_ERROR(device_.synchronize());
  if (runCached)
    ++cachedRuns_;

  outputs.reserve(artifact_.outputs.size());
  for (uint32_t id : artifact_.outputs) {
    const Root &root = roots_[id];
    OutputRef ref;
    if (root.kind == BufferKind::Input)
      ref.input = root.index;
    else
      ref.buffer = allocatedIndex_[root.index];
    ref.byteOffset = root.byteOffset;
    ref.type = typeOf(id);
    outputs.push_back(std::move(ref));
  }
  return Status::OK();
}

namespace {
/// A collective on host copies of device memory: its output is uploaded
/// once it completes.
class StagedCollective : public PendingCollective {
public:
  StagedCollective(Device &device, void *output, std::vector<uint8_t> input,
                   std::vector<uint8_t> hostOutput)
      : device_(device), output_(output), input_(std::move(input)),
        hostOutput_(std::move(hostOutput)) {}
  void started(std::unique_ptr<PendingCollective> pending) { pending_ = std::move(pending); }
  const void *hostInput() const { return input_.data(); }
  void *hostOutput() { return hostOutput_.data(); }
  Status wait() override {
    KILN_RETURN_IF_ERROR(pending_->wait());
    return device_.copyHostToDevice(output_, hostOutput_.data(), hostOutput_.size());
  }

private:
  Device &device_;
  void *output_;
  std::vector<uint8_t> input_, hostOutput_;
  std::unique_ptr<PendingCollective> pending_;
};
} // namespace

StatusOr<std::unique_ptr<PendingCollective>>
Program::startCollective(const CollectiveCmd &command, Communicator *communicator, void *input,
                         const TensorDesc &inputType, void *output,
                         const TensorDesc &outputType) const {
  if (!communicator)
    return Status::error("the graph runs collectives, and the caller gave no communicator");
  if (device_.hostAddressable()) {
    // Earlier launches have finished (the CPU driver's return when done);
    // synchronize in case a host-addressable device ever queues.
    KILN_RETURN_IF_ERROR(device_.synchronize());
    return communicator->start(command.collective, input, inputType, output, outputType);
  }
  std::vector<uint8_t> hostInput(static_cast<size_t>(inputType.byteSize()));
  KILN_RETURN_IF_ERROR(device_.copyDeviceToHost(hostInput.data(), input, hostInput.size()));
  auto staged = std::make_unique<StagedCollective>(
      device_, output, std::move(hostInput),
      std::vector<uint8_t>(static_cast<size_t>(outputType.byteSize())));
  StatusOr<std::unique_ptr<PendingCollective>> pending = communicator->start(
      command.collective, staged->hostInput(), inputType, staged->hostOutput(), outputType);
  if (!pending.ok())
    return pending.status();
  staged->started(std::move(*pending));
  return std::unique_ptr<PendingCollective>(std::move(staged));
}

} // namespace kiln::runtime
