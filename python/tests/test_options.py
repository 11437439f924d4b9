"""KilnOptions, and how the backend is registered and configured (no kiln._C needed)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import kiln
from kiln.options import KilnOptions
from kiln_test_utils import unwrap_backend_error

pytestmark = pytest.mark.unit


def test_defaults():
    assert KilnOptions.from_dict(None, env={}) == KilnOptions("cpu", "eager", None)
    assert KilnOptions() == KilnOptions.from_dict({}, env={})


def test_dict_values():
    opts = KilnOptions.from_dict({"target": "cpu", "fallback": "error", "dump_dir": "/tmp/d"}, env={})
    assert opts == KilnOptions(target="cpu", fallback="error", dump_dir="/tmp/d")


def test_env_vars():
    env = {"KILN_TARGET": "cpu", "KILN_FALLBACK": "error", "KILN_DUMP_DIR": "/tmp/dump"}
    assert KilnOptions.from_dict({}, env=env) == KilnOptions("cpu", "error", "/tmp/dump")


def test_dict_overrides_env():
    env = {"KILN_FALLBACK": "error", "KILN_DUMP_DIR": "/tmp/dump"}
    opts = KilnOptions.from_dict({"fallback": "eager", "dump_dir": None}, env=env)
    assert opts == KilnOptions("cpu", "eager", None)


def test_empty_env_var_is_unset():
    assert KilnOptions.from_dict({}, env={"KILN_DUMP_DIR": "", "KILN_FALLBACK": ""}) == KilnOptions()


def test_reads_process_environment(monkeypatch):
    monkeypatch.setenv("KILN_FALLBACK", "error")
    assert KilnOptions.from_dict({}).fallback == "error"


def test_dump_dir_pathlike():
    assert KilnOptions.from_dict({"dump_dir": Path("/tmp/x")}, env={}).dump_dir == "/tmp/x"


def test_unknown_key_lists_valid_options():
    with pytest.raises(ValueError) as info:
        KilnOptions.from_dict({"targt": "cpu"}, env={})
    message = str(info.value)
    assert "'targt'" in message
    for name in ("target", "fallback", "dump_dir"):
        assert name in message


@pytest.mark.parametrize(
    "options, valid",
    [({"target": "tpu"}, ["'cpu'"]), ({"fallback": "ignore"}, ["'eager'", "'error'"])],
)
def test_bad_value_lists_valid_values(options, valid):
    with pytest.raises(ValueError) as info:
        KilnOptions.from_dict(options, env={})
    for v in valid:
        assert v in str(info.value)


def test_bad_env_value_names_the_variable():
    with pytest.raises(ValueError, match="KILN_FALLBACK.*'eager', 'error'"):
        KilnOptions.from_dict({}, env={"KILN_FALLBACK": "sometimes"})


def test_bad_dump_dir_type():
    with pytest.raises(ValueError, match="dump_dir"):
        KilnOptions(dump_dir=3)  # type: ignore[arg-type]


def test_options_not_a_dict():
    with pytest.raises(ValueError, match="dict"):
        KilnOptions.from_dict(["fallback"], env={})  # type: ignore[arg-type]


def test_backend_registered_by_entry_point():
    from torch._dynamo.backends.registry import list_backends, lookup_backend

    assert "kiln" in list_backends(exclude_tags=())
    assert lookup_backend("kiln") is kiln.kiln_backend


def test_backend_rejects_bad_options_before_compiling():
    compiled = torch.compile(lambda x: x + 1, backend="kiln", options={"fallbak": "error"})
    with pytest.raises(Exception) as info:
        compiled(torch.randn(3))
    err = unwrap_backend_error(info.value)
    assert isinstance(err, ValueError) and "fallbak" in str(err)


def test_dynamo_reset_resets_kiln():
    """torch._dynamo.reset() calls kiln_backend.reset, which forgets records and warnings."""
    kiln.backend._records.append(kiln.CompileRecord("g", "forward", "cpu"))
    compiled = torch.compile(lambda x: x, backend="kiln")  # noqa: F841  (kept alive: Dynamo caches the backend)
    torch._dynamo.reset()
    assert kiln.compile_records() == []


@pytest.mark.parametrize("raw, value", [("1", True), ("true", True), ("ON", True), ("0", False), ("no", False)])
def test_dump_inputs_env(raw, value):
    env = {"KILN_DUMP_DIR": "/tmp/dump", "KILN_DUMP_INPUTS": raw}
    assert KilnOptions.from_dict({}, env=env).dump_inputs is value


def test_dump_inputs_needs_dump_dir():
    with pytest.raises(ValueError, match="dump_inputs.*dump_dir"):
        KilnOptions.from_dict({}, env={"KILN_DUMP_INPUTS": "1"})
    with pytest.raises(ValueError, match="dump_inputs.*dump_dir"):
        KilnOptions(dump_inputs=True)
    assert KilnOptions.from_dict({"dump_dir": "d", "dump_inputs": True}, env={}).dump_inputs


def test_bad_dump_inputs_values():
    with pytest.raises(ValueError, match="KILN_DUMP_INPUTS.*'maybe'"):
        KilnOptions.from_dict({}, env={"KILN_DUMP_DIR": "d", "KILN_DUMP_INPUTS": "maybe"})
    with pytest.raises(ValueError, match="True or False"):
        KilnOptions(dump_dir="d", dump_inputs="yes")  # type: ignore[arg-type]


def test_force_eager_names_and_env():
    opts = KilnOptions.from_dict({"force_eager": ["aten.mm", "add_1"]}, env={})
    assert opts.force_eager == ("add_1", "aten.mm")
    env = {"KILN_FORCE_EAGER": "aten.mm.default, aten.relu"}
    assert KilnOptions.from_dict({}, env=env).force_eager == ("aten.mm.default", "aten.relu")
    assert KilnOptions.from_dict({"force_eager": []}, env={}).force_eager is None


def test_force_eager_predicate_and_bad_values():
    def predicate(node):
        return False

    assert KilnOptions.from_dict({"force_eager": predicate}, env={}).force_eager is predicate
    for bad in ("aten.mm", [1, 2], 3):
        with pytest.raises(ValueError, match="force_eager"):
            KilnOptions.from_dict({"force_eager": bad}, env={})


def test_target_names_are_parsed_by_the_compilers_registry():
    """One parser of target names, the compiler's: every name it accepts is an
    option (an AArch64 CPU by name too), and its error lists what it takes."""
    pytest.importorskip("kiln._C")
    for name in ("cpu", "cpu:x86-64-v3", "cpu:znver4", "cpu:aarch64", "cpu:aarch64:neoverse-n1"):
        assert KilnOptions.from_dict({"target": name}, env={}).target == name
    with pytest.raises(ValueError, match="kiln option 'target': unknown target 'cpu:aarch64:pentium4'"):
        KilnOptions.from_dict({"target": "cpu:aarch64:pentium4"}, env={})
    with pytest.raises(ValueError, match="KILN_TARGET.*unknown target 'gpu'.*'cpu:x86-64-v3'"):
        KilnOptions.from_dict({}, env={"KILN_TARGET": "gpu"})
