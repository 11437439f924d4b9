//===- Communicator.cpp - Collectives' names, run = start + wait ----------===//

#include "kiln/runtime/Communicator.h"

namespace kiln::runtime {

PendingCollective::~PendingCollective() = default;
Communicator::~Communicator() = default;

Status Communicator::run(const Collective &collective, const void *input,
                         const TensorDesc &inputType, void *output,
                         const TensorDesc &outputType) {
  StatusOr<std::unique_ptr<PendingCollective>> pending =
      start(collective, input, inputType, output, outputType);
  if (!pending.ok())
    return pending.status();
  return (*pending)->wait();
}

namespace {
class FinishedCollective : public PendingCollective {
public:
  explicit FinishedCollective(Status status) : status_(std::move(status)) {}
  Status wait() override { return status_; }

private:
  Status status_;
};
} // namespace

std::unique_ptr<PendingCollective> finishedCollective(Status status) {
  return std::make_unique<FinishedCollective>(std::move(status));
}

std::string_view collectiveKindName(CollectiveKind kind) {
  switch (kind) {
  case CollectiveKind::AllReduce: return "all_reduce";
  case CollectiveKind::AllGather: return "all_gather";
  case CollectiveKind::ReduceScatter: return "reduce_scatter";
  case CollectiveKind::AllToAll: return "all_to_all";
  }
  return "unknown collective";
}

std::string_view reduceOpName(ReduceOp op) {
  switch (op) {
  case ReduceOp::Sum: return "sum";
  case ReduceOp::Avg: return "avg";
  case ReduceOp::Product: return "product";
  case ReduceOp::Min: return "min";
  case ReduceOp::Max: return "max";
  }
  return "unknown reduction";
}

} // namespace kiln::runtime
