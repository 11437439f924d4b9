//===- EagerDevice.h - The "kiln" PyTorch device (PrivateUse1) ------------===//
//
// torch.device("kiln"): eager PyTorch on Kiln's runtime devices. The pieces
// PyTorch asks of an out-of-tree device (an allocator, a device guard, the
// PrivateUse1 hooks, a generator, the native ops every backend needs, and a
// boxed fallback) are registered at run time by registerEagerDevice(), which
// `import kiln.device` calls, never by loading the extension: a process that
// only uses backend="kiln" keeps its own accelerator.
//
// Memory lives on one runtime driver, chosen by $KILN_DEVICE: the CPU
// driver (the default), whose memory is host memory, so an op without a
// Kiln kernel runs ATen's CPU kernel on zero-copy CPU views of it (the
// fallback); or a GPU driver (Vulkan), whose memory the host reaches only
// by copies, so the fallback runs the CPU kernel on host copies and copies
// what it wrote back. Either way each fallback is counted per op.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_PYTHON_DEVICE_EAGERDEVICE_H
#define KILN_PYTHON_DEVICE_EAGERDEVICE_H

#include <ATen/core/Generator.h>
#include <ATen/core/function_schema.h>
#include <ATen/core/stack.h>
#include <ATen/core/Tensor.h>
#include <c10/core/CachingDeviceAllocator.h>
#include <c10/core/Storage.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

namespace kiln::runtime {
class Device;
class Status;
}
namespace c10 {
class OperatorHandle;
}
namespace pybind11 {
class object;
}

namespace kiln::python {

/// The runtime's CPU device, shared with the compiled-graph bridge.
runtime::Device &cpuRuntimeDevice();
/// The process's device of runtime driver `driver` ("cpu", "vulkan"),
/// shared with the compiled-graph bridge; a torch error naming the driver
/// where it cannot be made (no such driver, no Vulkan device).
runtime::Device &runtimeDevice(const std::string &driver);

namespace eager {

/// The most kiln devices a process may have (KILN_NUM_DEVICES).
constexpr c10::DeviceIndex kMaxDevices = 64;

/// Registers the device with PyTorch (idempotent; the first call's
/// arguments win). `deviceCount` virtual devices, kiln:0..N-1, share one
/// device of runtime driver `driver`.
void registerEagerDevice(int deviceCount, const std::string &driver);
bool isRegistered();
/// The runtime device under the kiln devices (registered first).
runtime::Device &eagerRuntimeDevice();
/// Whether its memory is host memory (the CPU driver): kiln tensors' data
/// pointers are host pointers, and CPU views of them are zero-copy.
bool memoryIsHost();
/// Throws a torch error naming `what` for a failed runtime call.
void throwIfFailed(const runtime::Status &status, const char *what);

//===--- Devices (EagerRuntime.cpp) -----------------------------------===//

c10::DeviceIndex deviceCount();
c10::DeviceIndex currentDevice();
void setCurrentDevice(c10::DeviceIndex index);
/// Throws a torch error naming the valid range.
void checkDeviceIndex(c10::DeviceIndex index);
const at::Generator &defaultGenerator(c10::DeviceIndex index);
/// A CPU generator for one random op of the fallback, derived from a kiln
/// generator's (seed, offset), whose offset it advances: replaying a saved
/// state replays the same numbers.
at::Generator cpuGeneratorFor(const at::Generator &kilnGenerator);
/// A seed for one random Kiln kernel (kiln.randomness's hash), drawn the
/// same way: the next stream of the kiln generator's (seed, offset).
int64_t nextKernelSeed(const at::Generator &kilnGenerator);

//===--- Memory (EagerMemory.cpp) -------------------------------------===//

c10::DeviceAllocator &deviceAllocator();
c10::Allocator &pinnedHostAllocator();
bool isPinnedHostPointer(const void *data);
/// A CPU tensor over the same bytes as `tensor` (only where memoryIsHost()):
/// same sizes, strides and offset, over a CPU storage that covers the kiln
/// storage. Writes through it land in `tensor`.
at::Tensor cpuView(const at::Tensor &tensor);
/// Grows or shrinks a kiln storage to `bytes`, keeping its first bytes.
void resizeKilnStorage(const c10::Storage &storage, size_t bytes);
/// A new kiln storage on device `index` holding a copy of `cpu`'s bytes.
c10::Storage uploadCpuStorage(const c10::Storage &cpu, c10::DeviceIndex index);

/// Host copies of kiln tensors whose memory the host cannot address (a GPU
/// driver's): one copy per kiln storage, so tensors that share memory share
/// it on the host too, and a write through one is seen through the others.
class HostStaging {
public:
  /// A CPU tensor with `kiln`'s sizes, strides and offset over the host
  /// copy of its storage (downloaded at the first use of the storage).
  at::Tensor toHost(const at::Tensor &kiln);
  /// Marks `kiln`'s storage as written on the host: flush() uploads it.
  void written(const at::Tensor &kiln);
  /// The kiln storage whose host copy `cpu` is, or null.
  const c10::Storage *kilnStorageOf(const c10::Storage &cpu) const;
  /// Uploads the written host copies whose memory is still the storage's
  /// own (a kernel that grew one replaced it; the caller re-points those).
  void flush();

private:
  struct Copy {
    c10::Storage kiln;
    c10::Storage host;
    const void *hostData; // to see whether a kernel replaced the memory
    bool written = false;
  };
  std::vector<Copy> copies_;
};
/// A kiln storage that takes over `cpu`'s memory without copying, counted
/// in device `index`'s memory statistics until freed.
c10::Storage adoptCpuStorage(const c10::Storage &cpu, c10::DeviceIndex index);
/// A kiln tensor on `storage` with `like`'s sizes, strides and offset.
at::Tensor tensorOnStorage(const c10::Storage &storage, const at::Tensor &like);

//===--- Op statistics (EagerOps.cpp) ---------------------------------===//

/// Calls per operator, keyed by something stable for the process (an
/// operator's schema, a name literal), so a call builds no string; named
/// only when read.
inline std::string callName(const c10::FunctionSchema *schema) {
  return c10::toString(schema->operator_name());
}
inline std::string callName(const char *name) { return name; }

template <typename Key> class CallCounts {
public:
  void add(Key key) {
    std::lock_guard<std::mutex> lock(mutex_);
    ++counts_[key];
  }
  /// Adds a call and tells whether it is the first of `key`.
  bool addIsFirst(Key key) {
    std::lock_guard<std::mutex> lock(mutex_);
    return ++counts_[key] == 1;
  }
  std::map<std::string, uint64_t> byName() const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::map<std::string, uint64_t> named;
    for (const auto &[key, count] : counts_)
      named[callName(key)] += count;
    return named;
  }
  void clear() {
    std::lock_guard<std::mutex> lock(mutex_);
    counts_.clear();
  }

private:
  mutable std::mutex mutex_;
  std::unordered_map<Key, uint64_t> counts_;
};

using OpCounts = CallCounts<const c10::FunctionSchema *>;

enum class FallbackPolicy { Allow, Warn, Error };
void setFallbackPolicy(FallbackPolicy policy);
FallbackPolicy fallbackPolicy();
/// Calls per operator ("aten::add.Tensor"): those that ran ATen's CPU
/// kernel through the fallback, and those the device implements itself.
std::map<std::string, uint64_t> fallbackCalls();
std::map<std::string, uint64_t> nativeCalls();
void resetOpStats();
void registerEagerOps();
/// `target.copy_(source)` between two tensors of which at least one is a
/// kiln tensor, without dispatching (a Kiln kernel may call it).
void copyInto(const at::Tensor &target, const at::Tensor &source);
/// The fallback: runs the op's ATen CPU kernel on CPU views of the kiln
/// tensors (counted as a fallback call).
void runOnCpu(const c10::OperatorHandle &op, torch::jit::Stack *stack);

/// torch.autocast("kiln") with the CUDA op lists (EagerAutocast.cpp).
void registerEagerAutocast();

//===--- Kiln kernels (EagerKernels.cpp) ------------------------------===//

/// An overload the device runs as a Kiln kernel: (op, overload, the
/// functional op and overload Kiln compiles for it, pointwise). The overload
/// is the functional one itself, its out= form or its in-place form.
using RegisteredKernel = std::tuple<std::string, std::string, std::string, std::string, bool>;
/// Registers them; `compile` is kiln.eager_kernels.compile_kernel. Once per
/// process.
void registerEagerKernels(const std::vector<RegisteredKernel> &ops, pybind11::object compile);
/// Calls that ran a Kiln kernel, per out= overload.
std::map<std::string, uint64_t> kernelCalls();
/// Keys Kiln could not compile a kernel for, and why.
std::map<std::string, std::string> kernelRefusals();
/// Per op with a kernel registered, the last reason one of its calls ran
/// ATen's CPU kernel instead.
std::map<std::string, std::string> declinedCalls();
size_t kernelsLoaded();
void resetKernelCalls();

} // namespace eager
} // namespace kiln::python

#endif
