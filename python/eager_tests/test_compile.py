"""torch.compile on kiln tensors: backend="kiln" runs Kiln's compiled
kernels on the device's memory without copies; the default backend
(Inductor) generates its CPU code for it."""

from __future__ import annotations

import pytest
import torch

import kiln
import kiln.device
from kiln.testing import training

pytestmark = pytest.mark.e2e


def mlp() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 4))


@pytest.mark.parametrize("batch", [8, 3])
def test_kiln_backend_runs_kiln_kernels_on_kiln_tensors(batch):
    model = mlp()
    x = torch.randn(batch, 16)
    with torch.no_grad():
        expected = model(x)
    compiled = torch.compile(model.to("kiln"), backend="kiln", options={"fallback": "error"})
    kiln.reset()
    compiled(x.to("kiln"))  # compiles
    on_kiln = x.to("kiln")
    kiln.device.reset_stats()
    result = compiled(on_kiln)
    stats = kiln.device.stats()
    # The graph reads its inputs and parameters where they are, and writes
    # its results into new kiln memory: no copies, no ATen kernels.
    assert "aten::_copy_from" not in stats["native"]
    assert stats["fallback_calls"] == 0
    assert result.device == torch.device("kiln:0")
    torch.testing.assert_close(result.cpu(), expected, rtol=1e-4, atol=1e-5)
    records = kiln.compile_records()
    assert records and all(r.status == "compiled" and r.kernel_count > 0 for r in records)


def test_kiln_backend_trains_on_the_device_as_eager_on_cpu():
    case = training.mlp(6)
    losses = {}
    for device in ("cpu", "kiln"):
        model = training.mlp(6).model.to(device)
        step = torch.compile(lambda m, x, y: case.loss(m, x, y), backend="kiln", options={"fallback": "error"}) \
            if device == "kiln" else case.loss
        optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
        inputs = [t.to(device) for t in case.inputs]
        losses[device] = []
        for _ in range(4):
            loss = step(model, *inputs)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses[device].append(loss.item())
        assert all(p.device.type == device for p in model.parameters())
    assert losses["kiln"] == pytest.approx(losses["cpu"], rel=1e-4)
    assert any(r.kind == "backward" and r.status == "compiled" for r in kiln.compile_records())


@pytest.mark.skipif(kiln.device.driver() != "cpu",
                    reason="Inductor's CPU code needs host memory (test_vulkan_driver.py checks its error)")
def test_default_backend_generates_cpu_code_for_the_kiln_device():
    torch._dynamo.reset()
    fn = torch.compile(lambda a, b: (a.sin() * b + 1).sum(dim=1))
    a, b = torch.randn(5, 7), torch.randn(5, 7)
    result = fn(a.to("kiln"), b.to("kiln"))
    assert result.device.type == "kiln"
    torch.testing.assert_close(result.cpu(), (a.sin() * b + 1).sum(dim=1))
