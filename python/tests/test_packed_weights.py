"""Matmul weights packed once (kiln-pack-weights), never served stale.

A matmul whose right-hand side is a module parameter reads it from a copy
packed into the microkernel's panel layout. The copy is made by a cached
launch on the first call and again only when the parameter changes: these
tests count those launches (Executable.cached_runs) and, after every kind of
update a user makes (in-place ops, an optimizer step, load_state_dict, a new
Parameter), check the compiled model against eager.
"""

from __future__ import annotations

import threading

import pytest
import torch

import kiln
from kiln import compiler as kiln_compiler
from kiln_test_utils import assert_kiln_ran

pytestmark = pytest.mark.e2e


class Conv1D(torch.nn.Module):
    """GPT-2's projection: x @ w + b with w stored [in, out] (B as [K, N])."""

    def __init__(self, k: int, n: int):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(k, n) / k**0.5)
        self.bias = torch.nn.Parameter(torch.randn(n))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x @ self.weight + self.bias


def mlp() -> torch.nn.Module:
    # Widths that are and are not multiples of a panel (16 or 32 floats).
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Linear(96, 200), torch.nn.GELU(), Conv1D(200, 70), torch.nn.ReLU(),
        torch.nn.Linear(70, 33),
    ).eval()


def compile_model(model: torch.nn.Module, **options):
    options.setdefault("fallback", "error")
    return torch.compile(model, backend="kiln", options=options, dynamic=False)


def new_executables(before: set[int]) -> list:
    return [e for e in kiln_compiler.executables() if id(e) not in before]


def check(compiled, model, x: torch.Tensor) -> None:
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("rows", [1, 5, 64, 130])
def test_weights_are_packed_on_the_first_call_only(rows):
    model = mlp()
    before = {id(e) for e in kiln_compiler.executables()}
    start = len(kiln.compile_records())
    compiled = compile_model(model)
    x = torch.randn(rows, 96)
    for _ in range(3):
        check(compiled, model, x)
    records = kiln.compile_records()[start:]
    assert [r.status for r in records] == ["compiled"]
    # Three weights, each packed into whole panels: Kiln packed them.
    assert records[0].packed_weight_bytes >= (192 + 64 + 32) * 4 * 16, records[0]
    exes = new_executables(before)
    assert [e.cached_runs for e in exes] == [1]
    check(compiled, model, torch.randn(rows, 96))  # new activations: still packed
    assert [e.cached_runs for e in exes] == [1]


def updates():
    def in_place(model):
        with torch.no_grad():
            model[0].weight.mul_(-0.5)
            model[2].weight.add_(1.0)

    def copy(model):
        with torch.no_grad():
            model[4].weight.copy_(torch.randn_like(model[4].weight))

    def state_dict(model):
        other = mlp()
        with torch.no_grad():
            for p in other.parameters():
                p.mul_(3.0)
        model.load_state_dict(other.state_dict())

    def optimizer_step(model):
        optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
        model(torch.randn(4, 96)).square().sum().backward()
        optimizer.step()
        optimizer.zero_grad()

    return [in_place, copy, state_dict, optimizer_step]


@pytest.mark.parametrize("update", updates(), ids=lambda f: f.__name__)
def test_an_updated_weight_is_repacked(update):
    model = mlp()
    before = {id(e) for e in kiln_compiler.executables()}
    compiled = compile_model(model)
    x = torch.randn(40, 96)
    check(compiled, model, x)
    exes = new_executables(before)
    update(model)  # eagerly, outside the compiled function
    check(compiled, model, x)
    assert sum(e.cached_runs for e in exes) == 2
    check(compiled, model, x)  # and packed once more only
    assert sum(e.cached_runs for e in exes) == 2
    assert_kiln_ran(strict=True)


def test_a_new_parameter_object_is_never_served_stale():
    model = mlp()
    compiled = compile_model(model)
    x = torch.randn(9, 96)
    check(compiled, model, x)
    model[0].weight = torch.nn.Parameter(torch.randn(200, 96))
    check(compiled, model, x)
    assert_kiln_ran(strict=True)


def test_pack_weights_off_packs_nothing():
    model = mlp()
    start = len(kiln.compile_records())
    compiled = compile_model(model, pack_weights=False)
    check(compiled, model, torch.randn(16, 96))
    assert [r.packed_weight_bytes for r in kiln.compile_records()[start:]] == [0]
    assert_kiln_ran(start, strict=True)


def test_symbolic_rows_read_the_packed_panels():
    model = mlp()
    compiled = torch.compile(model, backend="kiln", options={"fallback": "error"}, dynamic=True)
    for rows in (3, 17, 64):
        check(compiled, model, torch.randn(rows, 96))
    assert any(r.packed_weight_bytes for r in kiln.compile_records()[-1:])
    assert_kiln_ran(strict=True)


def test_concurrent_calls_share_the_packed_weights():
    model = mlp()
    compiled = compile_model(model)
    x = torch.randn(32, 96)
    with torch.no_grad():
        expected = model(x)
        compiled(x)
    errors: list[BaseException] = []

    def call():
        try:
            for _ in range(20):
                with torch.no_grad():
                    torch.testing.assert_close(compiled(x), expected, rtol=1e-4, atol=1e-4)
        except BaseException as err:  # surfaced below
            errors.append(err)

    threads = [threading.Thread(target=call) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]
    assert_kiln_ran(strict=True)


def test_weights_under_inference_mode_are_packed_per_call():
    # Inference tensors have no version counter: Kiln cannot tell an update,
    # so it packs them on every call rather than risk a stale copy.
    with torch.inference_mode():
        model = mlp()
        before = {id(e) for e in kiln_compiler.executables()}
        compiled = compile_model(model)
        x = torch.randn(8, 96)
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-4)
        model[0].weight.mul_(2.0)
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-4)
    assert sum(e.cached_runs for e in new_executables(before)) == 2
    assert_kiln_ran(strict=True)


def test_batch_norm_scale_and_shift_are_computed_once_per_version():
    # Eval-mode batch norm's per-channel scale and shift read only the
    # module's parameters and buffers: a cached launch, re-run when one of
    # them changes (here the running variance, updated in place).
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8),
                                torch.nn.ReLU()).eval()
    model[1].running_mean.normal_()
    model[1].running_var.uniform_(0.5, 2.0)
    before = {id(e) for e in kiln_compiler.executables()}
    compiled = compile_model(model)
    x = torch.randn(2, 3, 16, 16)
    for _ in range(3):
        check(compiled, model, x)
    exes = new_executables(before)
    assert [e.cached_runs for e in exes] == [1]
    assert all(e.persistent_bytes > 0 for e in exes)
    with torch.no_grad():
        model[1].running_var.mul_(3.0)
    check(compiled, model, x)
    assert [e.cached_runs for e in exes] == [2]
    assert_kiln_ran(strict=True)
