"""Mutation and aliasing through Kiln exactly as in eager: in-place ops on
graph inputs reach the caller's tensors (their storage, through views),
outputs alias inputs and each other as eager's do, and grad modes behave as
eager's. Every case compiles with fallback="error" and checks that Kiln
kernels ran."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import kiln

pytestmark = pytest.mark.e2e


def _compile(fn, **kwargs):
    torch._dynamo.reset()
    return torch.compile(fn, backend="kiln", options={"fallback": "error"}, dynamic=False,
                         **kwargs)


def _kiln_ran() -> None:
    records = kiln.compile_records()
    assert any(r.status == "compiled" and r.kernel_count > 0 for r in records), records


def _same_storage(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()


def _check_in_place(fn, *make_inputs):
    """fn mutates its inputs: after the compiled call, the caller's tensors
    (same storage as before) hold what eager's hold, and results match."""
    eager_inputs = [m() for m in make_inputs]
    kiln_inputs = [m() for m in make_inputs]
    pointers = [t.untyped_storage().data_ptr() for t in kiln_inputs]
    expected = fn(*eager_inputs)
    actual = _compile(fn)(*kiln_inputs)
    _kiln_ran()
    torch.testing.assert_close(actual, expected)
    for i, (a, e, p) in enumerate(zip(kiln_inputs, eager_inputs, pointers)):
        torch.testing.assert_close(a, e, msg=f"input {i}")
        assert a.untyped_storage().data_ptr() == p, f"input {i} moved to new storage"


def _randn(*shape, seed=0):
    return lambda: torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("shape", [(4, 5), (3, 2, 7)])
def test_add_in_place_on_an_input(shape):
    def f(x, y):
        x.add_(1)
        return (x * y).sum(-1)

    _check_in_place(f, _randn(*shape), _randn(*shape, seed=1))


def test_index_assignment_on_an_input():
    def f(x, v):
        x[torch.tensor([0, 2])] = v
        x[:, 1] = 0.5
        return x.relu()

    _check_in_place(f, _randn(4, 3), _randn(3, seed=1))


def test_mutation_through_a_view_of_an_input():
    def f(x):
        x.view(-1)[2:7].mul_(3)
        x.t()[0].sub_(1)
        return x.exp()

    _check_in_place(f, _randn(4, 6))


def test_mutated_input_that_is_itself_a_view():
    """The caller passes a slice of a larger tensor: the base sees the update,
    and the elements outside the slice stay."""
    def f(x):
        x.mul_(2).add_(1)
        return x.sum()

    base, eager_base = torch.randn(5, 6), None
    eager_base = base.clone()
    expected = f(eager_base[1:4, 2:])
    actual = _compile(f)(base[1:4, 2:])
    _kiln_ran()
    torch.testing.assert_close(actual, expected)
    torch.testing.assert_close(base, eager_base)


def test_several_inputs_mutated_and_one_read_twice():
    def f(a, b):
        a.copy_(b * 2)
        b.clamp_(min=0)
        return a + b

    _check_in_place(f, _randn(6, 4), _randn(6, 4, seed=1))


@pytest.mark.parametrize("batch", [4, 7])
def test_batch_norm_running_statistics(batch):
    """Training-mode batch norm updates running_mean, running_var and
    num_batches_tracked in the module's own buffers."""
    torch.manual_seed(0)
    eager = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU()).train()
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU()).train()
    model.load_state_dict(eager.state_dict())
    buffers = {n: b.untyped_storage().data_ptr() for n, b in model.named_buffers()}
    compiled = _compile(model)
    for seed in range(3):
        x = torch.randn(batch, 3, 10, 10, generator=torch.Generator().manual_seed(seed))
        torch.testing.assert_close(compiled(x), eager(x))
    _kiln_ran()
    for (name, b), e in zip(model.named_buffers(), eager.buffers()):
        torch.testing.assert_close(b, e, msg=name)
        assert b.untyped_storage().data_ptr() == buffers[name], name


@pytest.mark.parametrize("make_view", [
    lambda x: x.view(-1),
    lambda x: x.t(),
    lambda x: x[1:, ::2],
    lambda x: x.unsqueeze(0).expand(2, *x.shape),
])
def test_output_that_views_an_input_aliases_it(make_view):
    def f(x):
        return make_view(x), x * 2

    x = torch.randn(4, 6)
    expected = f(x)
    view, doubled = _compile(f)(x)
    _kiln_ran()
    assert _same_storage(view, x)
    assert view.shape == expected[0].shape and view.stride() == expected[0].stride()
    assert view.storage_offset() == expected[0].storage_offset()
    torch.testing.assert_close(doubled, expected[1])
    x.add_(1)  # a later write to the input shows through the view, as in eager
    torch.testing.assert_close(view, make_view(x))


def test_outputs_that_alias_each_other():
    def f(x):
        y = torch.sigmoid(x) * 3
        return y, y.view(-1), y[1]

    x = torch.randn(3, 5)
    expected = f(x)
    outputs = _compile(f)(x)
    _kiln_ran()
    assert _same_storage(outputs[0], outputs[1]) and _same_storage(outputs[0], outputs[2])
    for a, e in zip(outputs, expected):
        torch.testing.assert_close(a, e)
        assert a.stride() == e.stride() and a.storage_offset() == e.storage_offset()
    outputs[0].zero_()
    assert outputs[1].abs().sum() == 0 and outputs[2].abs().sum() == 0


def _mlp_step(x, w1, w2):
    return (F.gelu(x @ w1) @ w2).square().mean()


def test_grad_modes_behave_as_eager():
    x, w1, w2 = torch.randn(5, 8), torch.randn(8, 16, requires_grad=True), torch.randn(16, 3)
    compiled = _compile(_mlp_step)
    with torch.no_grad():
        out = compiled(x, w1, w2)
    assert not out.requires_grad
    with torch.inference_mode():
        out = compiled(x, w1, w2)
    assert out.is_inference() and not out.requires_grad
    # Only w1 requires grad: it gets a gradient, the others none.
    out = compiled(x, w1, w2)
    assert out.requires_grad
    out.backward()
    _kiln_ran()
    expected_w1 = w1.detach().clone().requires_grad_()
    _mlp_step(x, expected_w1, w2).backward()
    torch.testing.assert_close(w1.grad, expected_w1.grad)
    assert x.grad is None and w2.grad is None


def test_requires_grad_mix_across_calls():
    """The same compiled function called with different inputs requiring
    grad gives each the gradient eager gives."""
    compiled = _compile(_mlp_step)
    for needs in [(True, False, False), (False, True, True), (True, True, True)]:
        tensors = [torch.randn(5, 8), torch.randn(8, 16), torch.randn(16, 3)]
        kiln_leaves = [t.clone().requires_grad_(n) for t, n in zip(tensors, needs)]
        eager_leaves = [t.clone().requires_grad_(n) for t, n in zip(tensors, needs)]
        compiled(*kiln_leaves).backward()
        _mlp_step(*eager_leaves).backward()
        for k, e, n in zip(kiln_leaves, eager_leaves, needs):
            if n:
                torch.testing.assert_close(k.grad, e.grad)
            else:
                assert k.grad is None
    _kiln_ran()


def test_aliased_gradients_after_a_literal_output():
    """A backward graph returning (None, g, g): the aliased output's base is
    numbered among the returned outputs, not the graph's."""
    x = torch.randn(4, 6)
    a, b = torch.randn(6, 3, requires_grad=True), torch.randn(6, 3, requires_grad=True)
    f = _compile(lambda x, a, b: x @ (a + b))
    f(x, a, b).square().sum().backward()
    _kiln_ran()
    ea, eb = a.detach().clone().requires_grad_(), b.detach().clone().requires_grad_()
    (x @ (ea + eb)).square().sum().backward()
    torch.testing.assert_close(a.grad, ea.grad)
    torch.testing.assert_close(b.grad, eb.grad)


def test_output_aliasing_a_gapped_output_is_not_a_view_of_its_copy():
    """y[:, :4] has gaps in y's storage: Kiln copies it into fresh storage
    whose gaps hold nothing, so y[0] (saved for the backward) must not be
    read through it."""
    def f(x, w):
        y = (x * 2).view(4, 8)
        return y[:, :4], y[0] @ w

    x, w = torch.randn(32), torch.randn(8, 3, requires_grad=True)
    left, out = _compile(f)(x, w)
    out.sum().backward()
    _kiln_ran()
    ew = w.detach().clone().requires_grad_()
    e_left, e_out = f(x, ew)
    e_out.sum().backward()
    torch.testing.assert_close(left, e_left)
    torch.testing.assert_close(out, e_out)
    torch.testing.assert_close(w.grad, ew.grad)


# ---------------------------------------------------------------------------
# Inputs written in place: the kernels compute an overwritten input's new
# value in its own memory where that is safe (kiln-write-inputs-in-place),
# and nothing is copied back; elsewhere the new value is copied.


def _written_in_place() -> tuple[int, int]:
    """(inputs the compiled graphs overwrite, those written in place)."""
    records = kiln.compile_records()
    return (sum(r.input_writes for r in records),
            sum(r.inputs_written_in_place for r in records))


@pytest.mark.parametrize("shape", [(64,), (33, 7)])
def test_elementwise_update_of_an_input_is_computed_in_place(shape):
    def f(x, y):
        x.mul_(0.5).add_(y)
        return None

    _check_in_place(f, _randn(*shape), _randn(*shape, seed=1))
    assert _written_in_place() == (1, 1)


@pytest.mark.parametrize("update", [
    # Reads the input at other elements than it writes.
    lambda x: x.add_(x.flip(0)),
    lambda x: x[1:].copy_(x[:-1].clone()),
    lambda x: x.copy_(x.t().contiguous()),
    # Reads all of it first.
    lambda x: x.sub_(x.mean()),
    lambda x: x.div_(x.sum(0, keepdim=True)),
    # Writes it twice.
    lambda x: x.mul_(2).add_(x.t().clone()),
])
def test_updates_that_read_other_elements_stay_correct(update):
    def f(x, y):
        before = x * y
        result = update(x)
        after = x * y
        return before, after, result

    _check_in_place(f, _randn(6, 6), _randn(6, 6, seed=1))


def test_old_value_read_after_the_update_keeps_its_own_buffer():
    def f(x, y):
        old = x.exp()
        x.add_(y)
        return old.sum() + (x * 2).sum(), x.relu()

    _check_in_place(f, _randn(16, 8), _randn(16, 8, seed=1))


def test_input_written_in_place_and_returned():
    def f(x):
        x.mul_(3)
        return x

    x = torch.randn(8, 5)
    expected = x.clone() * 3
    result = _compile(f)(x)
    _kiln_ran()
    assert result is x or _same_storage(result, x)
    torch.testing.assert_close(x, expected)


def test_non_contiguous_input_is_updated_through_a_copy():
    """The kernels run on a contiguous copy of a transposed input; the
    caller's tensor still gets the new values, in its own layout."""
    def f(x):
        x.add_(1).mul_(2)
        return x.sum(0)

    base = torch.randn(5, 7)
    eager_base = base.clone()
    expected = f(eager_base.t())
    actual = _compile(f)(base.t())
    _kiln_ran()
    torch.testing.assert_close(actual, expected)
    torch.testing.assert_close(base, eager_base)


@pytest.mark.parametrize("make_optimizer", [
    lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9),
    lambda p: torch.optim.Adam(p, lr=0.01),
    lambda p: torch.optim.AdamW(p, lr=0.01, weight_decay=0.1),
], ids=["sgd-momentum", "adam", "adamw"])
@pytest.mark.parametrize("sizes", [[(16, 8), (8,)], [(5, 3, 3), (7,), (40, 12)]])
def test_optimizer_step_updates_parameters_and_state_in_place(make_optimizer, sizes):
    """A compiled optimizer step computes every parameter and every state
    tensor in its own memory: no new buffers, no copies back."""
    torch.manual_seed(0)
    params = [nn.Parameter(torch.randn(*s)) for s in sizes]
    eager_params = [nn.Parameter(p.detach().clone()) for p in params]
    opt, eager_opt = make_optimizer(params), make_optimizer(eager_params)
    torch._dynamo.reset()
    step = torch.compile(opt.step, backend="kiln", options={"fallback": "error"})
    pointers = None
    for i in range(3):
        for p, e in zip(params, eager_params):
            p.grad = torch.randn(p.shape, generator=torch.Generator().manual_seed(i))
            e.grad = p.grad.clone()
        step()
        eager_opt.step()
        if pointers is None:  # the state exists after the first step
            pointers = [t.data_ptr() for t in _tensors_of(opt, params)]
    assert [t.data_ptr() for t in _tensors_of(opt, params)] == pointers
    for p, e in zip(params, eager_params):
        torch.testing.assert_close(p, e)
    _kiln_ran()
    writes, in_place = _written_in_place()
    assert writes > 0 and in_place == writes, kiln.compile_records()


def _tensors_of(opt: torch.optim.Optimizer, params) -> list[torch.Tensor]:
    state = [v for p in params for v in opt.state[p].values()
             if isinstance(v, torch.Tensor) and v.dim() > 0]
    return [p.data for p in params] + state


def test_batch_norm_running_statistics_are_written_in_place():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 4), nn.BatchNorm1d(4)).train()
    eager = nn.Sequential(nn.Linear(6, 4), nn.BatchNorm1d(4)).train()
    eager.load_state_dict(model.state_dict())
    compiled = _compile(model)
    for batch in (5, 9):
        x = torch.randn(batch, 6)
        torch.testing.assert_close(compiled(x), eager(x))
    for b, e in zip(model.buffers(), eager.buffers()):
        torch.testing.assert_close(b, e)
    _kiln_ran()
    writes, in_place = _written_in_place()
    # running_mean and running_var per compiled forward graph.
    assert in_place >= 2, kiln.compile_records()


def test_input_writes_with_symbolic_sizes():
    """With dynamic shapes the graph's size inputs come first; the writes
    still reach the right tensors, at every size."""
    def f(x, y):
        x.mul_(2).add_(y)
        return x.sum(0)

    torch._dynamo.reset()
    compiled = torch.compile(f, backend="kiln", dynamic=True, options={"fallback": "error"})
    for rows in (3, 5, 8):
        x, y = torch.randn(rows, 4), torch.randn(rows, 4)
        eager_x = x.clone()
        expected = f(eager_x, y)
        pointer = x.data_ptr()
        torch.testing.assert_close(compiled(x, y), expected)
        torch.testing.assert_close(x, eager_x)
        assert x.data_ptr() == pointer
    assert any(r.symbols for r in kiln.compile_records())
    _kiln_ran()
