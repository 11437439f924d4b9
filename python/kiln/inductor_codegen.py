"""Inductor's code generation for the kiln device, which PyTorch's default
torch.compile backend looks up on the device module (torch.kiln.Scheduling
and the wrapper classes) the first time it compiles a graph.

The kiln device's memory is the CPU driver's host memory, so Inductor's CPU
code (C++ kernels over data pointers) runs on kiln tensors as it does on CPU
tensors: the scheduling is Inductor's CPU scheduling, and the wrapper calls
the kernels as CPU kernels while it allocates on the kiln device. Imported
only then, so `import kiln.device` does not import Inductor.
"""

from __future__ import annotations

import torch
from torch._inductor.codegen.common import register_device_op_overrides
from torch._inductor.codegen.cpp import CppScheduling
from torch._inductor.codegen.cpp_wrapper_cpu import CppWrapperCpu
from torch._inductor.codegen.cpu_device_op_overrides import CpuDeviceOpOverrides
from torch._inductor.codegen.wrapper import PythonWrapperCodegen
from torch._inductor.codegen.wrapper_fxir import WrapperFxCodegen

__all__ = ["CppWrapperCodegen", "KilnPythonWrapperCodegen", "Scheduling", "WrapperFxCodegen"]

Scheduling = CppScheduling
CppWrapperCodegen = CppWrapperCpu


class KilnPythonWrapperCodegen(PythonWrapperCodegen):
    @staticmethod
    def create(is_subgraph, subgraph_name, parent_wrapper, partition_signatures=None):
        if is_subgraph:
            return PythonWrapperCodegen.create(is_subgraph, subgraph_name, parent_wrapper, partition_signatures)
        return KilnPythonWrapperCodegen()

    def _generate_kernel_call_helper(self, kernel_name, call_args, *, device=None, **kwargs):
        from torch._inductor.virtualized import V

        device = device or V.graph.get_current_device_or_throw()
        if device.type == "kiln":
            device = torch.device("cpu")  # the kernels are CPU code over host memory
        super()._generate_kernel_call_helper(kernel_name, call_args, device=device, **kwargs)


register_device_op_overrides("kiln", CpuDeviceOpOverrides())
