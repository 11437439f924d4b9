"""Support decisions and graph splitting (no kiln._C needed)."""

from __future__ import annotations

import os

import pytest
import torch
import torch.nn.functional as F

from kiln.partition import KilnSupport, find_unsupported, has_compute, partition_graph
from kiln_test_utils import capture_aten, line_of

pytestmark = pytest.mark.unit

THIS_FILE = os.path.abspath(__file__)
ELEMENTWISE = {"aten.mul.Tensor", "aten.add.Tensor", "aten.relu.default", "aten.sub.Tensor"}


def with_unsupported(x):
    y = x * 2 + 1
    z = torch.special.bessel_j0(y)  # kiln-test: unsupported
    return z.relu() - 1


def test_unsupported_op_reported_with_reason_and_line():
    (gm,) = capture_aten(with_unsupported, torch.randn(4, 3))
    (u,) = find_unsupported(gm, KilnSupport(ELEMENTWISE))
    assert u.op == "aten.special_bessel_j0.default"
    assert u.reason == "op not supported by Kiln"
    assert (u.loc.file, u.loc.line) == (THIS_FILE, line_of("# " + "kiln-test: unsupported", THIS_FILE))
    assert u.describe().startswith(f"aten.special_bessel_j0.default at {THIS_FILE}:{u.loc.line} (`z = torch.special.bessel_j0(y)")


def test_everything_supported():
    (gm,) = capture_aten(with_unsupported, torch.randn(4, 3))
    assert find_unsupported(gm, KilnSupport(ELEMENTWISE | {"aten.special_bessel_j0.default"})) == []


def test_unsupported_dtype():
    (gm,) = capture_aten(lambda x: x * 2, torch.randn(3).to(torch.int16))
    (u,) = find_unsupported(gm, KilnSupport(ELEMENTWISE))
    assert "int16" in u.reason and "float32, float64, float16, bfloat16, int64, int32, int8, uint8, bool" in u.reason


def test_int64_and_bool_are_supported():
    (gm,) = capture_aten(lambda x, m: x * m, torch.arange(3), torch.tensor([True, False, True]))
    assert find_unsupported(gm, KilnSupport(ELEMENTWISE)) == []


def test_wrong_device_for_target():
    """A target takes the tensors of the devices its runtime driver reaches:
    CPU tensors for cuda (copied, as for Vulkan), none for the compile-only
    rocm targets."""
    (gm,) = capture_aten(lambda x: x * 2, torch.randn(3))
    (u,) = find_unsupported(gm, KilnSupport(ELEMENTWISE, target="rocm:gfx942"))
    assert "device cpu" in u.reason
    assert find_unsupported(gm, KilnSupport(ELEMENTWISE, target="cuda:sm_90")) == []


def test_symbolic_shapes_unsupported():
    (gm,) = capture_aten(lambda x: x * 2, torch.randn(4, 3), dynamic=True)
    found = find_unsupported(gm, KilnSupport(ELEMENTWISE))
    assert found and all("symbolic" in u.reason for u in found)


def test_getitem_follows_its_producer():
    fn = lambda x: F.layer_norm(x, (4,)) + 1  # noqa: E731
    (gm,) = capture_aten(fn, torch.randn(2, 4))
    assert find_unsupported(gm, KilnSupport(ELEMENTWISE | {"aten.native_layer_norm.default"})) == []
    (u,) = find_unsupported(gm, KilnSupport(ELEMENTWISE))  # the getitem is not reported
    assert u.op == "aten.native_layer_norm.default"


def test_partition_splits_around_unsupported_op_and_still_computes():
    x = torch.randn(4, 3)
    (gm,) = capture_aten(with_unsupported, x)
    split, names = partition_graph(gm, KilnSupport(ELEMENTWISE))
    assert len(names) == 2
    calls = [n for n in split.graph.nodes if n.op == "call_function"]
    assert any(str(n.target) == "aten.special_bessel_j0.default" for n in calls)
    for name in names:
        sub = getattr(split, name)
        assert all(str(n.target) in ELEMENTWISE for n in sub.graph.nodes if n.op == "call_function")
    torch.testing.assert_close(split(x)[0], with_unsupported(x))


def test_view_only_partitions_stay_eager():
    fn = lambda x: torch.special.bessel_j0(x).t()  # noqa: E731
    (gm,) = capture_aten(fn, torch.randn(4, 3))
    split, names = partition_graph(gm, KilnSupport({"aten.permute.default"}))
    assert names == []


def test_has_compute():
    (gm,) = capture_aten(lambda x: x.t().reshape(-1), torch.randn(4, 3))
    nodes = list(gm.graph.nodes)
    views = [n for n in nodes if str(n.target) in ("aten.permute.default", "aten.view.default")]
    assert not has_compute(views)
    assert has_compute(nodes)  # the reshape of a transpose copies (aten.clone)
