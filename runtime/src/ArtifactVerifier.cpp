//===- ArtifactVerifier.cpp - Semantic checks on artifacts ---------------===//
//
// Everything Program relies on when it turns ids into pointers is checked
// here, so a corrupt or mis-built artifact fails with a message instead of
// making a kernel read out of bounds.
//
//===----------------------------------------------------------------------===//

#include "kiln/runtime/Artifact.h"
#include "kiln/runtime/GpuImageContainer.h"
#include "kiln/runtime/SpirvContainer.h"

#include <algorithm>
#include <cstdint>
#include <limits>

namespace kiln::runtime {

static std::string str(uint64_t value) { return std::to_string(value); }

/// The encoding stores string lengths and element counts as u32.
static Status checkU32Size(size_t size, const std::string &what) {
  if (size > std::numeric_limits<uint32_t>::max())
    return Status::error(what + " has " + str(size) +
                         " entries; the format allows at most 2^32 - 1");
  return Status::OK();
}

/// A symbolic dim (-1) has an expression in `dims`, one per such dim.
static bool isSymbolic(const TensorDesc &desc) {
  return std::find(desc.shape.begin(), desc.shape.end(), -1) != desc.shape.end();
}

static Status verifyDims(const Artifact &a, const BufferDesc &buffer) {
  size_t dynamic = std::count(buffer.type.shape.begin(), buffer.type.shape.end(), -1);
  if (buffer.dims.size() != dynamic)
    return Status::error(buffer.type.str() + " has " + str(dynamic) + " symbolic dims but " +
                         str(buffer.dims.size()) + " dim expressions");
  if (dynamic && a.symbols.empty())
    return Status::error("a symbolic dim in a graph without size symbols");
  for (const SizeExpr &dim : buffer.dims)
    KILN_RETURN_IF_ERROR(verifySizeExpr(dim, a.symbols.size()));
  TensorDesc probe = buffer.type; // the static dims must be valid on their own
  for (int64_t &d : probe.shape)
    d = d == -1 ? 0 : d;
  return validateTensorDesc(probe);
}

static Status verifyView(const Artifact &a, size_t id) {
  const BufferDesc &view = a.buffers[id];
  if (view.source >= id)
    return Status::error("views buffer " + str(view.source) +
                         ", but a view may only alias an earlier buffer");
  const BufferDesc &source = a.buffers[view.source];
  if (isSymbolic(view.type) || isSymbolic(source.type)) {
    // Sizes are known at run time, where Program checks the view fits.
    if (view.byteOffset != 0)
      return Status::error("a symbolic view must start at byte offset 0");
    return Status::OK();
  }
  int64_t size = view.type.byteSize();
  int64_t end = 0;
  if (view.byteOffset < 0 ||
      __builtin_add_overflow(view.byteOffset, size, &end) ||
      end > source.type.byteSize())
    return Status::error(
        "view of " + std::to_string(size) + " bytes at byte offset " +
        std::to_string(view.byteOffset) + " does not fit in source buffer " +
        str(view.source) + " (" +
        source.type.str() + ", " + std::to_string(source.type.byteSize()) +
        " bytes)");
  // Kernels access elements with aligned loads.
  if (view.byteOffset % static_cast<int64_t>(dtypeSize(view.type.dtype)))
    return Status::error("view byte offset " +
                         std::to_string(view.byteOffset) +
                         " is not a multiple of the " +
                         dtypeName(view.type.dtype) + " element size");
  return Status::OK();
}

static Status verifyBuffer(const Artifact &a, size_t id, uint32_t numInputs,
                           std::vector<int64_t> &bufferOfInput) {
  const BufferDesc &buffer = a.buffers[id];
  KILN_RETURN_IF_ERROR(verifyDims(a, buffer));
  switch (buffer.kind) {
  case BufferKind::Input: {
    if (buffer.source >= numInputs)
      return Status::error(
          "graph input index " + str(buffer.source) + " is out of range: " +
          "with " + str(numInputs) + " Input buffers the indices must be 0.." +
          std::to_string(static_cast<int64_t>(numInputs) - 1));
    int64_t &owner = bufferOfInput[buffer.source];
    if (owner >= 0)
      return Status::error("graph input " + str(buffer.source) +
                           " is already bound by buffer " +
                           std::to_string(owner));
    owner = static_cast<int64_t>(id);
    break;
  }
  case BufferKind::Alloc:
  case BufferKind::Persistent:
    if (buffer.source != 0)
      return Status::error("Alloc and Persistent buffers must have source 0, got " +
                           str(buffer.source));
    // Persistent buffers are allocated once, at load: their size is fixed.
    if (buffer.kind == BufferKind::Persistent && isSymbolic(buffer.type))
      return Status::error("a Persistent buffer has a symbolic shape (" +
                           buffer.type.str() + ")");
    break;
  case BufferKind::View:
    return verifyView(a, id);
  default:
    return Status::error("unknown buffer kind " +
                         str(static_cast<uint8_t>(buffer.kind)));
  }
  if (buffer.byteOffset != 0)
    return Status::error("only View buffers may have a byte offset, got " +
                         std::to_string(buffer.byteOffset));
  return Status::OK();
}

/// The Input, Alloc or Persistent buffer that buffer `id`'s bytes belong to
/// (views verified to point backwards).
static const BufferDesc &rootOf(const Artifact &a, uint32_t id) {
  while (a.buffers[id].kind == BufferKind::View)
    id = a.buffers[id].source;
  return a.buffers[id];
}
static BufferKind rootKind(const Artifact &a, uint32_t id) { return rootOf(a, id).kind; }

static Status verifyLaunch(const Artifact &a, const LaunchCmd &launch) {
  if (launch.kernel >= a.kernels.size())
    return Status::error("kernel " + str(launch.kernel) +
                         " is out of range: the artifact has " +
                         str(a.kernels.size()) + " kernels");
  const KernelInfo &kernel = a.kernels[launch.kernel];
  if (!launch.symbolicWorkgroups.empty())
    KILN_RETURN_IF_ERROR(verifySizeExpr(launch.symbolicWorkgroups, a.symbols.size())
                             .withContext("its workgroup count"));
  if (kernel.numSymbols != 0 && kernel.numSymbols != a.symbols.size())
    return Status::error("kernel '" + kernel.name + "' takes " + str(kernel.numSymbols) +
                         " size symbols, the graph has " + str(a.symbols.size()));
  if (launch.bindings.size() != kernel.numBindings)
    return Status::error("kernel '" + kernel.name + "' takes " +
                         str(kernel.numBindings) + " bindings, the launch " +
                         "passes " + str(launch.bindings.size()));
  for (size_t i = 0; i < launch.bindings.size(); ++i) {
    if (launch.bindings[i] >= a.buffers.size())
      return Status::error("binding " + str(i) + " refers to buffer " +
                           str(launch.bindings[i]) + ", but there are only " +
                           str(a.buffers.size()) + " buffers");
    // A cached launch may be skipped, so it can only make Persistent
    // buffers, and only from graph inputs.
    BufferKind root = rootKind(a, launch.bindings[i]);
    if (launch.cached && root != BufferKind::Input && root != BufferKind::Persistent)
      return Status::error("binding " + str(i) + " of a cached launch is buffer " +
                           str(launch.bindings[i]) +
                           ", neither a graph input nor a Persistent buffer");
    // Its inputs are compared by pointer, so their shapes must be fixed.
    if (launch.cached && isSymbolic(rootOf(a, launch.bindings[i]).type))
      return Status::error("binding " + str(i) + " of a cached launch has a symbolic shape");
  }
  if (launch.cached && !launch.symbolicWorkgroups.empty())
    return Status::error("a cached launch has a workgroup count computed at run time");
  return Status::OK();
}

static Status verifyCheck(const Artifact &a, const CheckCmd &check,
                          uint32_t previousPosition) {
  if (check.buffer >= a.buffers.size())
    return Status::error("refers to buffer " + str(check.buffer) +
                         ", but there are only " + str(a.buffers.size()) +
                         " buffers");
  const TensorDesc &type = a.buffers[check.buffer].type;
  if (type.dtype != DType::Bool || isSymbolic(type) || type.numElements() != 1)
    return Status::error("its buffer must hold one bool, not " + type.str());
  if (check.afterLaunches > a.launches.size())
    return Status::error("runs after launch " + str(check.afterLaunches) +
                         ", but there are only " + str(a.launches.size()) +
                         " launches");
  if (check.afterLaunches < previousPosition)
    return Status::error("checks must be sorted by position");
  if (check.code != StatusCode::Error &&
      check.code != StatusCode::IndexOutOfRange)
    return Status::error("unknown error code " +
                         str(static_cast<uint8_t>(check.code)));
  return Status::OK();
}

/// Static sizes that differ (a symbolic one, -1, matches anything).
static bool sizesDiffer(int64_t a, int64_t b) { return a >= 0 && b >= 0 && a != b; }

static Status verifyCollective(const Artifact &a, const CollectiveCmd &command,
                               uint32_t previousPosition) {
  for (uint32_t id : {command.input, command.output})
    if (id >= a.buffers.size())
      return Status::error("refers to buffer " + str(id) + ", but there are only " +
                           str(a.buffers.size()) + " buffers");
  if (rootKind(a, command.output) != BufferKind::Alloc)
    return Status::error("its output must be an Alloc buffer (or a view of one)");
  if (command.afterLaunches > a.launches.size())
    return Status::error("runs after launch " + str(command.afterLaunches) + ", but there are only " +
                         str(a.launches.size()) + " launches");
  if (command.afterLaunches < previousPosition)
    return Status::error("collectives must be sorted by position");
  const Collective &collective = command.collective;
  if (collective.group.empty())
    return Status::error("names no process group");
  // all_reduce's size may be unknown (0): torch's op does not name it;
  // nor does all_to_all's without splits.
  bool sameShape = collective.kind == CollectiveKind::AllReduce ||
                   collective.kind == CollectiveKind::AllToAll;
  if (collective.groupSize < (sameShape ? 0 : 1))
    return Status::error("has a group of " + std::to_string(collective.groupSize) + " ranks");
  const TensorDesc &in = a.buffers[command.input].type;
  const TensorDesc &out = a.buffers[command.output].type;
  std::string shapes = " (" + in.str() + " to " + out.str() + ")";
  if (in.dtype != out.dtype || in.shape.size() != out.shape.size())
    return Status::error(std::string(collectiveKindName(collective.kind)) +
                         " changes the dtype or rank" + shapes);
  bool alongDim0 = collective.kind != CollectiveKind::AllReduce;
  if (alongDim0 && in.shape.empty())
    return Status::error(std::string(collectiveKindName(collective.kind)) + " of a 0-d tensor");
  for (size_t d = 0; d < in.shape.size(); ++d) {
    int64_t expected = in.shape[d];
    if (d == 0 && in.shape[0] >= 0 && collective.kind == CollectiveKind::AllGather)
      expected = in.shape[0] * collective.groupSize;
    if (d == 0 && in.shape[0] >= 0 && collective.kind == CollectiveKind::ReduceScatter) {
      if (in.shape[0] % collective.groupSize != 0)
        return Status::error("reduce_scatter of " + str(in.shape[0]) + " rows over " +
                             std::to_string(collective.groupSize) + " ranks" + shapes);
      expected = in.shape[0] / collective.groupSize;
    }
    if (sizesDiffer(expected, out.shape[d]))
      return Status::error(std::string(collectiveKindName(collective.kind)) + " over " +
                           std::to_string(collective.groupSize) + " ranks cannot make dim " +
                           str(d) + " " + std::to_string(out.shape[d]) + shapes);
  }
  return Status::OK();
}

static Status verifySizes(const Artifact &a) {
  KILN_RETURN_IF_ERROR(checkU32Size(a.graphName.size(), "graph name"));
  KILN_RETURN_IF_ERROR(checkU32Size(a.executables.size(), "executable list"));
  for (const ExecutableDesc &executable : a.executables) {
    KILN_RETURN_IF_ERROR(checkU32Size(executable.format.size(), "executable format"));
    KILN_RETURN_IF_ERROR(checkU32Size(executable.cpu.size(), "cpu"));
    KILN_RETURN_IF_ERROR(checkU32Size(executable.cpuFeatures.size(), "cpu feature list"));
    for (const std::string &feature : executable.cpuFeatures)
      KILN_RETURN_IF_ERROR(checkU32Size(feature.size(), "cpu feature"));
    KILN_RETURN_IF_ERROR(checkU32Size(executable.blockSizes.size(), "block size list"));
  }
  KILN_RETURN_IF_ERROR(checkU32Size(a.metadata.size(), "metadata"));
  KILN_RETURN_IF_ERROR(checkU32Size(a.buffers.size(), "buffer list"));
  KILN_RETURN_IF_ERROR(checkU32Size(a.launches.size(), "launch list"));
  KILN_RETURN_IF_ERROR(checkU32Size(a.checks.size(), "check list"));
  for (const CheckCmd &check : a.checks)
    KILN_RETURN_IF_ERROR(checkU32Size(check.message.size(), "check message"));
  KILN_RETURN_IF_ERROR(checkU32Size(a.collectives.size(), "collective list"));
  for (const CollectiveCmd &command : a.collectives)
    KILN_RETURN_IF_ERROR(checkU32Size(command.collective.group.size(), "collective group"));
  KILN_RETURN_IF_ERROR(checkU32Size(a.outputs.size(), "output list"));
  KILN_RETURN_IF_ERROR(checkU32Size(a.kernels.size(), "kernel list"));
  for (const BufferDesc &buffer : a.buffers)
    KILN_RETURN_IF_ERROR(checkU32Size(buffer.type.shape.size(), "shape"));
  KILN_RETURN_IF_ERROR(checkU32Size(a.symbols.size(), "symbol list"));
  for (const LaunchCmd &launch : a.launches)
    KILN_RETURN_IF_ERROR(checkU32Size(launch.bindings.size(), "binding list"));
  for (const KernelInfo &kernel : a.kernels) {
    KILN_RETURN_IF_ERROR(checkU32Size(kernel.symbol.size(), "kernel symbol"));
    KILN_RETURN_IF_ERROR(checkU32Size(kernel.name.size(), "kernel name"));
  }
  return Status::OK();
}

static std::string blockText(const BlockSize &block) {
  return str(block.x) + "x" + str(block.y) + "x" + str(block.z);
}

/// A "vulkan-spirv" executable: a container with a module per kernel whose
/// LocalSize is the kernel's block size (1x1x1 where blockSizes is empty),
/// so that what the driver launches is what the plan assumed.
static Status verifySpirvExecutable(const Artifact &a, const ExecutableDesc &executable) {
  StatusOr<std::vector<SpirvKernelBinary>> modules = decodeSpirvContainer(executable.bytes);
  if (!modules.ok())
    return modules.status();
  for (size_t i = 0; i < a.kernels.size(); ++i) {
    const KernelInfo &kernel = a.kernels[i];
    std::string which = "kernel " + str(i) + " '" + kernel.name + "' (symbol '" + kernel.symbol + "')";
    const SpirvKernelBinary *found = nullptr;
    for (const SpirvKernelBinary &module : *modules)
      if (module.entryPoint == kernel.symbol)
        found = &module;
    if (!found)
      return Status::error("no SPIR-V module for " + which);
    std::optional<BlockSize> local = spirvLocalSize(found->words, kernel.symbol);
    if (!local)
      return Status::error("the SPIR-V module of " + which + " has no entry point '" +
                           kernel.symbol + "' with a LocalSize");
    BlockSize stated = executable.blockSizes.empty() ? BlockSize() : executable.blockSizes[i];
    if (!(stated == *local))
      return Status::error("the block size of " + which + " is " + blockText(stated) +
                           ", but its SPIR-V module's LocalSize is " + blockText(*local));
  }
  return Status::OK();
}

/// A "cuda-sm_XY" or "rocm-gfxN" executable: a container with an image per
/// kernel, entered by the kernel's symbol, and a block size per kernel (its
/// threads are what the kernel was compiled for).
static Status verifyGpuImageExecutable(const Artifact &a, const ExecutableDesc &executable,
                                       GpuImageKind kind) {
  StatusOr<std::vector<GpuKernelImage>> images = decodeGpuImageContainer(executable.bytes, kind);
  if (!images.ok())
    return images.status();
  if (executable.blockSizes.size() != a.kernels.size())
    return Status::error("a GPU executable needs a block size per kernel");
  for (size_t i = 0; i < a.kernels.size(); ++i) {
    const KernelInfo &kernel = a.kernels[i];
    bool found = false;
    for (const GpuKernelImage &image : *images)
      found |= image.entry == kernel.symbol;
    if (!found)
      return Status::error("no GPU image for kernel " + str(i) + " '" + kernel.name +
                           "' (symbol '" + kernel.symbol + "')");
  }
  return Status::OK();
}

/// Executable `index`: a format of its own, bytes when there are kernels,
/// and a block size per kernel (or none), each at least 1x1x1.
static Status verifyExecutable(const Artifact &a, size_t index) {
  const ExecutableDesc &executable = a.executables[index];
  if (executable.format.empty())
    return Status::error("it names no format");
  for (size_t other = 0; other < index; ++other)
    if (a.executables[other].format == executable.format)
      return Status::error("its format '" + executable.format + "' is also executable " +
                           str(other) + "'s");
  if (!a.kernels.empty() && executable.bytes.empty())
    return Status::error("the artifact declares " + str(a.kernels.size()) +
                         " kernels but executable '" + executable.format +
                         "' carries no bytes");
  if (!executable.blockSizes.empty() && executable.blockSizes.size() != a.kernels.size())
    return Status::error("it has " + str(executable.blockSizes.size()) +
                         " block sizes for " + str(a.kernels.size()) + " kernels");
  for (size_t i = 0; i < executable.blockSizes.size(); ++i) {
    const BlockSize &block = executable.blockSizes[i];
    if (block.x == 0 || block.y == 0 || block.z == 0)
      return Status::error("the block size of kernel " + str(i) + " is " + blockText(block) +
                           ", which is empty");
  }
  if (executable.format == kVulkanSpirvFormat && !a.kernels.empty())
    return verifySpirvExecutable(a, executable);
  if (std::optional<GpuImageKind> kind = gpuImageKindOf(executable.format);
      kind && !a.kernels.empty())
    return verifyGpuImageExecutable(a, executable, *kind);
  return Status::OK();
}

Status verifyArtifact(const Artifact &a) {
  if (a.executables.empty())
    return Status::error("the artifact carries no executable (it names no target)");
  KILN_RETURN_IF_ERROR(verifySizes(a));
  for (size_t i = 0; i < a.executables.size(); ++i)
    KILN_RETURN_IF_ERROR(verifyExecutable(a, i).withContext("executable " + str(i)));

  uint32_t numInputs = a.numInputs();
  std::vector<int64_t> bufferOfInput(numInputs, -1);
  for (size_t id = 0; id < a.buffers.size(); ++id)
    KILN_RETURN_IF_ERROR(verifyBuffer(a, id, numInputs, bufferOfInput)
                             .withContext("buffer " + str(id)));

  // Each symbol is a symbolic dim of an input, whose expression is exactly
  // that symbol.
  for (size_t i = 0; i < a.symbols.size(); ++i) {
    const SymbolDesc &symbol = a.symbols[i];
    std::string what = "symbol " + str(i) + " ('" + symbol.name + "')";
    if (symbol.input >= numInputs)
      return Status::error(what + " is bound to graph input " + str(symbol.input) +
                           ", but there are " + str(numInputs) + " inputs");
    const BufferDesc &input = a.buffers[bufferOfInput[symbol.input]];
    if (symbol.dim == kSymbolValue) {
      if (input.type.dtype != DType::I64 || !input.type.shape.empty())
        return Status::error(what + " is the value of input " + str(symbol.input) + " (" +
                             input.type.str() + "), which is not a 0-d int64");
      if (symbol.min < 0 || symbol.min > symbol.max)
        return Status::error(what + " has the empty range [" + std::to_string(symbol.min) +
                             ", " + std::to_string(symbol.max) + "]");
      continue;
    }
    if (symbol.dim >= input.type.shape.size() || input.type.shape[symbol.dim] != -1)
      return Status::error(what + " is bound to dim " + str(symbol.dim) + " of input " +
                           str(symbol.input) + " (" + input.type.str() +
                           "), which is not a symbolic dim");
    size_t nth = std::count(input.type.shape.begin(), input.type.shape.begin() + symbol.dim, -1);
    if (!(input.dims[nth] == SizeExpr::symbol(i)))
      return Status::error(what + " is bound to dim " + str(symbol.dim) + " of input " +
                           str(symbol.input) + ", whose size is another expression");
    if (symbol.min < 0 || symbol.min > symbol.max)
      return Status::error(what + " has the empty range [" + std::to_string(symbol.min) +
                           ", " + std::to_string(symbol.max) + "]");
  }

  for (size_t i = 0; i < a.kernels.size(); ++i) {
    if (a.kernels[i].symbol.empty())
      return Status::error("kernel " + str(i) + " ('" + a.kernels[i].name +
                           "') has an empty symbol name");
  }
  for (size_t i = 0; i < a.launches.size(); ++i)
    KILN_RETURN_IF_ERROR(
        verifyLaunch(a, a.launches[i]).withContext("launch " + str(i)));

  uint32_t position = 0;
  for (size_t i = 0; i < a.checks.size(); ++i) {
    KILN_RETURN_IF_ERROR(
        verifyCheck(a, a.checks[i], position).withContext("check " + str(i)));
    position = a.checks[i].afterLaunches;
  }
  position = 0;
  for (size_t i = 0; i < a.collectives.size(); ++i) {
    KILN_RETURN_IF_ERROR(verifyCollective(a, a.collectives[i], position)
                             .withContext("collective " + str(i)));
    position = a.collectives[i].afterLaunches;
  }

  for (size_t i = 0; i < a.outputs.size(); ++i) {
    if (a.outputs[i] >= a.buffers.size())
      return Status::error("output " + str(i) + " refers to buffer " +
                           str(a.outputs[i]) + ", but there are only " +
                           str(a.buffers.size()) + " buffers");
    if (rootKind(a, a.outputs[i]) == BufferKind::Persistent)
      return Status::error("output " + str(i) + " is buffer " + str(a.outputs[i]) +
                           ", which lives in a Persistent buffer that later calls overwrite");
  }
  return Status::OK();
}

} // namespace kiln::runtime
