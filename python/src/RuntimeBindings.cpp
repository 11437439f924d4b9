// kiln._C.runtime: the torch <-> runtime bridge. The only file that includes
// torch: inputs are passed to kernels by pointer and outputs are allocated as
// torch tensors through the runtime's allocator interface, so nothing is
// copied (except non-contiguous inputs, which are made contiguous first).
#include "Bindings.h"

#include "kiln/runtime/Runtime.h"

#include <torch/extension.h>

namespace py = pybind11;
namespace rt = kiln::runtime;

namespace kiln::python {
namespace {

std::optional<rt::DType> dtypeOf(at::ScalarType type) {
  switch (type) {
  case at::kFloat: return rt::DType::F32;
  case at::kDouble: return rt::DType::F64;
  case at::kLong: return rt::DType::I64;
  case at::kInt: return rt::DType::I32;
  case at::kBool: return rt::DType::Bool;
  default: return std::nullopt;
  }
}

at::ScalarType scalarTypeOf(rt::DType dtype) {
  switch (dtype) {
  case rt::DType::F32: return at::kFloat;
  case rt::DType::F64: return at::kDouble;
  case rt::DType::I64: return at::kLong;
  case rt::DType::I32: return at::kInt;
  case rt::DType::Bool: return at::kBool;
  }
  return at::kFloat;
}

std::vector<int64_t> contiguousStrides(const std::vector<int64_t> &shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (int64_t i = (int64_t)shape.size() - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * std::max<int64_t>(shape[i + 1], 1);
  return strides;
}

class TorchBuffer : public rt::Buffer {
public:
  explicit TorchBuffer(at::Tensor tensor) : tensor(std::move(tensor)) {}
  void *data() override {
    // Empty tensors have no storage; kernels never touch it, but the runtime
    // wants every buffer to have an address.
    static int64_t emptyStorage;
    void *data = tensor.data_ptr();
    return data ? data : &emptyStorage;
  }
  at::Tensor tensor;
};

/// Buffers are torch tensors, so outputs are returned without a copy.
class TorchAllocator : public rt::Allocator {
public:
  rt::StatusOr<std::shared_ptr<rt::Buffer>> allocate(const rt::TensorDesc &desc) override {
    // Allocated in the buffer's own shape: an output that is a whole buffer
    // is returned as is, without a view.
    at::Tensor t = at::empty(desc.shape, at::TensorOptions().dtype(scalarTypeOf(desc.dtype)));
    return std::shared_ptr<rt::Buffer>(std::make_shared<TorchBuffer>(std::move(t)));
  }
};

rt::CpuDevice &device() {
  static rt::CpuDevice cpu; // KILN_NUM_THREADS or all cores
  return cpu;
}

class Executable {
public:
  explicit Executable(const py::bytes &bytes) {
    std::string_view data = bytes;
    rt::Artifact artifact;
    rt::Status status = rt::parseArtifact(
        reinterpret_cast<const uint8_t *>(data.data()), data.size(), artifact);
    if (!status.ok())
      throw py::value_error("invalid Kiln artifact: " + status.message());
    auto program = rt::Program::load(std::move(artifact), device());
    if (!program.ok())
      throw py::value_error("cannot load Kiln artifact: " + program.status().message());
    program_ = std::move(*program);
  }

  std::vector<at::Tensor> run(const std::vector<at::Tensor> &args) const {
    const rt::Artifact &artifact = program_->artifact();
    std::vector<at::Tensor> inputs;
    inputs.reserve(args.size());
    std::vector<void *> pointers;
    std::vector<rt::TensorDesc> descs;
    for (size_t i = 0; i < args.size(); ++i) {
      const at::Tensor &arg = args[i];
      auto dtype = dtypeOf(arg.scalar_type());
      if (!dtype)
        throw std::runtime_error("kiln: graph '" + artifact.graphName + "' input " +
                                 std::to_string(i) + " has unsupported dtype " +
                                 std::string(c10::toString(arg.scalar_type())));
      if (arg.device().type() != c10::DeviceType::CPU)
        throw std::runtime_error("kiln: input " + std::to_string(i) + " is on " +
                                 arg.device().str() + "; this artifact runs on the CPU");
      at::Tensor input = arg.is_contiguous() ? arg : arg.contiguous();
      pointers.push_back(input.data_ptr());
      descs.push_back({*dtype, input.sizes().vec()});
      inputs.push_back(std::move(input));
    }
    TorchAllocator allocator;
    std::vector<std::shared_ptr<rt::Buffer>> allocated;
    std::vector<rt::OutputRef> outputs;
    rt::Status status = [&] {
      py::gil_scoped_release release;
      return program_->run(pointers, descs, allocator, allocated, outputs);
    }();
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
    }
    return results;
  }

  const rt::Program &program() const { return *program_; }

private:
  std::unique_ptr<rt::Program> program_;
};

} // namespace

void initRuntime(py::module_ m) {
  py::class_<Executable>(m, "Executable")
      .def(py::init<const py::bytes &>(), py::arg("artifact"),
           "Load an artifact; raises ValueError if it is corrupt or incompatible.")
      .def("run", &Executable::run, py::arg("inputs"),
           "Run on a list of CPU tensors; returns the outputs as new tensors.")
      .def_property_readonly("num_inputs",
                             [](const Executable &e) { return e.program().artifact().numInputs(); })
      .def_property_readonly("num_outputs",
                             [](const Executable &e) { return e.program().artifact().outputs.size(); })
      .def_property_readonly("num_kernels",
                             [](const Executable &e) { return e.program().artifact().kernels.size(); })
      .def_property_readonly("metadata",
                             [](const Executable &e) { return e.program().artifact().metadata; });
  m.def("num_threads", [] { return device().pool().size(); });
}

} // namespace kiln::python
