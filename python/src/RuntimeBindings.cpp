// kiln._C.runtime: the torch <-> runtime bridge. The only file that includes
// torch: inputs are passed to kernels by pointer and outputs are allocated as
// torch tensors through the runtime's allocator interface, so nothing is
// copied (except non-contiguous inputs, which are made contiguous first).
#include "Bindings.h"
#include "TorchRuntime.h"
#include "device/EagerDevice.h"

#include "kiln/runtime/Runtime.h"

#include <c10/core/impl/VirtualGuardImpl.h>
#include <torch/extension.h>

#include <atomic>
#include <map>
#include <mutex>

namespace py = pybind11;
namespace rt = kiln::runtime;

namespace kiln::python {
namespace {

std::vector<int64_t> contiguousStrides(const std::vector<int64_t> &shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (int64_t i = (int64_t)shape.size() - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * std::max<int64_t>(shape[i + 1], 1);
  return strides;
}

/// Buffers are torch tensors, so outputs are returned without a copy: CPU
/// tensors, or tensors of the eager kiln device, whose memory is host
/// memory too.
class TorchAllocator : public rt::Allocator {
public:
  explicit TorchAllocator(c10::Device device = c10::Device(c10::kCPU)) : device_(device) {}
  rt::StatusOr<std::shared_ptr<rt::Buffer>> allocate(const rt::TensorDesc &desc) override {
    // Allocated in the buffer's own shape: an output that is a whole buffer
    // is returned as is, without a view.
    at::Tensor t;
    try {
      t = at::empty(desc.shape,
                    at::TensorOptions().dtype(scalarTypeOf(desc.dtype)).device(device_));
    } catch (const std::exception &err) { // c10::OutOfMemoryError, std::bad_alloc
      return rt::Status::error(rt::StatusCode::OutOfMemory,
                               "out of memory allocating " + std::to_string(desc.byteSize()) +
                                   " bytes for " + desc.str() + ": " + err.what());
    }
    return std::shared_ptr<rt::Buffer>(std::make_shared<TorchBuffer>(std::move(t)));
  }

private:
  c10::Device device_;
};

/// Where eager puts one output (kiln/layout.py's OutputLayout): the bridge
/// returns Kiln's result with exactly these sizes, strides and offset.
struct OutputLayout {
  std::vector<int64_t> sizes, strides;
  int64_t storageOffset = 0;
  bool dense = false; // Kiln computed it in storage order (row-major physical)
  int64_t aliasInput = -1;
  std::vector<int64_t> aliasInputStrides;
  int64_t aliasInputOffset = 0;
  /// An earlier output whose storage this one shares in eager, covering this
  /// one's elements, and that output's traced offset: a view of it.
  int64_t aliasOutput = -1;
  int64_t aliasOutputOffset = 0;
  /// Symbolic sizes: a dense output computed in storage order, whose dims
  /// from outer to inner in memory are `order`; sizes and strides follow
  /// from each run's result.
  std::vector<int64_t> order;
};

OutputLayout layoutFromDict(const py::dict &d) {
  OutputLayout layout;
  layout.sizes = d["size"].cast<std::vector<int64_t>>();
  layout.strides = d["stride"].cast<std::vector<int64_t>>();
  layout.storageOffset = d["storage_offset"].cast<int64_t>();
  layout.dense = d["dense"].cast<bool>();
  layout.aliasInput = d["alias_input"].cast<int64_t>();
  layout.aliasInputStrides = d["alias_input_stride"].cast<std::vector<int64_t>>();
  layout.aliasInputOffset = d["alias_input_offset"].cast<int64_t>();
  if (d.contains("alias_output")) {
    layout.aliasOutput = d["alias_output"].cast<int64_t>();
    layout.aliasOutputOffset = d["alias_output_offset"].cast<int64_t>();
  }
  if (d.contains("order"))
    layout.order = d["order"].cast<std::vector<int64_t>>();
  if (layout.sizes.size() != layout.strides.size())
    throw py::value_error("output layout: size and stride differ in rank");
  return layout;
}

int64_t storageExtent(const OutputLayout &layout) {
  int64_t extent = 1;
  for (size_t d = 0; d < layout.sizes.size(); ++d) {
    if (layout.sizes[d] == 0)
      return 0;
    extent += (layout.sizes[d] - 1) * layout.strides[d];
  }
  return extent;
}

/// Kiln's result (row-major, in storage order when dense) as eager lays it
/// out; `earlier` holds the outputs before it, as returned.
at::Tensor applyLayout(at::Tensor result, const OutputLayout &layout,
                       const std::vector<at::Tensor> &args, const std::vector<at::Tensor> &earlier) {
  if (layout.aliasOutput >= 0) {
    const at::Tensor &base = earlier[layout.aliasOutput];
    return base.as_strided(layout.sizes, layout.strides,
                           base.storage_offset() + layout.storageOffset - layout.aliasOutputOffset);
  }
  if (!layout.order.empty()) {
    // result is [sizes in `order`], row-major: view it back in logical order.
    std::vector<int64_t> physical = result.sizes().vec();
    std::vector<int64_t> rowMajor = contiguousStrides(physical);
    std::vector<int64_t> sizes(physical.size()), strides(physical.size());
    for (size_t i = 0; i < layout.order.size(); ++i) {
      sizes[layout.order[i]] = physical[i];
      strides[layout.order[i]] = rowMajor[i];
    }
    return result.as_strided(sizes, strides, result.storage_offset());
  }
  if (layout.aliasInput >= 0) {
    const at::Tensor &base = args[layout.aliasInput];
    if (base.strides().equals(layout.aliasInputStrides))
      return base.as_strided(layout.sizes, layout.strides,
                             base.storage_offset() + layout.storageOffset -
                                 layout.aliasInputOffset);
  }
  if (layout.dense) {
    if (result.storage_offset() == layout.storageOffset) {
      if (result.sizes().equals(layout.sizes) && result.strides().equals(layout.strides))
        return result;
      return result.as_strided(layout.sizes, layout.strides, layout.storageOffset);
    }
    result = result.as_strided(layout.sizes, layout.strides, result.storage_offset());
  }
  // Gaps, broadcast strides or another offset: storage laid out as eager's.
  at::Tensor storage = at::empty({layout.storageOffset + storageExtent(layout)},
                                 result.options());
  at::Tensor view = storage.as_strided(layout.sizes, layout.strides, layout.storageOffset);
  at::Tensor target = view, source = result;
  for (size_t d = 0; d < layout.sizes.size(); ++d)
    if (layout.strides[d] == 0 && layout.sizes[d] > 1) { // one write per element in memory
      target = target.narrow((int64_t)d, 0, 1);
      source = source.narrow((int64_t)d, 0, 1);
    }
  target.copy_(source);
  return view;
}

/// Kiln's CPU threads: KILN_NUM_THREADS of them when set, else one per core,
/// of which each call uses torch.get_num_threads() (so torch.set_num_threads
/// governs Kiln's kernels as it does eager's).
rt::Device &device() {
  static const std::unique_ptr<rt::Device> cpu = [] {
    auto created = rt::createDevice("cpu");
    if (!created.ok()) // the built-in driver: only a broken build lacks it
      throw std::runtime_error("kiln: " + created.status().message());
    return std::move(*created);
  }();
  static const bool followTorch = std::getenv("KILN_NUM_THREADS") == nullptr;
  if (followTorch)
    cpu->threadPool()->setActiveThreads(at::get_num_threads());
  return *cpu;
}

/// The device an artifact's kernels run on: the CPU, or another device
/// (Vulkan) whose memory the bridge copies tensors to and from. One device
/// per driver for the process, created on first use.
rt::Device &deviceFor(const rt::Artifact &artifact) {
  const std::string &format = artifact.executables.empty() ? "" : artifact.executables[0].format;
  if (format.rfind("cpu-", 0) == 0 || format.empty())
    return device();
  std::string driver = format.substr(0, format.find('-')); // "vulkan-spirv" -> "vulkan"
  try {
    return runtimeDevice(driver);
  } catch (const std::exception &err) {
    throw py::value_error("cannot run this " + format + " artifact: " + err.what());
  }
}

/// An output or intermediate in device memory, with its shape, so the
/// bridge can copy it into a tensor.
class DeviceTensorBuffer : public rt::Buffer {
public:
  DeviceTensorBuffer(rt::DeviceBuffer memory, rt::TensorDesc desc)
      : memory(std::move(memory)), desc(std::move(desc)) {}
  void *data() override { return memory.address(); }
  rt::DeviceBuffer memory;
  rt::TensorDesc desc;
};

class DeviceTensorAllocator : public rt::Allocator {
public:
  explicit DeviceTensorAllocator(rt::Device &device) : device_(device) {}
  rt::StatusOr<std::shared_ptr<rt::Buffer>> allocate(const rt::TensorDesc &desc) override {
    rt::StatusOr<rt::DeviceBuffer> memory = device_.allocate((size_t)desc.byteSize());
    if (!memory.ok())
      return memory.status().withContext("allocating " + desc.str());
    return std::shared_ptr<rt::Buffer>(
        std::make_shared<DeviceTensorBuffer>(std::move(*memory), desc));
  }

private:
  rt::Device &device_;
};

/// torch's current stream on a CUDA device, as the runtime device's stream
/// for this thread while it lives (nothing for other devices). Found
/// through c10's device guard, so no CUDA header is needed.
struct ExternalStream {
  ExternalStream(rt::Device &device, c10::Device tensors) : device(device) {
    if (!tensors.is_cuda())
      return;
    c10::impl::VirtualGuardImpl guard(c10::DeviceType::CUDA);
    status = device.useExternalStream(guard.getStream(tensors).native_handle());
    set = status.ok();
  }
  ~ExternalStream() {
    if (set)
      (void)device.useExternalStream(nullptr);
  }
  rt::Device &device;
  rt::Status status = rt::Status::OK();
  bool set = false;
};

/// An input's copy in device memory, kept between calls: a tensor whose
/// data pointer and version counter are unchanged (a parameter) is not
/// copied again.
struct ResidentInput {
  rt::DeviceBuffer memory;
  const void *host = nullptr;
  int64_t version = -1;
  size_t bytes = 0;
};

class Executable {
public:
  Executable(const py::bytes &bytes, const std::optional<std::string> &graphName) {
    std::string_view data = bytes;
    rt::Artifact artifact;
    rt::Status status = rt::parseArtifact(
        reinterpret_cast<const uint8_t *>(data.data()), data.size(), artifact);
    if (!status.ok())
      throw py::value_error("invalid Kiln artifact: " + status.message());
    if (graphName)
      artifact.graphName = *graphName;
    rt::Device &target = deviceFor(artifact);
    onHost_ = &target == &device();
    device_ = &target;
    auto program = rt::Program::load(std::move(artifact), target);
    if (!program.ok())
      throw py::value_error("cannot load Kiln artifact: " + program.status().message());
    program_ = std::move(*program);
  }

  std::vector<at::Tensor> run(const std::vector<at::Tensor> &args) const {
    device(); // follow torch.get_num_threads()
    const rt::Artifact &artifact = program_->artifact();
    std::vector<at::Tensor> inputs;
    inputs.reserve(args.size());
    std::vector<void *> pointers;
    std::vector<rt::TensorDesc> descs;
    c10::Device tensorDevice = tensorDeviceOf(args);
    // Kernels take the tensors' memory as it is where it is the program's
    // device's: CPU tensors on the host, kiln tensors on the kiln device's.
    bool direct = tensorDevice.is_cpu() ? onHost_ : true;
    // A graph on kiln tensors in GPU memory (or on CUDA tensors) may still
    // take a CPU tensor.
    bool uploadCpu = direct && !tensorDevice.is_cpu() &&
                     (tensorDevice.is_cuda() || !eager::memoryIsHost());
    for (size_t i = 0; i < args.size(); ++i) {
      const at::Tensor &arg = uploadCpu && args[i].is_cpu() ? args[i].to(tensorDevice) : args[i];
      auto dtype = dtypeOf(arg.scalar_type());
      if (!dtype)
        throw std::runtime_error("kiln: graph '" + artifact.graphName + "' input " +
                                 std::to_string(i) + " has unsupported dtype " +
                                 std::string(c10::toString(arg.scalar_type())));
      at::Tensor input = arg.is_contiguous() ? arg : arg.contiguous();
      pointers.push_back(input.data_ptr());
      descs.push_back({*dtype, input.sizes().vec()});
      inputs.push_back(std::move(input));
    }
    rt::InputVersions versions = versionsOf(args);
    TorchAllocator allocator(tensorDevice);
    DeviceTensorAllocator deviceAllocator(*device_);
    std::vector<std::shared_ptr<rt::Buffer>> allocated;
    std::vector<rt::OutputRef> outputs;
    rt::Status status = [&] {
      py::gil_scoped_release release;
      // A graph with collectives (tensor parallelism) runs them on torch's
      // process groups.
      rt::Communicator *communicator =
          artifact.collectives.empty() ? nullptr : &torchCommunicator();
      if (direct) {
        // On CUDA tensors the kernels go on torch's current stream, the
        // outputs come from its caching allocator (TorchAllocator).
        ExternalStream stream(*device_, tensorDevice);
        KILN_RETURN_IF_ERROR(stream.status);
        return program_->run(pointers, descs, allocator, allocated, outputs, nullptr, &versions,
                             true, communicator);
      }
      rt::Status uploaded = upload(args, inputs, pointers);
      if (!uploaded.ok())
        return uploaded;
      return program_->run(pointers, descs, deviceAllocator, allocated, outputs, nullptr,
                           &versions, true, communicator);
    }();
    if (status.ok() && !direct)
      status = download(inputs, allocated, outputs);
    // A failed kernel check is the user's error, raised as ATen raises it.
    if (status.code() == rt::StatusCode::IndexOutOfRange)
      throw py::index_error(status.message());
    if (status.code() == rt::StatusCode::OutOfMemory) {
      PyErr_SetString(PyExc_MemoryError, ("kiln: running graph '" + artifact.graphName +
                                          "': " + status.message()).c_str());
      throw py::error_already_set();
    }
    if (!status.ok())
      throw std::runtime_error("kiln: running graph '" + artifact.graphName +
                               "' failed: " + status.message());
    std::vector<at::Tensor> results;
    results.reserve(outputs.size());
    for (const rt::OutputRef &out : outputs) {
      const at::Tensor &base =
          out.buffer >= 0 ? static_cast<TorchBuffer &>(*allocated[out.buffer]).tensor
                          : inputs[out.input];
      int64_t itemSize = (int64_t)rt::dtypeSize(out.type.dtype);
      const std::vector<int64_t> &shape = out.type.shape;
      if (out.byteOffset == 0 && base.sizes().equals(shape) &&
          base.scalar_type() == scalarTypeOf(out.type.dtype) && out.buffer >= 0)
        results.push_back(base);
      else if (out.byteOffset == 0 && base.numel() == out.type.numElements() &&
               base.scalar_type() == scalarTypeOf(out.type.dtype))
        results.push_back(base.view(shape));
      else
        results.push_back(base.as_strided(shape, contiguousStrides(shape),
                                          base.storage_offset() + out.byteOffset / itemSize));
      size_t index = results.size() - 1;
      if (index < layouts_.size() && layouts_[index])
        results.back() = applyLayout(std::move(results.back()), *layouts_[index], args, results);
    }
    return results;
  }

  /// The version counters of the inputs the cached launches (packed
  /// weights) read, and, for a call that runs those launches, the tensors
  /// themselves, to keep their memory from passing to another tensor while
  /// results made from them are kept. An input copied to be contiguous (new
  /// memory every call) or an inference tensor (no version counter) is
  /// untracked: its launches run every call. (`args` outlives the run.)
  rt::InputVersions versionsOf(const std::vector<at::Tensor> &args) const {
    rt::InputVersions versions;
    const std::vector<uint32_t> &reads = program_->cachedReads();
    if (reads.empty())
      return versions;
    versions.values.assign(args.size(), rt::InputVersions::kUntracked);
    for (uint32_t i : reads)
      if (i < args.size() && args[i].is_contiguous() && !args[i].is_inference())
        versions.values[i] = args[i]._version();
    versions.keepAlive = [&args, &reads]() -> std::shared_ptr<const void> {
      auto held = std::make_shared<std::vector<at::Tensor>>();
      for (uint32_t i : reads)
        if (i < args.size())
          held->push_back(args[i]);
      return held;
    };
    return versions;
  }

  /// One entry per output: a layout dict (kiln.layout.OutputLayout.to_dict)
  /// or None to return the output row-major.
  void setOutputLayouts(const py::list &layouts) {
    const rt::Artifact &artifact = program_->artifact();
    if (layouts.size() != artifact.outputs.size())
      throw py::value_error("graph '" + artifact.graphName + "' has " +
                            std::to_string(artifact.outputs.size()) + " outputs, got " +
                            std::to_string(layouts.size()) + " layouts");
    std::vector<std::optional<OutputLayout>> parsed;
    for (size_t i = 0; i < layouts.size(); ++i) {
      if (layouts[i].is_none()) {
        parsed.emplace_back();
        continue;
      }
      OutputLayout layout = layoutFromDict(layouts[i].cast<py::dict>());
      const rt::TensorDesc &type = artifact.buffers[artifact.outputs[i]].type;
      if (!layout.order.empty()) {
        std::vector<int64_t> sorted = layout.order;
        std::sort(sorted.begin(), sorted.end());
        for (size_t d = 0; d < sorted.size(); ++d)
          if (sorted[d] != (int64_t)d || sorted.size() != type.shape.size())
            throw py::value_error("output " + std::to_string(i) + " of graph '" +
                                  artifact.graphName + "': the layout order does not fit it");
        parsed.push_back(std::move(layout));
        continue;
      }
      int64_t numel = 1;
      for (int64_t n : layout.sizes)
        numel *= n;
      if (numel != type.numElements() || layout.aliasInput >= (int64_t)artifact.numInputs() ||
          layout.aliasOutput >= (int64_t)i)
        throw py::value_error("output " + std::to_string(i) + " of graph '" +
                              artifact.graphName + "': the layout does not fit it");
      parsed.push_back(std::move(layout));
    }
    layouts_ = std::move(parsed);
  }

  const rt::Program &program() const { return *program_; }
  std::string deviceDescription() const { return device_->describe(); }
  int64_t bytesUploaded() const { return bytesUploaded_; }
  int64_t bytesDownloaded() const { return bytesDownloaded_; }

private:
  /// Copies the inputs to device memory (those unchanged since the last
  /// call stay), replacing `pointers` with their device addresses.
  rt::Status upload(const std::vector<at::Tensor> &args, const std::vector<at::Tensor> &inputs,
                    std::vector<void *> &pointers) const {
    std::lock_guard<std::mutex> lock(residentMutex_);
    resident_.resize(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) {
      const at::Tensor &input = inputs[i];
      size_t bytes = input.numel() * input.element_size();
      ResidentInput &copy = resident_[i];
      // Tracked: the caller's own tensor (not a contiguous copy made for
      // this call) with a version counter.
      bool tracked = input.is_same(args[i]) && !args[i].is_inference();
      int64_t version = tracked ? (int64_t)args[i]._version() : -1;
      if (copy.memory && copy.bytes == bytes && tracked && copy.host == input.data_ptr() &&
          copy.version == version) {
        pointers[i] = copy.memory.address();
        continue;
      }
      if (!copy.memory || copy.bytes != bytes) {
        rt::StatusOr<rt::DeviceBuffer> memory = device_->allocate(bytes);
        if (!memory.ok())
          return memory.status().withContext("input " + std::to_string(i));
        copy.memory = std::move(*memory);
        copy.bytes = bytes;
      }
      if (bytes)
        KILN_RETURN_IF_ERROR(device_->copyHostToDevice(copy.memory.address(), input.data_ptr(), bytes)
                                 .withContext("uploading input " + std::to_string(i)));
      bytesUploaded_ += bytes;
      copy.host = tracked ? input.data_ptr() : nullptr;
      copy.version = version;
      pointers[i] = copy.memory.address();
    }
    return rt::Status::OK();
  }

  /// Copies the outputs to tensors: each allocated buffer an output uses
  /// becomes a CPU tensor in `allocated`, and an input the graph wrote in
  /// place is copied back into the caller's tensor.
  rt::Status download(const std::vector<at::Tensor> &inputs,
                      std::vector<std::shared_ptr<rt::Buffer>> &allocated,
                      const std::vector<rt::OutputRef> &outputs) const {
    std::vector<bool> done(allocated.size()), inputDone(inputs.size());
    for (const rt::OutputRef &out : outputs) {
      if (out.buffer >= 0 && !done[out.buffer]) {
        done[out.buffer] = true;
        auto &memory = static_cast<DeviceTensorBuffer &>(*allocated[out.buffer]);
        at::Tensor host = at::empty(memory.desc.shape,
                                    at::TensorOptions().dtype(scalarTypeOf(memory.desc.dtype)));
        size_t bytes = (size_t)memory.desc.byteSize();
        if (bytes)
          KILN_RETURN_IF_ERROR(device_->copyDeviceToHost(host.data_ptr(), memory.data(), bytes)
                                   .withContext("downloading an output"));
        bytesDownloaded_ += bytes;
        allocated[out.buffer] = std::make_shared<TorchBuffer>(std::move(host));
      } else if (out.buffer < 0 && !inputDone[out.input]) {
        inputDone[out.input] = true;
        const at::Tensor &input = inputs[out.input];
        size_t bytes = input.numel() * input.element_size();
        std::lock_guard<std::mutex> lock(residentMutex_);
        ResidentInput &copy = resident_[out.input];
        if (bytes)
          KILN_RETURN_IF_ERROR(
              device_->copyDeviceToHost(input.data_ptr(), copy.memory.address(), bytes)
                  .withContext("downloading input " + std::to_string(out.input)));
        bytesDownloaded_ += bytes;
        copy.host = nullptr; // written here: upload it again next call
      }
    }
    return rt::Status::OK();
  }

  std::unique_ptr<rt::Program> program_;
  /// The torch device of the results: CPU, or the eager kiln device when the
  /// inputs are on it. A program takes kiln tensors where it runs on the
  /// kiln device's runtime device (host memory for the CPU driver).
  c10::Device tensorDeviceOf(const std::vector<at::Tensor> &args) const {
    std::optional<c10::Device> kiln;
    for (size_t i = 0; i < args.size(); ++i) {
      c10::Device device = args[i].device();
      if (device.is_cpu())
        continue;
      if (device.is_cuda()) {
        // CUDA tensors run in place where the kernels are the runtime's
        // CUDA driver's (target "cuda"): the same GPU's memory.
        if (device_->driverName() != "cuda")
          throw std::runtime_error(
              "kiln: graph '" + program_->artifact().graphName + "' input " + std::to_string(i) +
              " is on " + device.str() + ", but this graph's kernels run on the runtime's " +
              std::string(device_->driverName()) + " driver (compile with target=\"cuda\")");
      } else if (!device.is_privateuseone()) {
        throw std::runtime_error("kiln: graph '" + program_->artifact().graphName + "' input " +
                                 std::to_string(i) + " is on " + device.str() +
                                 "; Kiln takes CPU, CUDA and kiln tensors");
      } else if (!eager::isRegistered() || device_ != &eager::eagerRuntimeDevice())
        throw std::runtime_error(
            "kiln: graph '" + program_->artifact().graphName + "' input " + std::to_string(i) +
            " is on " + device.str() + ", whose memory is the runtime's " +
            (eager::isRegistered() ? std::string(eager::eagerRuntimeDevice().driverName()) : "?") +
            " driver's, but this graph's kernels run on its " + std::string(device_->driverName()) +
            " driver (compile for the kiln device's target: KILN_DEVICE sets both)");
      if (kiln && *kiln != device)
        throw std::runtime_error("kiln: graph '" + program_->artifact().graphName +
                                 "' has inputs on " + kiln->str() + " and " + device.str());
      kiln = device;
    }
    return kiln.value_or(c10::Device(c10::kCPU));
  }

  rt::Device *device_ = nullptr;
  bool onHost_ = true;
  mutable std::mutex residentMutex_;
  mutable std::vector<ResidentInput> resident_;
  mutable std::atomic<int64_t> bytesUploaded_{0}, bytesDownloaded_{0};
  std::vector<std::optional<OutputLayout>> layouts_;
};

} // namespace

runtime::Device &cpuRuntimeDevice() { return device(); }

runtime::Device &runtimeDevice(const std::string &driver) {
  if (driver == "cpu")
    return device();
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<rt::Device>> devices;
  std::lock_guard<std::mutex> lock(mutex);
  std::unique_ptr<rt::Device> &made = devices[driver];
  if (!made) {
    auto created = rt::createDevice(driver);
    if (!created.ok()) {
      devices.erase(driver);
      throw std::runtime_error("no " + driver + " device: " + created.status().message());
    }
    made = std::move(*created);
  }
  return *made;
}

void initRuntime(py::module_ m) {
  py::class_<Executable>(m, "Executable")
      .def(py::init<const py::bytes &, const std::optional<std::string> &>(),
           py::arg("artifact"), py::arg("graph_name") = py::none(),
           "Load an artifact; raises ValueError if it is corrupt or incompatible. "
           "graph_name, if given, replaces the graph's name in messages (an artifact "
           "from the compile cache was compiled under another graph's name).")
      .def("run", &Executable::run, py::arg("inputs"),
           "Run on a list of CPU tensors; returns the outputs as new tensors.")
      .def("set_output_layouts", &Executable::setOutputLayouts, py::arg("layouts"),
           "Return each output laid out as eager would (sizes, strides, storage "
           "offset, aliasing of inputs); see kiln/layout.py.")
      .def_property_readonly("num_inputs",
                             [](const Executable &e) { return e.program().artifact().numInputs(); })
      .def_property_readonly("num_outputs",
                             [](const Executable &e) { return e.program().artifact().outputs.size(); })
      .def_property_readonly("num_kernels",
                             [](const Executable &e) { return e.program().artifact().kernels.size(); })
      .def_property_readonly("arena_bytes",
                             [](const Executable &e) { return e.program().arenaBytes(); },
                             "Bytes of the arenas this executable holds between calls (its "
                             "intermediates; one arena per call that ran at once).")
      .def_property_readonly("cached_runs",
                             [](const Executable &e) { return e.program().cachedRuns(); },
                             "How many calls ran the cached launches (weights packed into "
                             "panels): the first, then those whose weights had changed.")
      .def_property_readonly("overlapped_launches",
                             [](const Executable &e) {
                               return e.program().launchesOverlappingCollectives();
                             },
                             "Launches that run while one of the graph's collectives is in "
                             "flight, summed over its collectives.")
      .def_property_readonly("persistent_bytes",
                             [](const Executable &e) { return e.program().persistentBytes(); },
                             "Bytes of the buffers kept for the executable's life (packed "
                             "weights).")
      .def_property_readonly("outputs_in_inputs",
                             [](const Executable &e) {
                               // Output index -> the input whose buffer it is (an
                               // input overwritten in place, or returned as is).
                               const rt::Artifact &a = e.program().artifact();
                               py::dict result;
                               for (size_t i = 0; i < a.outputs.size(); ++i)
                                 if (a.buffers[a.outputs[i]].kind == rt::BufferKind::Input)
                                   result[py::int_(i)] = a.buffers[a.outputs[i]].source;
                               return result;
                             },
                             "{output: input} for the outputs that are input buffers.")
      .def_property_readonly("bytes_uploaded", &Executable::bytesUploaded,
                             "Bytes copied to the device's memory so far (0 on the CPU): "
                             "inputs, except unchanged ones (parameters) after the first call.")
      .def_property_readonly("bytes_downloaded", &Executable::bytesDownloaded,
                             "Bytes copied back from the device's memory so far: outputs, and "
                             "inputs the graph wrote in place.")
      .def_property_readonly("device",
                             [](const Executable &e) { return e.deviceDescription(); },
                             "The device the kernels run on, in words.")
      .def_property_readonly("metadata",
                             [](const Executable &e) { return e.program().artifact().metadata; });
  m.def("num_threads", [] { return device().threadPool()->activeThreads(); },
        "Threads a call uses: KILN_NUM_THREADS, else torch.get_num_threads().");
}

} // namespace kiln::python
