"""Eager ops on the kiln device run as Kiln kernels from the device's cache:
each checked against CPU eager, with the stats saying a kernel ran."""

from __future__ import annotations

import copy

import pytest
import torch

import kiln.device
from kiln.testing import distributions

pytestmark = pytest.mark.e2e


def on_kiln(*tensors: torch.Tensor) -> list[torch.Tensor]:
    return [t.to("kiln") for t in tensors]


def ran_kernels(op: str) -> int:
    return kiln.device.stats()["kernel"].get(op, 0)


@pytest.mark.parametrize("shape", [(5, 7), (3, 1, 9), (64,)])
def test_pointwise_ops_run_as_kernels(shape):
    a, b = torch.randn(shape), torch.rand(shape) + 0.5
    ka, kb = on_kiln(a, b)
    for op in (torch.add, torch.mul, torch.div, torch.maximum, torch.atan2):
        torch.testing.assert_close(op(ka, kb).cpu(), op(a, b))
    for op in (torch.exp, torch.tanh, torch.sigmoid, torch.relu, torch.rsqrt, torch.nn.functional.gelu):
        torch.testing.assert_close(op(kb).cpu(), op(b))
    stats = kiln.device.stats()
    assert stats["fallback_calls"] == 0, stats["fallback"]
    assert ran_kernels("aten::atan2") == 1 and ran_kernels("aten::gelu") == 1


def test_one_kernel_serves_every_size_of_a_pattern():
    torch.add(*on_kiln(torch.randn(3, 5), torch.randn(3, 5)))
    loaded = kiln.device.stats()["kernels_loaded"]
    for rows, cols in [(7, 9), (100, 3), (2, 1000)]:
        a, b = torch.randn(rows, cols), torch.randn(rows, cols)
        torch.testing.assert_close(torch.add(*on_kiln(a, b)).cpu(), a + b)
    assert kiln.device.stats()["kernels_loaded"] == loaded
    assert ran_kernels("aten::add.Tensor") == 4


def test_new_float_arguments_do_not_compile_new_kernels():
    x, y, z = torch.randn(4, 6), torch.randn(4, 6), torch.rand(4, 6) + 0.5
    kx, ky, kz = on_kiln(x, y, z)
    torch.addcdiv(kx, ky, kz, value=0.1)
    torch.add(kx, ky, alpha=0.1)
    loaded = kiln.device.stats()["kernels_loaded"]
    for value in (0.5, -3.0, 1e-3, 7.25):
        torch.testing.assert_close(torch.addcdiv(kx, ky, kz, value=value).cpu(), torch.addcdiv(x, y, z, value=value))
        torch.testing.assert_close(torch.add(kx, ky, alpha=value).cpu(), torch.add(x, y, alpha=value))
        torch.testing.assert_close((kx * value).cpu(), x * value)
    assert kiln.device.stats()["kernels_loaded"] <= loaded + 1  # mul by a number: one kernel


def test_exponents_are_compiled_in():
    # pow's exponent picks its algorithm (x * x * x for 3): each exponent is
    # a kernel of its own, not a run-time value through the general pow.
    x = torch.rand(5, 7) + 0.5
    k = x.to("kiln")
    for exponent in (3.0, 0.5, 2.5, 3.0):
        torch.testing.assert_close(torch.pow(k, exponent).cpu(), torch.pow(x, exponent))
    stats = kiln.device.stats()
    assert ran_kernels("aten::pow.Tensor_Scalar") == 4 and stats["fallback_calls"] == 0
    assert any("exponent picks" in why for why in stats["refusals"].values())


def test_random_ops_are_kernels_seeded_by_the_device_generator():
    ones = torch.ones(128, 64, device="kiln")
    probabilities = torch.full((128, 64), 0.3, device="kiln")

    def draw() -> tuple[torch.Tensor, torch.Tensor]:
        dropped = torch.nn.functional.dropout(ones, 0.25, training=True)
        return dropped.cpu(), torch.bernoulli(probabilities).cpu()

    torch.manual_seed(7)
    dropped, coins = draw()
    later_dropped, later_coins = draw()
    torch.manual_seed(7)
    again_dropped, again_coins = draw()
    state = torch.kiln.get_rng_state()
    replayed = draw()
    torch.kiln.set_rng_state(state)
    assert all(torch.equal(a, b) for a, b in zip(draw(), replayed))  # activation checkpointing
    assert torch.equal(dropped, again_dropped) and torch.equal(coins, again_coins)
    assert not torch.equal(dropped, later_dropped) and not torch.equal(coins, later_coins)
    kept = dropped != 0
    assert abs(kept.float().mean().item() - 0.75) < 0.03
    torch.testing.assert_close(dropped[kept], torch.full_like(dropped[kept], 1 / 0.75))
    assert abs(coins.mean().item() - 0.3) < 0.03 and set(coins.unique().tolist()) <= {0.0, 1.0}
    # uniform_ (rand_like, nn.init): its bounds are read at run time.
    torch.manual_seed(3)
    uniform = torch.rand_like(ones).cpu()
    bounded = torch.empty(64, 32, device="kiln").uniform_(-2.0, 5.0).cpu()
    torch.manual_seed(3)
    assert torch.equal(torch.rand_like(ones).cpu(), uniform)
    assert 0 <= uniform.min() and uniform.max() < 1 and abs(uniform.mean().item() - 0.5) < 0.02
    assert -2 <= bounded.min() and bounded.max() < 5 and abs(bounded.mean().item() - 1.5) < 0.15
    stats = kiln.device.stats()
    assert stats["fallback_calls"] == 0, stats["fallback"]
    assert ran_kernels("aten::uniform_") == 3
    assert ran_kernels("aten::native_dropout") == 5
    assert sum(n for op, n in stats["kernel"].items() if op.startswith("aten::bernoulli")) == 5


@pytest.mark.parametrize("case", distributions.CASES, ids=lambda c: c.name)
def test_random_distributions_are_kernels(case):
    """normal_, random_, exponential_, ..., multinomial (torch.randn,
    torch.randint, nn.init, sampling) as Kiln kernels: distributions right,
    reproducible under torch.manual_seed."""
    x = torch.zeros(distributions.SAMPLES, device="kiln")
    torch.manual_seed(5)
    sample = case.draw(x).cpu()
    case.check(sample)
    assert ran_kernels(case.kernel) == 1, kiln.device.stats()["kernel"]
    torch.manual_seed(5)
    assert torch.equal(case.draw(x).cpu(), sample)
    assert not torch.equal(case.draw(x).cpu(), sample)


def test_python_numbers_keep_their_promotion():
    ints = torch.arange(6).reshape(2, 3)
    k = ints.to("kiln")
    for result, expected in [(k * 2.5, ints * 2.5), (k + 3, ints + 3), (k // 2, ints // 2), (k > 2, ints > 2)]:
        assert result.dtype == expected.dtype
        torch.testing.assert_close(result.cpu(), expected)


def test_transposed_broadcast_and_in_place_operands():
    a, b = torch.randn(6, 4), torch.randn(4)
    ka, kb = on_kiln(a, b)
    torch.testing.assert_close((ka.t() * 2).cpu(), a.t() * 2)  # permuted memory
    torch.testing.assert_close((ka + kb).cpu(), a + b)  # broadcast
    torch.testing.assert_close(kb.expand(6, 4).exp().cpu(), b.expand(6, 4).exp())  # stride 0
    torch.testing.assert_close((ka.t() @ ka).cpu(), a.t() @ a, rtol=1e-5, atol=1e-5)
    c = a.clone()
    kc = c.to("kiln")
    kc.mul_(3).add_(kb, alpha=-2).clamp_(min=-1)
    c.mul_(3).add_(b, alpha=-2).clamp_(min=-1)
    torch.testing.assert_close(kc.cpu(), c)
    assert kiln.device.stats()["fallback_calls"] == 0, kiln.device.stats()["fallback"]


def test_broadcast_operands_of_each_size_keep_their_size():
    """An operand expanded along a dim (stride 0) is read once and expanded
    to its size by the kernel: a new size must not reuse another size's
    kernel (transformers expands position ids to the batch, then slices and
    subtracts: a batch of 3 after one of 2 once got 2 rows)."""
    for batch in (2, 3, 5):
        positions = torch.arange(12).view(1, 12).expand(batch, -1)
        on_device = torch.arange(12).to("kiln").view(1, 12).expand(batch, -1)
        shifted = on_device[:, :1] - 1
        assert shifted.shape == (batch, 1)
        torch.testing.assert_close(shifted.cpu(), positions[:, :1] - 1)
        row = torch.randn(4)
        torch.testing.assert_close((row.to("kiln").expand(batch, 4) * 2).cpu(), row.expand(batch, 4) * 2)


def test_out_arguments_and_their_overlap():
    a, b = torch.randn(3, 4), torch.randn(3, 4)
    ka, kb = on_kiln(a, b)
    out = torch.empty(0, device="kiln")
    torch.mul(ka, kb, out=out)
    torch.testing.assert_close(out.cpu(), a * b)
    assert ran_kernels("aten::mul.out") == 1
    # An out= that overlaps a non-pointwise op's input: ATen's kernel runs
    # it, as it does on the CPU (whatever that computes).
    m = torch.randn(4, 4)
    km = m.to("kiln")
    torch.mm(km, km, out=km)
    torch.mm(m, m, out=m)
    torch.testing.assert_close(km.cpu(), m)
    assert kiln.device.stats()["declined"]["aten::mm.out"] == "the out= tensor overlaps an input"


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_tensor_list_operands(dim):
    parts = [torch.randn(3, 4), torch.randn(3, 4), torch.randn(3, 4)]
    torch.testing.assert_close(torch.cat(on_kiln(*parts), dim).cpu(), torch.cat(parts, dim))
    torch.testing.assert_close(torch.stack(on_kiln(*parts), dim).cpu(), torch.stack(parts, dim))
    assert ran_kernels("aten::cat") >= 1


def test_reductions_matmuls_norms_and_their_backwards():
    x = torch.randn(4, 10, 16, requires_grad=True)
    w = torch.randn(16, 16, requires_grad=True)
    kx, kw = (t.detach().to("kiln").requires_grad_() for t in (x, w))
    for inputs, device in (((x, w), "cpu"), ((kx, kw), "kiln")):
        h = torch.nn.functional.layer_norm(inputs[0] @ inputs[1], (16,))
        loss = torch.softmax(h, -1).sum(-1).mean() + h.amax(-1).mean()
        loss.backward()
    torch.testing.assert_close(kx.grad.cpu(), x.grad, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(kw.grad.cpu(), w.grad, rtol=1e-4, atol=1e-5)
    stats = kiln.device.stats()
    assert ran_kernels("aten::native_layer_norm") == 1 and ran_kernels("aten::native_layer_norm_backward") == 1
    assert stats["kernel_calls"] >= 0.9 * (stats["kernel_calls"] + stats["fallback_calls"]), stats["fallback"]


def test_ops_the_compiler_wants_static_get_a_kernel_per_size():
    weight = torch.randn(20, 8)
    kw = weight.to("kiln")
    for batch in (3, 5):
        ids = torch.randint(0, 20, (batch, 4))
        torch.testing.assert_close(torch.nn.functional.embedding(ids.to("kiln"), kw).cpu(),
                                   torch.nn.functional.embedding(ids, weight))
    assert ran_kernels("aten::embedding") == 2


def test_convolution_backward_without_bias_returns_none_for_it():
    x, w = torch.randn(2, 3, 8, 8, requires_grad=True), torch.randn(4, 3, 3, 3, requires_grad=True)
    kx, kw = (t.detach().to("kiln").requires_grad_() for t in (x, w))
    for a, b in ((x, w), (kx, kw)):
        torch.nn.functional.conv2d(a, b, padding=1).square().sum().backward()
    torch.testing.assert_close(kw.grad.cpu(), w.grad, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(kx.grad.cpu(), x.grad, rtol=1e-4, atol=1e-4)
    assert ran_kernels("aten::convolution_backward") == 1


def test_calls_kiln_cannot_take_fall_back_and_say_why():
    a = torch.randn(6, 6, dtype=torch.complex64)
    torch.testing.assert_close(a.to("kiln").exp().cpu(), a.exp())
    stats = kiln.device.stats()
    assert stats["fallback_calls"] == 1, stats["fallback"]
    assert "ComplexFloat" in stats["declined"]["aten::exp"]


def test_operands_with_gaps_are_read_from_a_dense_copy():
    x = torch.randn(6, 8)
    k = x.to("kiln")
    torch.testing.assert_close((k[:, ::2] * 2).cpu(), x[:, ::2] * 2)
    torch.testing.assert_close((k[1:4, 1:5] @ k[::2, :4].t()).cpu(), x[1:4, 1:5] @ x[::2, :4].t())
    written, expected = k.clone(), x.clone()
    written[:, 1::3].mul_(3)  # in place into a slice: the result is copied back
    expected[:, 1::3].mul_(3)
    assert torch.equal(written.cpu(), expected)
    stats = kiln.device.stats()
    assert stats["fallback_calls"] == 0, stats["fallback"]
    assert ran_kernels("aten::mm") == 1 and ran_kernels("aten::mul_.Tensor") == 1


SHAPES = [(4, 3), (7,), (4, 3), (2, 2, 5)]


def test_foreach_ops_are_one_kernel_over_all_their_tensors():
    cpu = [torch.randn(s) for s in SHAPES]
    grads = [torch.randn(s) for s in SHAPES]
    denominators = [torch.rand(s) + 0.5 for s in SHAPES]
    params, kgrads, kdenominators = ([t.to("kiln") for t in ts] for ts in (cpu, grads, denominators))
    for step in range(3):  # new float values: the same kernels
        scalars = [0.1 * (step + 1) * (i + 1) for i in range(len(SHAPES))]
        for tensors, g, d in ((params, kgrads, kdenominators), (cpu, grads, denominators)):
            torch._foreach_mul_(tensors, 1 - 0.01 * step)
            torch._foreach_lerp_(tensors, g, 0.1 + step)
            torch._foreach_addcdiv_(tensors, g, d, scalars)
            torch._foreach_add_(tensors, g, alpha=-0.5 * step)
            torch._foreach_div_(tensors, scalars)
        if step == 0:
            loaded = kiln.device.stats()["kernels_loaded"]
        for got, want in zip(params, cpu):
            torch.testing.assert_close(got.cpu(), want)
    for got, want in zip(torch._foreach_sqrt(kdenominators), torch._foreach_sqrt(denominators)):
        torch.testing.assert_close(got.cpu(), want)
    stats = kiln.device.stats()
    assert stats["kernels_loaded"] == loaded + 1  # _foreach_sqrt
    assert stats["fallback_calls"] == 0, stats["fallback"]
    for op in ("_foreach_mul_.Scalar", "_foreach_lerp_.Scalar", "_foreach_addcdiv_.ScalarList",
               "_foreach_add_.List", "_foreach_div_.ScalarList"):
        assert ran_kernels(f"aten::{op}") == 3, op
    assert ran_kernels("aten::_foreach_sqrt") == 1 and ran_kernels("aten::mul_.Scalar") == 0


def test_foreach_writes_that_overlap_another_position_run_in_order():
    cpu = [torch.randn(5) for _ in range(3)]
    params = [t.to("kiln") for t in cpu]
    # ATen adds one position after another: the last reads the first's new value.
    torch._foreach_add_(params, params[::-1])
    torch._foreach_add_(cpu, cpu[::-1])
    torch._foreach_mul_(params, params)  # each overlaps only itself: a kernel
    torch._foreach_mul_(cpu, cpu)
    for got, want in zip(params, cpu):
        assert torch.equal(got.cpu(), want)
    stats = kiln.device.stats()
    assert stats["fallback"] == {"aten::_foreach_add_.List": 1}
    assert "overlaps" in stats["declined"]["aten::_foreach_add_.List"]
    assert ran_kernels("aten::_foreach_mul_.List") == 1


def test_adamw_steps_with_foreach_kernels_match_cpu():
    model = torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.GELU(), torch.nn.Linear(16, 3))
    inputs, targets = torch.randn(8, 6), torch.randn(8, 3)
    runs = {}
    for device in ("cpu", "kiln"):
        replica = copy.deepcopy(model).to(device)
        # The same implementation on both: foreach (the default on kiln).
        optimizer = torch.optim.AdamW(replica.parameters(), lr=1e-2, foreach=True)
        x, y = inputs.to(device), targets.to(device)
        for _ in range(4):
            loss = torch.nn.functional.mse_loss(replica(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        runs[device] = [p.detach().cpu() for p in replica.parameters()]
    for got, want in zip(runs["kiln"], runs["cpu"]):
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
    assert ran_kernels("aten::_foreach_addcdiv_.ScalarList") == 4
    assert kiln.device.stats()["fallback_calls"] == 0, kiln.device.stats()["fallback"]


def test_autocast_uses_the_cuda_op_lists():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 4)).to("kiln")
    x = torch.randn(8, 16, device="kiln")
    with torch.no_grad():
        expected = model(x).cpu()
    with torch.autocast("kiln", dtype=torch.bfloat16):
        assert torch.is_autocast_enabled("kiln")
        hidden = model[0](x)
        out = model(x)
        probabilities = torch.softmax(out, -1)
        loss = probabilities.log().mean()
    assert hidden.dtype == torch.bfloat16  # linear: lower precision
    assert probabilities.dtype == torch.float32  # softmax: float32
    torch.testing.assert_close(out.float().cpu(), expected, rtol=0.05, atol=0.05)
    loss.backward()
    assert model[0].weight.grad.dtype == torch.float32
    assert ran_kernels("aten::mm") + ran_kernels("aten::addmm") > 0
