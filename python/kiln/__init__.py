"""Kiln: a torch.compile backend compiler.

    model = torch.compile(model, backend="kiln", options={"target": "cpu"})

The "kiln" backend name is registered through the torch_dynamo_backends entry
point, so importing this package is not needed to use it.
"""

__version__ = "0.1.0"

from kiln.errors import KilnError, SerializeError, UnsupportedOpError
from kiln.options import KilnOptions
from kiln.backend import CompileRecord, compile_records, held_memory, kiln_backend, reset
from kiln.explain import Explanation, explain

__all__ = [
    "CompileRecord",
    "Explanation",
    "KilnError",
    "KilnOptions",
    "SerializeError",
    "UnsupportedOpError",
    "__version__",
    "compile_records",
    "explain",
    "held_memory",
    "kiln_backend",
    "reset",
]
