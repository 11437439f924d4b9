#include "Bindings.h"

PYBIND11_MODULE(_C, m) {
  m.doc() = "Kiln compiler and runtime bindings";
  kiln::python::initCompiler(m, m.def_submodule("compiler", "The Kiln compiler"));
  kiln::python::initRuntime(m.def_submodule("runtime", "The Kiln runtime"));
  kiln::python::initEagerDevice(m.def_submodule("device", "The kiln eager device"));
}
