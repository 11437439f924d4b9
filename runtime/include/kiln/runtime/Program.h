//===- Program.h - Running a loaded artifact on the CPU -------------------===//

#ifndef KILN_RUNTIME_PROGRAM_H
#define KILN_RUNTIME_PROGRAM_H

#include "kiln/runtime/Allocator.h"
#include "kiln/runtime/Artifact.h"
#include "kiln/runtime/Executable.h"
#include "kiln/runtime/MemoryPlan.h"
#include "kiln/runtime/Status.h"
#include "kiln/runtime/ThreadPool.h"

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace kiln::runtime {

/// The host CPU as a device: the threads that run workgroups. Programs keep a
/// reference to it, so it must outlive them.
class CpuDevice {
public:
  explicit CpuDevice(int numThreads = defaultThreadCount())
      : pool_(numThreads) {}
  ThreadPool &pool() { return pool_; }

private:
  ThreadPool pool_;
};

/// Where a graph output lives after Program::run. Exactly one of `buffer` and
/// `input` is >= 0; byteOffset is from the start of that root buffer, with
/// chains of views already followed.
struct OutputRef {
  int64_t buffer = -1; // index into run()'s `allocated`, or -1
  int64_t input = -1;  // graph input index when the output aliases an input
  int64_t byteOffset = 0;
  TensorDesc type;
};

/// A loaded artifact, ready to run many times. run() is const and may be
/// called from several threads at once; launches of concurrent runs are
/// interleaved on the device's pool.
class Program {
public:
  static StatusOr<std::unique_ptr<Program>> load(Artifact artifact,
                                                 CpuDevice &device);

  const Artifact &artifact() const { return artifact_; }
  /// Expected descs of the graph inputs, by input index; -1 marks a
  /// symbolic dim (see artifact().symbols).
  const std::vector<TensorDesc> &inputDescs() const { return inputDescs_; }
  /// The size symbols' names (empty for a static graph).
  std::vector<std::string> symbolNames() const;

  /// Most workgroups a launch with a computed count gets.
  static constexpr int64_t kMaxWorkgroups = 1 << 16;

  /// Runs the graph once. `inputs[i]` points at graph input i, whose desc must
  /// equal inputDescs()[i] exactly, except at symbolic dims: there the size
  /// binds the dim's symbol or must equal its expression. The Alloc buffers
  /// that outputs live in come from `allocator`, in buffer order, into
  /// `allocated`; `outputs` says where each output is. The other Alloc
  /// buffers (intermediates) share an arena by liveness (MemoryPlan.h),
  /// reused by later calls.
  /// Both vectors are replaced, and left empty on error. With `launchMs`,
  /// the wall time of each launch (in artifact().launches order, 0 for a
  /// skipped launch) is stored there, for profiling.
  Status run(const std::vector<void *> &inputs,
             const std::vector<TensorDesc> &inputDescs, Allocator &allocator,
             std::vector<std::shared_ptr<Buffer>> &allocated,
             std::vector<OutputRef> &outputs,
             std::vector<double> *launchMs = nullptr) const;

  /// What a call with these inputs (as for run()) takes besides its inputs,
  /// in bytes.
  struct Footprint {
    int64_t arena = 0;         // the intermediates' arena
    int64_t intermediates = 0; // their sizes summed: the arena without sharing
    int64_t outputs = 0;       // buffers allocated for outputs
  };
  StatusOr<Footprint> footprint(const std::vector<void *> &inputs,
                                const std::vector<TensorDesc> &inputDescs) const;
  /// Arenas allocated so far: the most calls that ran at once.
  size_t arenasAllocated() const { return arenas_.arenasAllocated(); }
  /// Bytes of those arenas, held between calls.
  size_t arenaBytes() const { return arenas_.bytesHeld(); }

private:
  /// The Input or Alloc buffer a buffer's bytes belong to.
  struct Root {
    BufferKind kind;    // Input or Alloc
    uint32_t index;     // graph input index or Alloc slot
    int64_t byteOffset; // summed over the chain of views
  };

  Program(Artifact artifact, CpuDevice &device,
          std::unique_ptr<CpuExecutable> executable);
  void plan();
  Status checkInputs(const std::vector<void *> &inputs,
                     const std::vector<TensorDesc> &inputDescs,
                     std::vector<int64_t> &symbols) const;
  Status bindSymbols(const std::vector<void *> &inputs,
                     const std::vector<TensorDesc> &inputDescs,
                     std::vector<int64_t> &symbols) const;
  /// A symbolic graph's sizes for one set of symbol values: every buffer's
  /// shape and every launch's workgroup count.
  struct Resolved {
    std::vector<int64_t> symbols;
    std::vector<TensorDesc> types;      // by buffer id
    std::vector<int64_t> workgroups;    // by launch
    MemoryPlan memory;                  // by Alloc slot
  };
  /// The arena offsets for these buffer types (by buffer id).
  MemoryPlan planArena(const std::vector<TensorDesc> &types) const;
  Status resolve(const std::vector<int64_t> &symbols, Resolved &resolved) const;
  /// The sizes for `symbols`: those of the last call when its symbols were
  /// the same (the usual case: resolving costs per buffer and launch); null
  /// for a static graph, whose sizes are the artifact's.
  StatusOr<std::shared_ptr<const Resolved>> resolvedFor(const std::vector<int64_t> &symbols) const;
  Status runImpl(const std::vector<void *> &inputs,
                 const std::vector<int64_t> &symbols, Allocator &allocator,
                 std::vector<std::shared_ptr<Buffer>> &allocated,
                 std::vector<OutputRef> &outputs,
                 std::vector<double> *launchMs) const;

  Artifact artifact_;
  CpuDevice &device_;
  std::unique_ptr<CpuExecutable> executable_;
  std::vector<Root> roots_;             // by buffer id
  std::vector<uint32_t> allocBuffers_;  // buffer id of each Alloc slot
  /// By Alloc slot: its index in run()'s `allocated` when an output lives in
  /// it, else -1 (an intermediate, in the arena).
  std::vector<int64_t> allocatedIndex_;
  std::vector<Lifetime> lifetimes_;     // by Alloc slot, over launch indices
  MemoryPlan staticMemory_;             // a static graph's arena offsets
  mutable ArenaPool arenas_;
  std::vector<TensorDesc> inputDescs_;  // by graph input index
  std::vector<uint32_t> inputBuffers_;  // buffer id of each graph input
  mutable std::mutex lastResolvedMutex_; // run() is const and may run concurrently
  mutable std::shared_ptr<const Resolved> lastResolved_;
};

} // namespace kiln::runtime

#endif // KILN_RUNTIME_PROGRAM_H
