// The runtime's Communicator over torch's process groups: the collectives a
// compiled graph keeps in its plan (tensor parallelism's _c10d_functional
// ops) run on the process group the graph names, as eager torch would run
// them, asynchronously (gloo works on its own threads while the plan's
// launches go on). The runtime hands host memory (the CPU driver's buffers, or host
// copies of a GPU driver's), which goes to the group as CPU tensors over
// the same bytes: a "kiln" group passes them to gloo, a gloo group takes
// them directly.
#include "TorchRuntime.h"

#include "kiln/runtime/Communicator.h"

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/GroupRegistry.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

namespace kiln::python {
namespace {

c10d::ReduceOp torchReduceOp(rt::ReduceOp op) {
  switch (op) {
  case rt::ReduceOp::Product: return c10d::ReduceOp::PRODUCT;
  case rt::ReduceOp::Min: return c10d::ReduceOp::MIN;
  case rt::ReduceOp::Max: return c10d::ReduceOp::MAX;
  default: return c10d::ReduceOp::SUM; // avg: a sum, divided after (gloo has no AVG)
  }
}

at::Tensor hostTensor(const void *data, const rt::TensorDesc &desc) {
  return at::from_blob(const_cast<void *>(data), desc.shape,
                       at::TensorOptions().dtype(scalarTypeOf(desc.dtype)));
}

/// A collective in flight on a process group: torch's Work, and the
/// division an average still needs once the sum is complete.
class TorchPendingCollective : public rt::PendingCollective {
public:
  TorchPendingCollective(c10::intrusive_ptr<c10d::Work> work, at::Tensor output, int64_t divisor)
      : work_(std::move(work)), output_(std::move(output)), divisor_(divisor) {}
  ~TorchPendingCollective() override {
    if (work_) // never waited for (the run failed first): finish before the memory goes
      try {
        work_->wait();
      } catch (const std::exception &) {
      }
  }
  rt::Status wait() override {
    c10::intrusive_ptr<c10d::Work> work = std::move(work_);
    try {
      work->wait();
      if (divisor_ > 1)
        output_.div_(divisor_);
      return rt::Status::OK();
    } catch (const std::exception &error) {
      return rt::Status::error(error.what());
    }
  }

private:
  c10::intrusive_ptr<c10d::Work> work_;
  at::Tensor output_;
  int64_t divisor_;
};

class TorchCommunicator : public rt::Communicator {
public:
  rt::StatusOr<std::unique_ptr<rt::PendingCollective>>
  start(const rt::Collective &collective, const void *input, const rt::TensorDesc &inputType,
        void *output, const rt::TensorDesc &outputType) override {
    try {
      c10::intrusive_ptr<c10d::ProcessGroup> group = c10d::resolve_process_group(collective.group);
      if (collective.groupSize > 0 && collective.groupSize != group->getSize())
        return rt::Status::error("the graph was compiled for " +
                                 std::to_string(collective.groupSize) + " ranks, the group has " +
                                 std::to_string(group->getSize()));
      at::Tensor in = hostTensor(input, inputType), out = hostTensor(output, outputType);
      c10::intrusive_ptr<c10d::Work> work;
      switch (collective.kind) {
      case rt::CollectiveKind::AllReduce: {
        out.copy_(in);
        std::vector<at::Tensor> tensors{out};
        c10d::AllreduceOptions options;
        options.reduceOp = torchReduceOp(collective.reduceOp);
        work = group->allreduce(tensors, options);
        break;
      }
      case rt::CollectiveKind::AllGather:
        work = group->all_gather_single(out, in);
        break;
      case rt::CollectiveKind::ReduceScatter: {
        c10d::ReduceScatterOptions options;
        options.reduceOp = torchReduceOp(collective.reduceOp);
        work = group->reduce_scatter_single(out, in, options);
        break;
      }
      case rt::CollectiveKind::AllToAll: {
        std::vector<int64_t> even; // no splits: equal parts
        work = group->all_to_all_single(out, in, even, even);
        break;
      }
      }
      bool averages = collective.reduceOp == rt::ReduceOp::Avg &&
                      (collective.kind == rt::CollectiveKind::AllReduce ||
                       collective.kind == rt::CollectiveKind::ReduceScatter);
      return std::unique_ptr<rt::PendingCollective>(new TorchPendingCollective(
          std::move(work), std::move(out), averages ? group->getSize() : 1));
    } catch (const std::exception &error) {
      return rt::Status::error(error.what());
    }
  }
};

} // namespace

rt::Communicator &torchCommunicator() {
  static TorchCommunicator communicator;
  return communicator;
}

} // namespace kiln::python
