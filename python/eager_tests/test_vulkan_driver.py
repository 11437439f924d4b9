"""The kiln device on the runtime's Vulkan driver (KILN_DEVICE=vulkan;
lavapipe in CI): memory the host reaches only by copies, kernels compiled
for Vulkan, and the fallback through host copies. .ci/run runs this module
with the plumbing tests (test_device.py) in a process of its own with
KILN_DEVICE=vulkan; in the CPU driver's run these tests skip."""

from __future__ import annotations

import copy

import pytest
import torch

import kiln
import kiln.device
from kiln.testing import training

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(kiln.device.driver() != "vulkan",
                       reason="the kiln device is on the CPU driver (KILN_DEVICE=vulkan runs these)"),
]


def test_the_device_reports_its_driver():
    assert kiln.device.driver() == "vulkan"
    x = torch.arange(6, dtype=torch.float32).reshape(2, 3).to("kiln")
    assert x.device.type == "kiln"
    assert torch.kiln.memory_allocated() >= 24


def test_copies_keep_strides_offsets_and_dtypes():
    base = torch.arange(24, dtype=torch.float32).reshape(4, 6)
    k = base.to("kiln")
    # Views read back through the host: a transpose, a column, an offset row.
    assert torch.equal(k.t().cpu(), base.t())
    assert torch.equal(k[:, 2].cpu(), base[:, 2])
    assert torch.equal(k[1:3, 1:5].cpu(), base[1:3, 1:5])
    # Into a strided kiln view, from the CPU and from kiln memory.
    k[:, 1] = torch.tensor([-1.0, -2.0, -3.0, -4.0])
    k[0, :] = k[3, :]
    expected = base.clone()
    expected[:, 1] = torch.tensor([-1.0, -2.0, -3.0, -4.0])
    expected[0, :] = expected[3, :]
    assert torch.equal(k.cpu(), expected)
    # Conversions and scalars.
    assert torch.equal(k.to(torch.float64).cpu(), expected.double())
    assert k[2, 3].item() == expected[2, 3].item()
    assert torch.equal(k.to(torch.int64).cpu(), expected.long())


def test_kernels_run_on_the_device_and_match_the_cpu():
    a = torch.randn(33, 17)
    b = torch.randn(33, 17)
    kiln.device.reset_stats()
    result = (torch.sigmoid(a.to("kiln")) * b.to("kiln") + 0.5).sum(dim=1)
    assert torch.allclose(result.cpu(), (torch.sigmoid(a) * b + 0.5).sum(dim=1), rtol=1e-5, atol=1e-5)
    stats = kiln.device.stats()
    assert stats["kernel_calls"] >= 3 and stats["fallback_calls"] == 0, stats
    # The same kernels at another size (symbolic sizes: no new kernels).
    loaded = stats["kernels_loaded"]
    other = torch.randn(5, 9)
    assert torch.allclose(torch.sigmoid(other.to("kiln")).cpu(), torch.sigmoid(other), atol=1e-6)
    assert kiln.device.stats()["kernels_loaded"] == loaded


def test_the_fallback_copies_what_it_writes_back():
    x = torch.randn(6, 5)
    k = x.to("kiln")
    kiln.device.reset_stats()
    # An op with no Kiln kernel, in place on a view: only the view's elements change.
    view = k[1:4]
    torch.ops.aten.cummax(view, 1)  # reads only
    view.exponential_()  # random: drawn on the CPU from the kiln generator
    assert kiln.device.stats()["fallback_calls"] >= 1
    got = k.cpu()
    assert torch.equal(got[0], x[0]) and torch.equal(got[4:], x[4:])
    assert bool((got[1:4] > 0).all())
    # A fallback result that views its argument is a view of the kiln tensor.
    values, _ = torch.ops.aten.cummax(k, 0)
    assert torch.equal(values.cpu(), torch.cummax(got, 0).values)


def test_out_arguments_grow_through_the_device():
    out = torch.empty(0, device="kiln")
    torch.cumsum(torch.arange(10.0).to("kiln"), 0, out=out)
    assert out.shape == (10,)
    assert torch.equal(out.cpu(), torch.cumsum(torch.arange(10.0), 0))
    grown = torch.ones(3, device="kiln")
    grown.resize_(7)
    assert torch.equal(grown[:3].cpu(), torch.ones(3))


@pytest.mark.parametrize("name,batch", [("mlp", 8), ("mlp", 3), ("gpt2", 2)])
def test_training_loops_match_the_cpu(name, batch, assert_trains_like_cpu):
    assert_trains_like_cpu(getattr(training, name)(batch), steps=3, kernel_share=0.9)


def test_compile_on_the_device_runs_vulkan_kernels():
    model = torch.nn.Sequential(torch.nn.Linear(12, 16), torch.nn.GELU(), torch.nn.Linear(16, 4))
    x = torch.randn(5, 12)
    expected = model(x)
    on_kiln = copy.deepcopy(model).to("kiln")
    compiled = torch.compile(on_kiln, backend="kiln", options={"fallback": "error"})
    kiln.reset()
    with torch.no_grad():
        result = compiled(x.to("kiln"))
    assert result.device.type == "kiln"
    assert torch.allclose(result.cpu(), expected.detach(), rtol=1e-4, atol=1e-5)
    records = kiln.compile_records()
    assert records and all(r.target == "vulkan" for r in records), records


def test_inductor_says_to_use_the_kiln_backend():
    compiled = torch.compile(torch.nn.Linear(3, 3).to("kiln"))
    with pytest.raises(Exception, match='backend="kiln"'):
        compiled(torch.randn(2, 3, device="kiln"))


def test_ops_queue_and_freed_memory_is_reused():
    x = torch.randn(1000)
    k = x.to("kiln")
    # Many ops queue without a read in between; the read sees them all.
    for _ in range(20):
        k = k * 1.5 - 0.25
    expected = x
    for _ in range(20):
        expected = expected * 1.5 - 0.25
    torch.testing.assert_close(k.cpu(), expected)
    # A freed block serves the next allocation of its size, until emptied.
    block = torch.empty(1000, device="kiln")
    address = block.data_ptr()
    del block
    assert torch.empty(1000, device="kiln").data_ptr() == address
    torch.kiln.empty_cache()
