// kiln._C.device: what python/kiln/device.py builds torch.kiln from.
#include "../Bindings.h"
#include "EagerDevice.h"

#include "kiln/runtime/Device.h"

#include <torch/csrc/Generator.h>
#include <pybind11/stl.h>
#include <torch/extension.h>

namespace py = pybind11;

namespace kiln::python {

void initEagerDevice(py::module_ m) {
  using namespace eager;
  m.def("register", &registerEagerDevice, py::arg("device_count"), py::arg("driver"),
        "Registers the kiln device (PrivateUse1) with PyTorch, its memory and kernels on the "
        "runtime driver named; idempotent.");
  m.def("driver", [] { return std::string(eagerRuntimeDevice().driverName()); });
  m.def("describe", [] { return eagerRuntimeDevice().describe(); });
  m.def("is_registered", &isRegistered);
  m.attr("max_devices") = static_cast<int>(kMaxDevices);
  m.def("device_count", [] { return (int)deviceCount(); });
  m.def("current_device", [] { return (int)currentDevice(); });
  m.def("set_device", [](int index) { setCurrentDevice((c10::DeviceIndex)index); });
  m.def("synchronize", [] {
    runtime::Status status = eagerRuntimeDevice().synchronize();
    if (!status.ok())
      throw std::runtime_error("kiln: synchronize: " + status.message());
  });
  m.def(
      "default_generator",
      [](int index) {
        return py::reinterpret_steal<py::object>(
            THPGenerator_initDefaultGenerator(defaultGenerator((c10::DeviceIndex)index)));
      },
      py::arg("index"));
  m.def("register_kernels", &registerEagerKernels, py::arg("ops"), py::arg("compile"),
        "Runs these overloads (op, overload, functional op, functional overload, pointwise) as Kiln "
        "kernels.");
  m.def("kernel_calls", &kernelCalls);
  m.def("kernel_refusals", &kernelRefusals);
  m.def("declined_calls", &declinedCalls);
  m.def("kernels_loaded", &kernelsLoaded);
  m.def("fallback_calls", &fallbackCalls);
  m.def("native_calls", &nativeCalls);
  m.def("reset_op_stats", [] {
    resetOpStats();
    resetKernelCalls();
  });
  m.def("set_fallback_policy", [](const std::string &name) {
    if (name == "allow")
      setFallbackPolicy(FallbackPolicy::Allow);
    else if (name == "warn")
      setFallbackPolicy(FallbackPolicy::Warn);
    else if (name == "error")
      setFallbackPolicy(FallbackPolicy::Error);
    else
      throw py::value_error("fallback policy must be 'allow', 'warn' or 'error'; got '" + name + "'");
  });
  m.def("fallback_policy", [] {
    switch (fallbackPolicy()) {
    case FallbackPolicy::Warn: return "warn";
    case FallbackPolicy::Error: return "error";
    default: return "allow";
    }
  });
  initEagerCollectives(m);
}

} // namespace kiln::python
