//===- EagerCollectives.cpp - The "kiln" process group backend ------------===//
//
// dist.init_process_group("kiln"): collectives on kiln tensors (and CPU
// tensors) through a gloo process group made in Python. Gloo takes CPU
// tensors only, so each kiln tensor is handed to it as a CPU tensor: on the
// CPU driver a zero-copy view of the same bytes (gloo reads and writes kiln
// memory directly); on a GPU driver a host copy, downloaded before the
// collective and, for the tensors the collective writes, uploaded when it
// completes (before wait() returns and before the work's future completes).
//
// Works wrap gloo's: wait()/isCompleted()/exception() delegate, result()
// and the future's value are the caller's kiln tensors, so DDP's reducer
// and the functional collectives see the tensors they passed in.
//
//===----------------------------------------------------------------------===//

#include "../Bindings.h"
#include "EagerDevice.h"

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>
#include <pybind11/stl.h>
#include <torch/extension.h>

#include <map>
#include <memory>
#include <mutex>
#include <utility>

namespace py = pybind11;

namespace kiln::python::eager {
namespace {

using TensorList = std::vector<at::Tensor>;
using WorkPtr = c10::intrusive_ptr<c10d::Work>;

/// Per collective: calls and the bytes this rank contributed (its inputs),
/// over every kiln group of the process.
struct CollectiveCount {
  int64_t calls = 0;
  int64_t bytes = 0;
};
std::mutex countsMutex;
std::map<std::string, CollectiveCount> &counts() {
  static std::map<std::string, CollectiveCount> table;
  return table;
}
int64_t bytesOf(const TensorList &tensors) {
  int64_t total = 0;
  for (const at::Tensor &t : tensors)
    total += static_cast<int64_t>(t.nbytes());
  return total;
}
int64_t bytesOf(const std::vector<TensorList> &lists) {
  int64_t total = 0;
  for (const TensorList &list : lists)
    total += bytesOf(list);
  return total;
}
void count(const char *collective, int64_t bytes) {
  std::lock_guard<std::mutex> lock(countsMutex);
  CollectiveCount &entry = counts()[collective];
  entry.calls += 1;
  entry.bytes += bytes;
}

/// The CPU tensors one collective hands gloo, and how its results get back
/// to kiln memory.
class HostTensors {
public:
  /// The tensor gloo sees for `tensor`; `written`: the collective writes it.
  at::Tensor host(const at::Tensor &tensor, bool written) {
    if (tensor.device().type() != c10::DeviceType::PrivateUse1)
      return tensor;
    if (memoryIsHost())
      return cpuView(tensor);
    at::Tensor copy = tensor.cpu();
    if (written)
      uploads_.emplace_back(tensor, copy);
    return copy;
  }
  TensorList host(const TensorList &tensors, bool written) {
    TensorList result;
    result.reserve(tensors.size());
    for (const at::Tensor &t : tensors)
      result.push_back(host(t, written));
    return result;
  }
  std::vector<TensorList> host(const std::vector<TensorList> &lists, bool written) {
    std::vector<TensorList> result;
    result.reserve(lists.size());
    for (const TensorList &list : lists)
      result.push_back(host(list, written));
    return result;
  }

  /// Copies the written host copies into their kiln tensors (GPU drivers).
  void upload() {
    for (auto &[kiln, copy] : uploads_)
      kiln.copy_(copy);
    uploads_.clear();
  }

private:
  std::vector<std::pair<at::Tensor, at::Tensor>> uploads_;
};

/// A gloo work whose results are the caller's tensors.
class KilnWork : public c10d::Work {
public:
  /// `what` names the collective and this rank for errors: "all_reduce on
  /// rank 0 of 2".
  KilnWork(WorkPtr inner, TensorList outputs, HostTensors staging, std::string what)
      : c10d::Work(-1, inner->retrieveOpType()), inner_(std::move(inner)),
        outputs_(std::move(outputs)), staging_(std::make_shared<Staging>(std::move(staging))),
        what_(std::make_shared<const std::string>(std::move(what))) {}

  bool isCompleted() override { return inner_->isCompleted(); }
  bool isSuccess() const override { return inner_->isSuccess(); }
  std::exception_ptr exception() const override { return inner_->exception(); }
  int sourceRank() const override { return inner_->sourceRank(); }
  TensorList result() override { return outputs_; }
  void synchronize() override {
    named([&] { inner_->wait(); });
    finish(staging_);
  }
  void abort() override { inner_->abort(); }

  bool wait(std::chrono::milliseconds timeout) override {
    bool done = false;
    named([&] { done = inner_->wait(timeout); });
    finish(staging_);
    return done;
  }

  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override {
    std::lock_guard<std::mutex> lock(futureMutex_);
    if (!future_) {
      std::shared_ptr<Staging> staging = staging_;
      std::shared_ptr<const std::string> what = what_;
      TensorList outputs = outputs_;
      future_ = inner_->getFuture()->then(
          [staging, what, outputs](c10::ivalue::Future &gloo) {
            // then() runs on failure too: the error is this future's.
            if (gloo.hasError())
              failed(*what, gloo.tryRetrieveErrorMessage());
            finish(staging);
            return c10::IValue(outputs);
          },
          c10::ListType::ofTensors());
    }
    return future_;
  }

private:
  struct Staging {
    explicit Staging(HostTensors tensors) : tensors(std::move(tensors)) {}
    HostTensors tensors;
    std::once_flag uploaded;
  };
  static void finish(const std::shared_ptr<Staging> &staging) {
    std::call_once(staging->uploaded, [&] { staging->tensors.upload(); });
  }
  /// Gloo's errors name a peer's address, not what failed where; say both.
  [[noreturn]] static void failed(const std::string &what, const std::string &error) {
    C10_THROW_ERROR(DistBackendError,
                    "kiln process group: " + what +
                        " failed (a peer rank died, raised or timed out): " + error);
  }
  template <class Wait> void named(Wait wait) {
    try {
      wait();
    } catch (const c10::Error &error) {
      failed(*what_, error.what_without_backtrace());
    } catch (const std::exception &error) {
      failed(*what_, error.what());
    }
  }

  WorkPtr inner_;
  TensorList outputs_;
  std::shared_ptr<Staging> staging_;
  std::shared_ptr<const std::string> what_;
  std::mutex futureMutex_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
};

class KilnBackend : public c10d::Backend {
public:
  explicit KilnBackend(c10::intrusive_ptr<c10d::Backend> gloo)
      : c10d::Backend(gloo->getRank(), gloo->getSize()), gloo_(std::move(gloo)) {}

  const std::string getBackendName() const override { return "kiln"; }
  void setTimeout(std::chrono::milliseconds timeout) override { gloo_->setTimeout(timeout); }
  void abort() override { gloo_->abort(); }
  void shutdown() override { gloo_->shutdown(); }
  void setGroupUid(const std::string &uid) override {
    c10d::Backend::setGroupUid(uid);
    gloo_->setGroupUid(uid);
  }

  WorkPtr broadcast(TensorList &tensors, const c10d::BroadcastOptions &opts) override {
    return collective("broadcast", bytesOf(tensors), tensors, [&](HostTensors &h) {
      TensorList host = h.host(tensors, /*written=*/true);
      return gloo_->broadcast(host, opts);
    });
  }

  WorkPtr allreduce(TensorList &tensors, const c10d::AllreduceOptions &opts) override {
    return collective("all_reduce", bytesOf(tensors), tensors, [&](HostTensors &h) {
      TensorList host = h.host(tensors, true);
      return gloo_->allreduce(host, opts);
    });
  }

  WorkPtr allreduce_coalesced(TensorList &tensors,
                              const c10d::AllreduceCoalescedOptions &opts) override {
    return collective("all_reduce", bytesOf(tensors), tensors, [&](HostTensors &h) {
      TensorList host = h.host(tensors, true);
      return gloo_->allreduce_coalesced(host, opts);
    });
  }

  WorkPtr reduce(TensorList &tensors, const c10d::ReduceOptions &opts) override {
    return collective("reduce", bytesOf(tensors), tensors, [&](HostTensors &h) {
      TensorList host = h.host(tensors, true);
      return gloo_->reduce(host, opts);
    });
  }

  WorkPtr allgather(std::vector<TensorList> &outputs, TensorList &inputs,
                    const c10d::AllgatherOptions &opts) override {
    return collective("all_gather", bytesOf(inputs), flatten(outputs), [&](HostTensors &h) {
      std::vector<TensorList> out = h.host(outputs, true);
      TensorList in = h.host(inputs, false);
      return gloo_->allgather(out, in, opts);
    });
  }

  WorkPtr _allgather_base(at::Tensor &output, at::Tensor &input,
                          const c10d::AllgatherOptions &opts) override {
    return collective("all_gather", static_cast<int64_t>(input.nbytes()), {output}, [&](HostTensors &h) {
      at::Tensor out = h.host(output, true), in = h.host(input, false);
      return gloo_->_allgather_base(out, in, opts);
    });
  }

  WorkPtr allgather_coalesced(std::vector<TensorList> &outputs, TensorList &inputs,
                              const c10d::AllgatherOptions &opts) override {
    return collective("all_gather", bytesOf(inputs), flatten(outputs), [&](HostTensors &h) {
      std::vector<TensorList> out = h.host(outputs, true);
      TensorList in = h.host(inputs, false);
      return gloo_->allgather_coalesced(out, in, opts);
    });
  }

  WorkPtr allgather_into_tensor_coalesced(TensorList &outputs, TensorList &inputs,
                                          const c10d::AllgatherOptions &opts) override {
    return collective("all_gather", bytesOf(inputs), outputs, [&](HostTensors &h) {
      TensorList out = h.host(outputs, true), in = h.host(inputs, false);
      return gloo_->allgather_into_tensor_coalesced(out, in, opts);
    });
  }

  WorkPtr gather(std::vector<TensorList> &outputs, TensorList &inputs,
                 const c10d::GatherOptions &opts) override {
    return collective("gather", bytesOf(inputs), flatten(outputs), [&](HostTensors &h) {
      std::vector<TensorList> out = h.host(outputs, true);
      TensorList in = h.host(inputs, false);
      return gloo_->gather(out, in, opts);
    });
  }

  WorkPtr scatter(TensorList &outputs, std::vector<TensorList> &inputs,
                  const c10d::ScatterOptions &opts) override {
    return collective("scatter", bytesOf(inputs), outputs, [&](HostTensors &h) {
      TensorList out = h.host(outputs, true);
      std::vector<TensorList> in = h.host(inputs, false);
      return gloo_->scatter(out, in, opts);
    });
  }

  WorkPtr reduce_scatter(TensorList &outputs, std::vector<TensorList> &inputs,
                         const c10d::ReduceScatterOptions &opts) override {
    return collective("reduce_scatter", bytesOf(inputs), outputs, [&](HostTensors &h) {
      TensorList out = h.host(outputs, true);
      std::vector<TensorList> in = h.host(inputs, false);
      return gloo_->reduce_scatter(out, in, opts);
    });
  }

  WorkPtr _reduce_scatter_base(at::Tensor &output, at::Tensor &input,
                               const c10d::ReduceScatterOptions &opts) override {
    return collective("reduce_scatter", static_cast<int64_t>(input.nbytes()), {output}, [&](HostTensors &h) {
      at::Tensor out = h.host(output, true), in = h.host(input, false);
      return gloo_->_reduce_scatter_base(out, in, opts);
    });
  }

  WorkPtr reduce_scatter_tensor_coalesced(TensorList &outputs, TensorList &inputs,
                                          const c10d::ReduceScatterOptions &opts) override {
    return collective("reduce_scatter", bytesOf(inputs), outputs, [&](HostTensors &h) {
      TensorList out = h.host(outputs, true), in = h.host(inputs, false);
      return gloo_->reduce_scatter_tensor_coalesced(out, in, opts);
    });
  }

  WorkPtr alltoall_base(at::Tensor &output, at::Tensor &input, std::vector<int64_t> &outputSplits,
                        std::vector<int64_t> &inputSplits,
                        const c10d::AllToAllOptions &opts) override {
    return collective("all_to_all", static_cast<int64_t>(input.nbytes()), {output}, [&](HostTensors &h) {
      at::Tensor out = h.host(output, true), in = h.host(input, false);
      return gloo_->alltoall_base(out, in, outputSplits, inputSplits, opts);
    });
  }

  WorkPtr alltoall(TensorList &outputs, TensorList &inputs,
                   const c10d::AllToAllOptions &opts) override {
    return collective("all_to_all", bytesOf(inputs), outputs, [&](HostTensors &h) {
      TensorList out = h.host(outputs, true), in = h.host(inputs, false);
      return gloo_->alltoall(out, in, opts);
    });
  }

  WorkPtr send(TensorList &tensors, int dstRank, int tag) override {
    return collective("send", bytesOf(tensors), tensors, [&](HostTensors &h) {
      TensorList host = h.host(tensors, false);
      return gloo_->send(host, dstRank, tag);
    });
  }

  WorkPtr recv(TensorList &tensors, int srcRank, int tag) override {
    return collective("recv", 0, tensors, [&](HostTensors &h) {
      TensorList host = h.host(tensors, true);
      return gloo_->recv(host, srcRank, tag);
    });
  }

  WorkPtr recvAnysource(TensorList &tensors, int tag) override {
    return collective("recv", 0, tensors, [&](HostTensors &h) {
      TensorList host = h.host(tensors, true);
      return gloo_->recvAnysource(host, tag);
    });
  }

  WorkPtr barrier(const c10d::BarrierOptions &opts) override { return gloo_->barrier(opts); }

  void monitoredBarrier(const c10d::BarrierOptions &opts, bool waitAllRanks) override {
    gloo_->monitoredBarrier(opts, waitAllRanks);
  }

private:
  /// Counts the collective, hands gloo host tensors (`call` makes them with
  /// its HostTensors and calls gloo), and wraps gloo's work so that it
  /// returns `outputs` and uploads what the GPU driver's host copies got.
  template <class Call>
  WorkPtr collective(const char *name, int64_t bytes, TensorList outputs, Call call) {
    count(name, bytes);
    HostTensors staging;
    WorkPtr inner = call(staging);
    return c10::make_intrusive<KilnWork>(std::move(inner), std::move(outputs),
                                         std::move(staging),
                                         std::string(name) + " on rank " +
                                             std::to_string(getRank()) + " of " +
                                             std::to_string(getSize()));
  }
  static TensorList flatten(const std::vector<TensorList> &lists) {
    TensorList all;
    for (const TensorList &list : lists)
      all.insert(all.end(), list.begin(), list.end());
    return all;
  }

  c10::intrusive_ptr<c10d::Backend> gloo_;
};

} // namespace
} // namespace kiln::python::eager

namespace kiln::python {

void initEagerCollectives(py::module_ m) {
  using eager::KilnBackend;
  m.def(
      "collective_backend",
      [](c10::intrusive_ptr<c10d::Backend> gloo) -> c10::intrusive_ptr<c10d::Backend> {
        return c10::make_intrusive<KilnBackend>(std::move(gloo));
      },
      py::arg("gloo"),
      "The 'kiln' process group backend: collectives on kiln and CPU tensors through `gloo` "
      "(a ProcessGroupGloo), on kiln memory directly where the driver's memory is host memory.");
  m.def(
      "collective_counts",
      [] {
        std::lock_guard<std::mutex> lock(eager::countsMutex);
        std::map<std::string, std::pair<int64_t, int64_t>> result;
        for (const auto &[name, entry] : eager::counts())
          result[name] = {entry.calls, entry.bytes};
        return result;
      },
      "Per collective of the kiln groups: (calls, bytes this rank contributed).");
  m.def("reset_collective_counts", [] {
    std::lock_guard<std::mutex> lock(eager::countsMutex);
    eager::counts().clear();
  });
}

} // namespace kiln::python
