#include "Bindings.h"

namespace py = pybind11;

#ifndef KILN_WITH_COMPILER
namespace {
/// A build without the compiler (KILN_ENABLE_COMPILER=OFF) still has
/// kiln._C.compiler and CompileError, so that what asks for a compile gets
/// this error rather than an AttributeError.
void initAbsentCompiler(py::module_ &root, py::module_ m) {
  static py::exception<std::runtime_error> compileError(root, "CompileError",
                                                        PyExc_RuntimeError);
  m.attr("available") = false;
  m.def("__getattr__", [](const std::string &name) -> py::object {
    if (name.rfind("__", 0) == 0)
      throw py::attribute_error(name);
    std::string message = "this Kiln was built without its compiler (KILN_ENABLE_COMPILER=OFF): "
                          "it loads and runs artifacts compiled elsewhere "
                          "(kiln._C.runtime.Executable, kiln-run), and cannot compile (asked for "
                          "kiln._C.compiler." + name + ")";
    PyErr_SetString(compileError.ptr(), message.c_str());
    throw py::error_already_set();
  });
}
} // namespace
#endif

PYBIND11_MODULE(_C, m) {
  m.doc() = "Kiln compiler and runtime bindings";
#ifdef KILN_WITH_COMPILER
  kiln::python::initCompiler(m, m.def_submodule("compiler", "The Kiln compiler"));
#else
  initAbsentCompiler(m, m.def_submodule("compiler", "Absent: this build has no compiler"));
#endif
  kiln::python::initRuntime(m.def_submodule("runtime", "The Kiln runtime"));
  kiln::python::initEagerDevice(m.def_submodule("device", "The kiln eager device"));
}
