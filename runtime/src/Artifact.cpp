//===- Artifact.cpp - Encoding, decoding and files for artifacts ---------===//

#include "kiln/runtime/Artifact.h"

#include "ByteIO.h"
#include "FileUtil.h"

#include <algorithm>
#include <cstring>

namespace kiln::runtime {

// Smallest encodings of repeated records, used to reject element counts that
// cannot possibly fit in the bytes that remain.
static constexpr size_t kMinBufferBytes = 1 + 1 + 4 + 4 + 8 + 4;
static constexpr size_t kMinLaunchBytes = 4 + 4 + 1 + 4 + 4;
static constexpr size_t kMinKernelBytes = 4 + 4 + 4 + 4;
static constexpr size_t kMinSymbolBytes = 4 + 4 + 4 + 8 + 8;
static constexpr size_t kTermBytes = 1 + 8;
static constexpr size_t kMinCheckBytes = 4 + 4 + 1 + 4;
static constexpr size_t kMinCollectiveBytes = 1 + 1 + 4 + 4 + 4 + 4 + 8;
static constexpr size_t kMinExecutableBytes = 4 + 4 + 4 + 4 + 8;
static constexpr size_t kBlockSizeBytes = 4 + 4 + 4;

uint32_t Artifact::numInputs() const {
  uint32_t count = 0;
  for (const BufferDesc &buffer : buffers)
    count += buffer.kind == BufferKind::Input;
  return count;
}

const ExecutableDesc *Artifact::executableFor(const std::string &format) const {
  for (const ExecutableDesc &executable : executables)
    if (executable.format == format)
      return &executable;
  return nullptr;
}

std::string Artifact::formatList() const {
  std::string list;
  for (const ExecutableDesc &executable : executables)
    list += (list.empty() ? "'" : ", '") + executable.format + "'";
  return list;
}

StatusOr<TensorDesc> resolveBufferDesc(const BufferDesc &buffer,
                                       const std::vector<int64_t> &symbols) {
  TensorDesc desc = buffer.type;
  size_t nth = 0;
  for (int64_t &dim : desc.shape) {
    if (dim != -1)
      continue;
    if (nth >= buffer.dims.size())
      return Status::error("a symbolic dim without its expression");
    StatusOr<int64_t> value = evaluateSizeExpr(buffer.dims[nth++], symbols);
    if (!value.ok())
      return value.status();
    dim = *value;
  }
  return desc;
}

uint64_t artifactChecksum(const uint8_t *data, size_t size) {
  uint64_t hash = 14695981039346656037ull;
  for (size_t i = 0; i < size; ++i) {
    hash ^= data[i];
    hash *= 1099511628211ull;
  }
  return hash;
}

//===----------------------------------------------------------------------===//
// Encoding
//===----------------------------------------------------------------------===//

static void writeDesc(ByteWriter &w, const TensorDesc &desc) {
  w.u8(static_cast<uint8_t>(desc.dtype));
  w.u32(static_cast<uint32_t>(desc.shape.size()));
  for (int64_t dim : desc.shape)
    w.i64(dim);
}

static void writeExpr(ByteWriter &w, const SizeExpr &expr) {
  w.u32(static_cast<uint32_t>(expr.terms.size()));
  for (const SizeExpr::Term &term : expr.terms) {
    w.u8(static_cast<uint8_t>(term.op));
    w.i64(term.value);
  }
}

static std::vector<uint8_t> serializePayload(const Artifact &a) {
  ByteWriter w;
  w.string(a.graphName);
  w.u32(static_cast<uint32_t>(a.symbols.size()));
  for (const SymbolDesc &symbol : a.symbols) {
    w.string(symbol.name);
    w.u32(symbol.input);
    w.u32(symbol.dim);
    w.i64(symbol.min);
    w.i64(symbol.max);
  }
  w.u32(static_cast<uint32_t>(a.buffers.size()));
  for (const BufferDesc &buffer : a.buffers) {
    w.u8(static_cast<uint8_t>(buffer.kind));
    writeDesc(w, buffer.type);
    w.u32(buffer.source);
    w.i64(buffer.byteOffset);
    w.u32(static_cast<uint32_t>(buffer.dims.size()));
    for (const SizeExpr &dim : buffer.dims)
      writeExpr(w, dim);
  }
  w.u32(static_cast<uint32_t>(a.launches.size()));
  for (const LaunchCmd &launch : a.launches) {
    w.u32(launch.kernel);
    w.u32(launch.workgroups);
    w.u8(launch.cached ? kLaunchCached : 0);
    w.u32(static_cast<uint32_t>(launch.bindings.size()));
    for (uint32_t binding : launch.bindings)
      w.u32(binding);
    writeExpr(w, launch.symbolicWorkgroups);
  }
  w.u32(static_cast<uint32_t>(a.checks.size()));
  for (const CheckCmd &check : a.checks) {
    w.u32(check.buffer);
    w.u32(check.afterLaunches);
    w.u8(static_cast<uint8_t>(check.code));
    w.string(check.message);
  }
  w.u32(static_cast<uint32_t>(a.collectives.size()));
  for (const CollectiveCmd &command : a.collectives) {
    w.u8(static_cast<uint8_t>(command.collective.kind));
    w.u8(static_cast<uint8_t>(command.collective.reduceOp));
    w.u32(command.input);
    w.u32(command.output);
    w.u32(command.afterLaunches);
    w.string(command.collective.group);
    w.i64(command.collective.groupSize);
  }
  w.u32(static_cast<uint32_t>(a.outputs.size()));
  for (uint32_t output : a.outputs)
    w.u32(output);
  w.u32(static_cast<uint32_t>(a.kernels.size()));
  for (const KernelInfo &kernel : a.kernels) {
    w.string(kernel.symbol);
    w.u32(kernel.numBindings);
    w.u32(kernel.numSymbols);
    w.string(kernel.name);
  }
  w.u32(static_cast<uint32_t>(a.executables.size()));
  for (const ExecutableDesc &executable : a.executables) {
    w.string(executable.format);
    w.string(executable.cpu);
    w.u32(static_cast<uint32_t>(executable.cpuFeatures.size()));
    for (const std::string &feature : executable.cpuFeatures)
      w.string(feature);
    w.u32(static_cast<uint32_t>(executable.blockSizes.size()));
    for (const BlockSize &block : executable.blockSizes) {
      w.u32(block.x);
      w.u32(block.y);
      w.u32(block.z);
    }
    w.blob(executable.bytes);
  }
  w.string(a.metadata);
  return std::move(w.bytes());
}

std::vector<uint8_t> serializeArtifact(const Artifact &artifact) {
  std::vector<uint8_t> payload = serializePayload(artifact);
  ByteWriter w;
  w.bytes().reserve(kArtifactHeaderSize + payload.size());
  w.raw(kArtifactMagic, sizeof(kArtifactMagic));
  w.u32(kArtifactFormatVersion);
  w.u32(/*flags=*/0);
  w.u64(payload.size());
  w.u64(artifactChecksum(payload.data(), payload.size()));
  w.raw(payload.data(), payload.size());
  return std::move(w.bytes());
}

//===----------------------------------------------------------------------===//
// Decoding
//===----------------------------------------------------------------------===//

/// Validates the header and returns the payload bounds through `payloadSize`.
static Status parseHeader(const uint8_t *data, size_t size,
                          uint64_t &payloadSize) {
  size_t magicBytes = std::min(size, sizeof(kArtifactMagic));
  if (magicBytes && std::memcmp(data, kArtifactMagic, magicBytes) != 0)
    return Status::error("not a Kiln artifact (bad magic bytes at byte "
                         "offset 0)");
  if (size < kArtifactHeaderSize)
    return Status::error("artifact truncated: " + std::to_string(size) +
                         " bytes is shorter than the " +
                         std::to_string(kArtifactHeaderSize) +
                         "-byte header");

  ByteReader r(data, kArtifactHeaderSize);
  r.u64("magic");
  uint32_t version = r.u32("format version");
  uint32_t flags = r.u32("flags");
  payloadSize = r.u64("payload size");
  uint64_t checksum = r.u64("checksum");
  if (version != kArtifactFormatVersion)
    return Status::error("artifact format version " + std::to_string(version) +
                         ", this runtime reads version " +
                         std::to_string(kArtifactFormatVersion) +
                         "; recompile");
  if (flags != 0)
    return Status::error("unsupported artifact flags " +
                         std::to_string(flags) + " at byte offset 12");

  uint64_t available = size - kArtifactHeaderSize;
  if (payloadSize > available)
    return Status::error("artifact truncated: the header at byte offset 16 "
                         "announces a " +
                         std::to_string(payloadSize) + "-byte payload but only " +
                         std::to_string(available) + " bytes follow");
  if (payloadSize < available)
    return Status::error(std::to_string(available - payloadSize) +
                         " bytes of trailing garbage after the payload at "
                         "byte offset " +
                         std::to_string(kArtifactHeaderSize + payloadSize));
  uint64_t actual = artifactChecksum(data + kArtifactHeaderSize, payloadSize);
  if (actual != checksum)
    return Status::error("artifact corrupted: payload checksum mismatch (the "
                         "header at byte offset 24 says " +
                         std::to_string(checksum) + ", the payload hashes to " +
                         std::to_string(actual) + ")");
  return Status::OK();
}

static TensorDesc readDesc(ByteReader &r) {
  TensorDesc desc;
  size_t at = r.offset();
  uint8_t dtype = r.u8("dtype");
  if (r.ok() && !isKnownDType(dtype))
    r.fail(at, "unknown dtype " + std::to_string(dtype));
  desc.dtype = static_cast<DType>(dtype);
  uint32_t rank = r.count("tensor rank", sizeof(int64_t));
  desc.shape.reserve(rank);
  for (uint32_t i = 0; i < rank && r.ok(); ++i)
    desc.shape.push_back(r.i64("dimension"));
  return desc;
}

static SizeExpr readExpr(ByteReader &r) {
  SizeExpr expr;
  uint32_t count = r.count("size expression length", kTermBytes);
  expr.terms.reserve(count);
  for (uint32_t i = 0; i < count && r.ok(); ++i) {
    SizeExpr::Term term;
    term.op = static_cast<SizeExpr::Op>(r.u8("size expression operator"));
    term.value = r.i64("size expression value");
    expr.terms.push_back(term);
  }
  return expr;
}

static SymbolDesc readSymbol(ByteReader &r) {
  SymbolDesc symbol;
  symbol.name = r.string("symbol name");
  symbol.input = r.u32("symbol input");
  symbol.dim = r.u32("symbol dim");
  symbol.min = r.i64("symbol minimum");
  symbol.max = r.i64("symbol maximum");
  return symbol;
}

/// A one-byte enum whose values run from 0 to `last`; any other is an
/// error naming `what` ("buffer kind").
static uint8_t readEnum(ByteReader &r, const std::string &what, uint8_t last) {
  size_t at = r.offset();
  uint8_t value = r.u8(what.c_str());
  if (r.ok() && value > last)
    r.fail(at, "unknown " + what + " " + std::to_string(value));
  return value;
}

static BufferDesc readBuffer(ByteReader &r) {
  BufferDesc buffer;
  buffer.kind = static_cast<BufferKind>(
      readEnum(r, "buffer kind", static_cast<uint8_t>(BufferKind::Persistent)));
  buffer.type = readDesc(r);
  buffer.source = r.u32("buffer source");
  buffer.byteOffset = r.i64("buffer byte offset");
  uint32_t count = r.count("buffer dim expression count", 4);
  for (uint32_t i = 0; i < count && r.ok(); ++i)
    buffer.dims.push_back(readExpr(r));
  return buffer;
}

static LaunchCmd readLaunch(ByteReader &r) {
  LaunchCmd launch;
  launch.kernel = r.u32("launch kernel");
  launch.workgroups = r.u32("launch workgroups");
  size_t at = r.offset();
  uint8_t flags = r.u8("launch flags");
  if (r.ok() && (flags & ~kLaunchCached))
    r.fail(at, "unknown launch flags " + std::to_string(flags));
  launch.cached = flags & kLaunchCached;
  uint32_t count = r.count("launch binding count", sizeof(uint32_t));
  launch.bindings.reserve(count);
  for (uint32_t i = 0; i < count && r.ok(); ++i)
    launch.bindings.push_back(r.u32("launch binding"));
  launch.symbolicWorkgroups = readExpr(r);
  return launch;
}

static CheckCmd readCheck(ByteReader &r) {
  CheckCmd check;
  check.buffer = r.u32("check buffer");
  check.afterLaunches = r.u32("check position");
  check.code = static_cast<StatusCode>(r.u8("check code"));
  check.message = r.string("check message");
  return check;
}

static KernelInfo readKernel(ByteReader &r) {
  KernelInfo kernel;
  kernel.symbol = r.string("kernel symbol");
  kernel.numBindings = r.u32("kernel binding count");
  kernel.numSymbols = r.u32("kernel symbol count");
  kernel.name = r.string("kernel name");
  return kernel;
}

static ExecutableDesc readExecutable(ByteReader &r) {
  ExecutableDesc executable;
  executable.format = r.string("executable format");
  executable.cpu = r.string("cpu");
  uint32_t count = r.count("cpu feature count", sizeof(uint32_t));
  executable.cpuFeatures.reserve(count);
  for (uint32_t i = 0; i < count && r.ok(); ++i)
    executable.cpuFeatures.push_back(r.string("cpu feature"));
  count = r.count("block size count", kBlockSizeBytes);
  executable.blockSizes.reserve(count);
  for (uint32_t i = 0; i < count && r.ok(); ++i) {
    BlockSize block;
    block.x = r.u32("block size x");
    block.y = r.u32("block size y");
    block.z = r.u32("block size z");
    executable.blockSizes.push_back(block);
  }
  executable.bytes = r.blob("executable bytes");
  return executable;
}

static CollectiveCmd readCollective(ByteReader &r) {
  CollectiveCmd command;
  command.collective.kind = static_cast<CollectiveKind>(
      readEnum(r, "collective kind", static_cast<uint8_t>(CollectiveKind::AllToAll)));
  command.collective.reduceOp = static_cast<ReduceOp>(
      readEnum(r, "collective reduction", static_cast<uint8_t>(ReduceOp::Max)));
  command.input = r.u32("collective input");
  command.output = r.u32("collective output");
  command.afterLaunches = r.u32("collective position");
  command.collective.group = r.string("collective group");
  command.collective.groupSize = r.i64("collective group size");
  return command;
}

static Status parsePayload(const uint8_t *data, size_t size, Artifact &a) {
  ByteReader r(data, size, kArtifactHeaderSize);
  a.graphName = r.string("graph name");

  uint32_t count = r.count("symbol count", kMinSymbolBytes);
  a.symbols.reserve(count);
  for (uint32_t i = 0; i < count && r.ok(); ++i)
    a.symbols.push_back(readSymbol(r));

  count = r.count("buffer count", kMinBufferBytes);
  a.buffers.reserve(count);
  for (uint32_t i = 0; i < count && r.ok(); ++i)
    a.buffers.push_back(readBuffer(r));

  count = r.count("launch count", kMinLaunchBytes);
  a.launches.reserve(count);
  for (uint32_t i = 0; i < count && r.ok(); ++i)
    a.launches.push_back(readLaunch(r));

  count = r.count("check count", kMinCheckBytes);
  a.checks.reserve(count);
  for (uint32_t i = 0; i < count && r.ok(); ++i)
    a.checks.push_back(readCheck(r));

  count = r.count("collective count", kMinCollectiveBytes);
  a.collectives.reserve(count);
  for (uint32_t i = 0; i < count && r.ok(); ++i)
    a.collectives.push_back(readCollective(r));

  count = r.count("output count", sizeof(uint32_t));
  a.outputs.reserve(count);
  for (uint32_t i = 0; i < count && r.ok(); ++i)
    a.outputs.push_back(r.u32("output buffer id"));

  count = r.count("kernel count", kMinKernelBytes);
  a.kernels.reserve(count);
  for (uint32_t i = 0; i < count && r.ok(); ++i)
    a.kernels.push_back(readKernel(r));

  count = r.count("executable count", kMinExecutableBytes);
  a.executables.reserve(count);
  for (uint32_t i = 0; i < count && r.ok(); ++i)
    a.executables.push_back(readExecutable(r));

  a.metadata = r.string("metadata");

  if (!r.ok())
    return r.status();
  if (r.remaining() != 0)
    return Status::error(std::to_string(r.remaining()) +
                         " unexpected bytes after the last field at byte "
                         "offset " +
                         std::to_string(r.offset()));
  return Status::OK();
}

Status parseArtifact(const uint8_t *data, size_t size, Artifact &out) {
  if (!data && size != 0)
    return Status::error("parseArtifact: null data");
  uint64_t payloadSize = 0;
  KILN_RETURN_IF_ERROR(parseHeader(data, size, payloadSize));
  // Decode into a fresh value so `out` never holds a half-parsed artifact.
  Artifact artifact;
  KILN_RETURN_IF_ERROR(parsePayload(data + kArtifactHeaderSize,
                                    static_cast<size_t>(payloadSize),
                                    artifact));
  KILN_RETURN_IF_ERROR(
      verifyArtifact(artifact).withContext("invalid artifact"));
  out = std::move(artifact);
  return Status::OK();
}

//===----------------------------------------------------------------------===//
// Files
//===----------------------------------------------------------------------===//

Status readArtifactFile(const std::string &path, Artifact &out) {
  std::vector<uint8_t> bytes;
  std::string context = "artifact '" + path + "'";
  KILN_RETURN_IF_ERROR(readFileBytes(path, bytes).withContext(context));
  return parseArtifact(bytes.data(), bytes.size(), out).withContext(context);
}

Status writeArtifactFile(const std::string &path, const Artifact &artifact) {
  std::string context = "writing artifact '" + path + "'";
  KILN_RETURN_IF_ERROR(verifyArtifact(artifact).withContext(
      context + ": refusing to write an invalid artifact"));
  return writeFileAtomically(path, serializeArtifact(artifact))
      .withContext(context);
}

} // namespace kiln::runtime
