//===- Communicator.h - Collectives a compiled graph calls ----------------===//
//
// A graph compiled from a distributed program (tensor parallelism: DTensor's
// `_c10d_functional` collectives) keeps its collectives in the plan: the
// runtime starts them between launches, in plan order, through the
// Communicator the caller passes to Program::run, and waits for each one
// before the first launch that uses its buffers, so the launches between
// run while it is in flight. The runtime names the
// process group and the operation; the communicator (the Python bridge's,
// over torch's process groups) moves the bytes. It sees host memory only:
// on a device whose memory the host cannot address, the runtime stages the
// operands through host copies.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_COMMUNICATOR_H
#define KILN_RUNTIME_COMMUNICATOR_H

#include "kiln/runtime/DType.h"
#include "kiln/runtime/Status.h"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace kiln::runtime {

/// Values are part of the artifact format: never renumber.
enum class CollectiveKind : uint8_t {
  AllReduce = 0,     // output = reduce(input over the ranks), same shape
  AllGather = 1,     // output = the ranks' inputs concatenated along dim 0
  ReduceScatter = 2, // output = this rank's dim-0 slice of reduce(input)
  AllToAll = 3,      // rank r's slice j of dim 0 goes to rank j's slice r
};

/// Values are part of the artifact format: never renumber.
enum class ReduceOp : uint8_t { Sum = 0, Avg = 1, Product = 2, Min = 3, Max = 4 };

/// "all_reduce", "sum": the names torch's functional collectives use.
std::string_view collectiveKindName(CollectiveKind kind);
std::string_view reduceOpName(ReduceOp op);

/// One collective of a plan, as the communicator receives it.
struct Collective {
  CollectiveKind kind;
  ReduceOp reduceOp; // AllReduce and ReduceScatter only
  std::string group; // the process group's name (torch's group_name)
  int64_t groupSize; // its ranks, as the graph was compiled for (0: not
                     // known, for an all_reduce or an all_to_all)
};

/// A collective in flight.
class PendingCollective {
public:
  virtual ~PendingCollective();
  /// Returns once the output is complete (and the input no longer read).
  /// Errors (a peer gone, a timeout) are statuses. Called once.
  virtual Status wait() = 0;
};

class Communicator {
public:
  virtual ~Communicator();
  /// Starts `collective` of this rank: it reads `input` (host memory,
  /// dense, of `inputType`) and fills `output` (of `outputType`). Until the
  /// returned collective's wait() returns, the caller neither writes the
  /// input nor touches the output, and waits before freeing either.
  /// A communicator without asynchronous collectives may finish the work
  /// here and return a pending collective with nothing left to do.
  virtual StatusOr<std::unique_ptr<PendingCollective>>
  start(const Collective &collective, const void *input, const TensorDesc &inputType,
        void *output, const TensorDesc &outputType) = 0;

  /// start, then wait.
  Status run(const Collective &collective, const void *input, const TensorDesc &inputType,
             void *output, const TensorDesc &outputType);
};

/// A collective finished when it started: its wait() returns `status`.
std::unique_ptr<PendingCollective> finishedCollective(Status status = Status::OK());

} // namespace kiln::runtime

#endif // KILN_RUNTIME_COMMUNICATOR_H
