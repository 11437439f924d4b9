//===- Communicator.cpp - Names of the collectives ------------------------===//

#include "kiln/runtime/Communicator.h"

namespace kiln::runtime {

Communicator::~Communicator() = default;

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
