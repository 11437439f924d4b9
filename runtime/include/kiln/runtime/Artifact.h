//===- Artifact.h - The on-disk format of a compiled Kiln graph ----------===//
//
// This header is the single declaration of the artifact format: the compiler
// builds an Artifact and calls writeArtifactFile, the runtime reads it back.
//
// Encoding (little-endian):
//   header  (kArtifactHeaderSize bytes)
//     u8[8]  magic "KILNART\0"
//     u32    format version (kArtifactFormatVersion)
//     u32    flags (0)
//     u64    payload size in bytes
//     u64    FNV-1a-64 checksum of the payload
//   payload, the Artifact fields in declaration order:
//     string graphName
//     u32 n, n x symbol  { string name, u32 input, u32 dim, i64 min, i64 max }
//     u32 n, n x buffer  { u8 kind, desc, u32 source, i64 byteOffset, u32 n, n x expr }
//     u32 n, n x launch  { u32 kernel, u32 workgroups, u8 flags, u32 n, n x u32, expr }
//     u32 n, n x check   { u32 buffer, u32 afterLaunches, u8 code, string message }
//     u32 n, n x collective { u8 kind, u8 reduceOp, u32 input, u32 output,
//                             u32 afterLaunches, string group, i64 groupSize }
//     u32 n, n x u32 output buffer id
//     u32 n, n x kernel  { string symbol, u32 numBindings, u32 numSymbols, string name }
//     u32 n, n x executable { string format, string cpu, u32 n, n x string cpu feature,
//                             u32 n, n x block size { u32 x, u32 y, u32 z },
//                             u64 n, n x u8 bytes }
//     string metadata
//   where string = u32 length + bytes, desc = u8 dtype + u32 rank + rank x i64
//   (-1 for a symbolic dim), expr = u32 n + n x { u8 op, i64 value }.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_ARTIFACT_H
#define KILN_RUNTIME_ARTIFACT_H

#include "kiln/runtime/Communicator.h"
#include "kiln/runtime/DType.h"
#include "kiln/runtime/SizeExpr.h"
#include "kiln/runtime/Status.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace kiln::runtime {

/// Bump on any change to the encoding; readers reject other versions.
inline constexpr uint32_t kArtifactFormatVersion = 7;
inline constexpr char kArtifactMagic[8] = {'K', 'I', 'L', 'N',
                                           'A', 'R', 'T', '\0'};
inline constexpr size_t kArtifactHeaderSize = 32;

struct KernelInfo {
  std::string symbol;   // exported by each executable
  uint32_t numBindings; // buffer pointers in the bindings array it expects
  std::string name;     // human name for messages, e.g. "kernel_3_softmax"
  /// Size-symbol values (int64) that follow the pointers in that array: the
  /// artifact's symbol count, or 0 for a kernel of a static graph.
  uint32_t numSymbols = 0;
};

/// A size symbol of a graph compiled with symbolic shapes: its value is dim
/// `dim` of graph input `input` (or, with dim kSymbolValue, the value of that
/// input, a 0-d int64), and must lie in [min, max].
inline constexpr uint32_t kSymbolValue = UINT32_MAX;
struct SymbolDesc {
  std::string name; // as Dynamo named it, e.g. "s77"
  uint32_t input = 0;
  uint32_t dim = 0;
  int64_t min = 0;
  int64_t max = INT64_MAX;
};

/// Values are part of the format: never renumber. A Persistent buffer
/// outlives calls: the program allocates it once, cached launches (see
/// LaunchCmd::cached) write it, and every call's other launches read it.
enum class BufferKind : uint8_t { Input = 0, Alloc = 1, View = 2, Persistent = 3 };

struct BufferDesc {
  BufferKind kind;
  TensorDesc type;
  /// Input: graph input index. View: id of the aliased buffer, which must be
  /// smaller than this buffer's id. Alloc and Persistent: unused (0).
  uint32_t source = 0;
  /// View only (0 otherwise): where the view starts within its source.
  int64_t byteOffset = 0;
  /// One expression per symbolic (-1) dim of `type`, in order. For an
  /// Input, the size the input must have there.
  std::vector<SizeExpr> dims;
};

struct LaunchCmd {
  uint32_t kernel;
  /// The kernel runs once per workgroup id in [0, workgroups); 0 skips it.
  uint32_t workgroups;
  /// Buffer ids, inputs then outputs; as many as the kernel's numBindings.
  std::vector<uint32_t> bindings;
  /// When not empty, the workgroup count, computed at run time (and
  /// `workgroups` is unused).
  SizeExpr symbolicWorkgroups;
  /// A cached launch computes Persistent buffers from graph inputs alone (a
  /// weight packed into the matmul's panel layout, say). It runs only when
  /// the inputs it reads changed since it last ran: other data pointers or
  /// version counters (Program::run's `versions`), or always where the caller
  /// gives none. Its bindings are Input and Persistent buffers only.
  bool cached = false;
};

/// LaunchCmd's flags byte in the encoding.
inline constexpr uint8_t kLaunchCached = 1;

/// A run-time check (an index in range, say): once the first `afterLaunches`
/// launches have run, the one-byte bool in `buffer` must be true, or the run
/// fails with `message` and `code` (e.g. StatusCode::IndexOutOfRange).
struct CheckCmd {
  uint32_t buffer;
  uint32_t afterLaunches;
  StatusCode code;
  std::string message;
};

/// A collective (Communicator.h) of the graph's process group: once the
/// first `afterLaunches` launches (and the checks due then) have run, it
/// reads buffer `input` and writes buffer `output`, an Alloc buffer (or a
/// view of one) that nothing else writes.
struct CollectiveCmd {
  Collective collective;
  uint32_t input;
  uint32_t output;
  uint32_t afterLaunches;
};

/// Threads in one workgroup of a kernel, as codegen chose them for a GPU
/// format; CPU kernels run a workgroup on one thread (1, 1, 1).
struct BlockSize {
  uint32_t x = 1, y = 1, z = 1;
  bool operator==(const BlockSize &o) const { return x == o.x && y == o.y && z == o.z; }
};

/// The graph's kernels compiled for one executable format: what a device
/// whose Device::executableFormat() is `format` loads (Program::load picks
/// it). Every executable exports every kernel of Artifact::kernels.
struct ExecutableDesc {
  /// "cpu-x86_64", "cpu-aarch64"; later e.g. "vulkan-spirv", "cuda-sm_90".
  std::string format;
  /// CPU formats: the CPU the kernels were compiled for (LLVM's name, e.g.
  /// "znver4") and the features they may use (LLVM's spelling, e.g.
  /// "avx512f"): a host that lacks one must not run them (the CPU device
  /// checks at load). Empty for other formats.
  std::string cpu;
  std::vector<std::string> cpuFeatures;
  /// One per kernel (in Artifact::kernels order), or empty for 1x1x1 each.
  std::vector<BlockSize> blockSizes;
  /// The format's binary: for the CPU, the kernels' shared object (ELF .so).
  std::vector<uint8_t> bytes;
};

struct Artifact {
  std::string graphName;
  std::vector<SymbolDesc> symbols; // empty for a graph with static shapes
  std::vector<BufferDesc> buffers;
  std::vector<LaunchCmd> launches; // executed in order
  std::vector<CheckCmd> checks;    // sorted by afterLaunches
  /// Sorted by afterLaunches; at one position, in plan order, after the
  /// checks due there.
  std::vector<CollectiveCmd> collectives;
  std::vector<uint32_t> outputs;   // buffer ids
  std::vector<KernelInfo> kernels;
  /// At least one, with distinct formats.
  std::vector<ExecutableDesc> executables;
  std::string metadata; // free text (JSON) for tools; the runtime ignores it

  /// Number of Input buffers, i.e. of graph inputs.
  uint32_t numInputs() const;
  /// The executable of `format`, or null.
  const ExecutableDesc *executableFor(const std::string &format) const;
  /// The formats of the executables, quoted and comma-separated, for
  /// messages: "'cpu-x86_64', 'cuda-sm_90'".
  std::string formatList() const;
};

/// A buffer's desc with its symbolic (-1) dims evaluated for these symbol
/// values (the desc itself for a static buffer).
StatusOr<TensorDesc> resolveBufferDesc(const BufferDesc &buffer,
                                       const std::vector<int64_t> &symbols);

/// FNV-1a-64, the payload checksum stored in the header.
uint64_t artifactChecksum(const uint8_t *data, size_t size);

/// Encodes `artifact`; it should satisfy verifyArtifact (writeArtifactFile
/// checks that, this function does not).
std::vector<uint8_t> serializeArtifact(const Artifact &artifact);

/// Decodes and verifies an artifact. Any byte string is safe to pass: bad
/// input yields an error naming the problem and its byte offset.
Status parseArtifact(const uint8_t *data, size_t size, Artifact &out);

Status readArtifactFile(const std::string &path, Artifact &out);

/// Verifies, then writes to a temporary file beside `path` and renames it, so
/// readers never see a partially written artifact.
Status writeArtifactFile(const std::string &path, const Artifact &artifact);

/// Semantic checks that the runtime relies on: ids in range, views alias
/// earlier buffers and fit inside them, binding counts match the kernels,
/// graph input indices are exactly 0..n-1, kernels have symbols, every
/// executable has a distinct format and (with kernels) bytes, etc.
Status verifyArtifact(const Artifact &artifact);

} // namespace kiln::runtime

#endif // KILN_RUNTIME_ARTIFACT_H
