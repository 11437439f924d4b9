#ifndef KILN_PYTHON_BINDINGS_H
#define KILN_PYTHON_BINDINGS_H

#include <pybind11/pybind11.h>

namespace kiln::python {
void initCompiler(pybind11::module_ &root, pybind11::module_ m);
void initRuntime(pybind11::module_ m);
void initEagerDevice(pybind11::module_ m);
void initEagerCollectives(pybind11::module_ m);
} // namespace kiln::python

#endif
