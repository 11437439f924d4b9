//===- Program.h - Running a loaded artifact on a device ------------------===//

#ifndef KILN_RUNTIME_PROGRAM_H
#define KILN_RUNTIME_PROGRAM_H

#include "kiln/runtime/Allocator.h"
#include "kiln/runtime/Artifact.h"
#include "kiln/runtime/Communicator.h"
#include "kiln/runtime/Device.h"
#include "kiln/runtime/Executable.h"
#include "kiln/runtime/MemoryPlan.h"
#include "kiln/runtime/Status.h"

#include <atomic>
#include <functional>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <vector>

namespace kiln::runtime {

/// Where a graph output lives after Program::run. Exactly one of `buffer` and
/// `input` is >= 0; byteOffset is from the start of that root buffer, with
/// chains of views already followed.
struct OutputRef {
  int64_t buffer = -1; // index into run()'s `allocated`, or -1
  int64_t input = -1;  // graph input index when the output aliases an input
  int64_t byteOffset = 0;
  TensorDesc type;
};

/// What the caller knows of each graph input's contents, for the cached
/// launches (LaunchCmd::cached): a counter that changes whenever the input's
/// bytes do (PyTorch's tensor version counter), or kUntracked. What
/// `keepAlive` returns holds the inputs' memory while a cached result made
/// from them is kept, so that no other tensor can take their address and
/// pass for them; it is called only by a call that runs the cached launches.
struct InputVersions {
  static constexpr uint64_t kUntracked = UINT64_MAX;
  std::vector<uint64_t> values; // by graph input index
  std::function<std::shared_ptr<const void>()> keepAlive;
};

/// A loaded artifact, ready to run many times on one device. run() is const
/// and may be called from several threads at once; launches of concurrent
/// runs are interleaved on the device.
///
/// Pointers given to and returned from run() (inputs, the allocator's
/// buffers) are device addresses: host pointers on the CPU device.
class Program {
public:
  /// Loads the artifact's executable of the device's format. The program
  /// keeps a reference to `device`, which must outlive it.
  static StatusOr<std::unique_ptr<Program>> load(Artifact artifact, Device &device);

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
  ///
  /// Cached launches run on the first call and again only when an input they
  /// read has another data pointer or version than when they last ran; with
  /// no `versions` (or an input kUntracked) they run on every call. A call
  /// that runs them excludes concurrent calls; the others share.
  ///
  /// With `wait` (the default) run() returns once the device has finished
  /// the launches, and a kernel's fault is its error. Without, it may return
  /// while they are queued (on a GPU), as an eager op does: the outputs are
  /// complete for any later work on the device, and for the host after
  /// Device::synchronize() or a copy to the host, which report a fault.
  ///
  /// A graph with collectives (artifact().collectives) runs them through
  /// `communicator`, between the launches, in plan order; without one such
  /// a graph fails naming its first collective. Each collective is started
  /// at its place and waited for before the first launch (or collective)
  /// that uses its input's or output's memory, so the launches between run
  /// while it is in flight. Calls of such a graph run one at a time, so
  /// every rank issues its collectives in the same order.
  Status run(const std::vector<void *> &inputs,
             const std::vector<TensorDesc> &inputDescs, Allocator &allocator,
             std::vector<std::shared_ptr<Buffer>> &allocated,
             std::vector<OutputRef> &outputs,
             std::vector<double> *launchMs = nullptr,
             const InputVersions *versions = nullptr, bool wait = true,
             Communicator *communicator = nullptr) const;

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
  /// Bytes of the Persistent buffers (packed weights), held for the
  /// program's life.
  int64_t persistentBytes() const { return persistent_.bytes; }
  /// How many times the cached launches have run (each time, all of them).
  int64_t cachedRuns() const;
  /// The graph inputs the cached launches read, whose versions run() compares.
  const std::vector<uint32_t> &cachedReads() const { return cachedReads_; }
  /// Launches that run while a collective is in flight, summed over the
  /// collectives (0: every collective is waited for at once).
  int64_t launchesOverlappingCollectives() const;

private:
  /// The Input or Alloc buffer a buffer's bytes belong to.
  struct Root {
    BufferKind kind;    // Input, Alloc or Persistent
    uint32_t index;     // graph input index, Alloc or Persistent slot
    int64_t byteOffset; // summed over the chain of views
  };

  Program(Artifact artifact, Device &device, std::unique_ptr<Executable> executable);
  Status plan();
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
    std::vector<uint64_t> bytes;        // by buffer id: types' byte sizes
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
  Status runImpl(bool wait, const std::vector<void *> &inputs,
                 const std::vector<int64_t> &symbols, Allocator &allocator,
                 std::vector<std::shared_ptr<Buffer>> &allocated,
                 std::vector<OutputRef> &outputs,
                 std::vector<double> *launchMs, bool runCached,
                 Communicator *communicator) const;
  /// Starts one collective on host memory: the buffers themselves where the
  /// device is host-addressable, else host copies (made once the launches
  /// before it finished, and uploaded when it is waited for).
  StatusOr<std::unique_ptr<PendingCollective>>
  startCollective(const CollectiveCmd &command, Communicator *communicator, void *input,
                  const TensorDesc &inputType, void *output,
                  const TensorDesc &outputType) const;
  /// Where a started collective must be complete: before launch `launch`,
  /// and before collective `collective` starts (the first of each that uses
  /// its input's or output's memory; the counts where none does).
  struct CollectiveWait {
    size_t launch;
    size_t collective;
    size_t launchesBefore = 0; // the earlier of the two, in launches
  };
  bool sharesMemory(uint32_t a, uint32_t b) const;
  /// The identity of the inputs the cached launches read, as run() compares
  /// it; empty if any is untracked.
  struct CachedInputs {
    std::vector<void *> pointers;
    std::vector<uint64_t> versions;
    std::shared_ptr<const void> keepAlive;
    bool operator==(const CachedInputs &o) const {
      return pointers == o.pointers && versions == o.versions;
    }
  };
  std::optional<CachedInputs> cachedInputsOf(const std::vector<void *> &inputs,
                                             const InputVersions *versions) const;

  Artifact artifact_;
  Device &device_;
  std::unique_ptr<Executable> executable_;
  std::vector<Root> roots_;             // by buffer id
  std::vector<uint32_t> allocBuffers_;  // buffer id of each Alloc slot
  /// By Alloc slot: its index in run()'s `allocated` when an output lives in
  /// it, else -1 (an intermediate, in the arena).
  std::vector<int64_t> allocatedIndex_;
  std::vector<Lifetime> lifetimes_;     // by Alloc slot, over steps (plan())
  std::vector<CollectiveWait> collectiveWaits_; // by collective
  MemoryPlan staticMemory_;             // a static graph's arena offsets
  std::vector<uint64_t> staticBytes_;   // a static graph's buffer sizes, by id
  mutable ArenaPool arenas_;
  size_t maxBindings_ = 0;               // the most bindings of one launch
  std::vector<TensorDesc> inputDescs_;  // by graph input index
  std::vector<uint32_t> inputBuffers_;  // buffer id of each graph input
  mutable std::mutex lastResolvedMutex_; // run() is const and may run concurrently
  mutable std::shared_ptr<const Resolved> lastResolved_;
  /// The Persistent buffers: one block, allocated at load, offsets by slot.
  MemoryPlan persistent_;
  DeviceBuffer persistentMemory_;
  /// The address of empty intermediates when a call has no arena.
  DeviceBuffer emptyMemory_;
  bool hasCached_ = false;
  std::vector<uint32_t> cachedReads_; // graph inputs the cached launches read
  /// Held shared by calls that reuse the cached results, exclusively by one
  /// that runs the cached launches.
  mutable std::mutex collectiveMutex_; // calls of a graph with collectives
  mutable std::shared_mutex cacheMutex_;
  mutable std::optional<CachedInputs> cachedFrom_; // inputs of the last refresh
  mutable std::atomic<int64_t> cachedRuns_{0};
};

} // namespace kiln::runtime

#endif // KILN_RUNTIME_PROGRAM_H
