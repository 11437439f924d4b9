"""Training loops through Kiln: the model's forward and backward graphs and the
optimizer's step all compiled with fallback="error", so nothing may run in
eager, checked step by step against the same loop in eager PyTorch (models in
kiln/testing/training.py).

Every loss matches eager's at every step, the gradients after the first
step, and the parameters at the end. Dropout is off in the transformers
configs for those comparisons: eager's random masks cannot be reproduced by
any compiler. With dropout on, the loop must still run wholly in Kiln and
train."""

from __future__ import annotations

import copy

import pytest
import torch

import kiln
from kiln.testing.training import MODELS, OPTIMIZERS

pytestmark = pytest.mark.e2e

STEPS = 20


def _compiled(loss_of, opt):
    """The loss function and the optimizer's step, compiled by Kiln with
    fallback="error". fullgraph: a graph break would run the ops around it in
    eager. (The optimizer breaks the graph itself around its step, where it
    only switches grad mode.)"""
    torch._dynamo.reset()
    options = {"fallback": "error"}
    return (torch.compile(loss_of, backend="kiln", options=options, dynamic=False, fullgraph=True),
            torch.compile(opt.step, backend="kiln", options=options, dynamic=False))


def _run(model, inputs, loss_fn, optimizer: str, compiled: bool):
    """STEPS steps on one batch: the losses, the gradients of the first step,
    and the parameters (and buffers: batch-norm statistics) at the end."""
    model = copy.deepcopy(model).train()
    opt = OPTIMIZERS[optimizer](model.parameters())

    def loss_of(*batch):
        return loss_fn(model, *batch)

    loss_of, step = _compiled(loss_of, opt) if compiled else (loss_of, opt.step)
    losses, first_grads = [], {}
    for i in range(STEPS):
        opt.zero_grad(set_to_none=True)
        loss = loss_of(*inputs)
        loss.backward()
        if i == 0:
            first_grads = {n: p.grad.clone() for n, p in model.named_parameters()}
        step()
        losses.append(loss.detach())
    state = {n: t.detach().clone() for n, t in model.state_dict().items()}
    return torch.stack(losses), first_grads, state


def _kinds_compiled() -> set[str]:
    return {r.kind for r in kiln.compile_records()
            if r.status == "compiled" and r.kernel_count > 0}


# Each model and each optimizer gate once; the other pairs and batches run nightly.
GATING_LOOPS = {("mlp", 8, "sgd"), ("cnn", 4, "adamw"), ("gpt2", 2, "sgd"), ("bert", 3, "adamw")}


@pytest.mark.parametrize("name, batch, optimizer", [
    pytest.param(name, batch, optimizer,
                 marks=[] if (name, batch, optimizer) in GATING_LOOPS else [pytest.mark.slow])
    for name, batch in [("mlp", 8), ("mlp", 3), ("cnn", 4), ("cnn", 3),
                        ("gpt2", 2), ("gpt2", 3), ("bert", 3), ("bert", 2)]
    for optimizer in OPTIMIZERS])
def test_training_loop_matches_eager(name, batch, optimizer):
    model, inputs, loss_fn = MODELS[name](batch)  # small sizes
    losses, grads, state = _run(model, inputs, loss_fn, optimizer, compiled=True)
    kinds = _kinds_compiled()
    assert {"forward", "backward", "inference"} <= kinds, kiln.compile_records()
    eager_losses, eager_grads, eager_state = _run(model, inputs, loss_fn, optimizer, compiled=False)
    assert losses[-1] < losses[0], "the loop did not train"
    torch.testing.assert_close(losses, eager_losses, rtol=1e-3, atol=1e-5)
    for n, g in grads.items():
        torch.testing.assert_close(g, eager_grads[n], rtol=1e-4, atol=1e-5, msg=n)
    for n, t in state.items():
        torch.testing.assert_close(t, eager_state[n], rtol=1e-3, atol=1e-4, msg=n)


@pytest.mark.parametrize("name", ["gpt2", pytest.param("bert", marks=pytest.mark.slow)])
def test_training_loop_with_dropout_runs_in_kiln(name):
    """transformers' default dropout (0.1, in the attention probabilities
    too) runs in Kiln kernels: masks from Kiln's own random stream. The loss
    falls as eager's does (eager's masks differ, so not step by step)."""
    model, inputs, loss_fn = MODELS[name](4, dropout=0.1)
    losses, _, _ = _run(model, inputs, loss_fn, "adamw", compiled=True)
    assert {"forward", "backward", "inference"} <= _kinds_compiled(), kiln.compile_records()
    eager_losses, _, _ = _run(model, inputs, loss_fn, "adamw", compiled=False)
    assert losses[-5:].mean() < losses[:5].mean(), losses
    # Both curves fall by a like amount: within a third of eager's drop.
    drop, eager_drop = losses[0] - losses[-1], eager_losses[0] - eager_losses[-1]
    assert abs(drop - eager_drop) < abs(eager_drop) / 3 + 0.02, (losses, eager_losses)


MORE_OPTIMIZERS = {
    "adam": lambda p: torch.optim.Adam(p, lr=1e-3),
    "sgd-nesterov-decay": lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9, nesterov=True,
                                                    weight_decay=1e-4),
    "rmsprop": lambda p: torch.optim.RMSprop(p, lr=1e-3),
    "adagrad": lambda p: torch.optim.Adagrad(p, lr=1e-2),
    "adamax": lambda p: torch.optim.Adamax(p),
    "nadam": lambda p: torch.optim.NAdam(p),
    "radam": lambda p: torch.optim.RAdam(p),
}


@pytest.mark.parametrize("optimizer", list(MORE_OPTIMIZERS))
def test_optimizer_step_in_kiln_matches_eager(optimizer):
    """PyTorch's other optimizers: the step compiles with fallback="error"
    and five steps leave the parameters where eager's leave them."""
    model, inputs, loss_fn = MODELS["mlp"](6)
    params = []
    for compiled in (True, False):
        torch._dynamo.reset()
        m = copy.deepcopy(model).train()
        opt = MORE_OPTIMIZERS[optimizer](m.parameters())
        step = (torch.compile(opt.step, backend="kiln", options={"fallback": "error"})
                if compiled else opt.step)
        for _ in range(5):
            opt.zero_grad()
            loss_fn(m, *inputs).backward()
            step()
        if compiled:
            assert "inference" in _kinds_compiled(), kiln.compile_records()
        params.append([p.detach().clone() for p in m.parameters()])
    for a, e in zip(*params):
        torch.testing.assert_close(a, e, rtol=1e-4, atol=1e-6)


def _run_autocast(model, inputs, loss_fn, compiled: bool):
    """STEPS AdamW steps with the loss under torch.autocast("cpu", bfloat16);
    the parameters and the optimizer stay float32, as in mixed precision."""
    model = copy.deepcopy(model).train()
    opt = OPTIMIZERS["adamw"](model.parameters())

    def loss_of(*batch):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return loss_fn(model, *batch)

    loss_of, step = _compiled(loss_of, opt) if compiled else (loss_of, opt.step)
    losses = []
    for _ in range(STEPS):
        opt.zero_grad(set_to_none=True)
        loss = loss_of(*inputs)
        loss.backward()
        step()
        losses.append(loss.detach().float())
    return torch.stack(losses)


@pytest.mark.parametrize("name, batch", [("mlp", 8), pytest.param("cnn", 4, marks=pytest.mark.slow),
                                         ("gpt2", 2)])
def test_bfloat16_autocast_training_converges_like_eager(name, batch):
    """Mixed precision: under autocast, matmuls and convolutions take
    bfloat16 operands (Kiln's forward and backward graphs then hold bfloat16
    tensors and converts), all compiled with fallback="error".

    Tolerances: bfloat16 keeps 8 significant bits, so one rounding moves a
    value by up to 2^-9 (0.2%) of itself, and a matmul whose float32 sums run
    in another order can round an output to the neighbouring bfloat16 (0.4%).
    Such differences feed 20 steps of training, so the curves are compared
    loosely: every loss within 3% of eager's (plus 0.02 absolute for losses
    near zero), and both loops must train (the loss falls by at least half
    as much as eager's does)."""
    model, inputs, loss_fn = MODELS[name](batch)
    losses = _run_autocast(model, inputs, loss_fn, compiled=True)
    records = [r for r in kiln.compile_records() if r.status == "compiled" and r.kernel_count]
    assert {"forward", "backward", "inference"} <= {r.kind for r in records}, records
    # Autocast's casts to and from bfloat16 are in the graphs Kiln compiled.
    for kind in ("forward", "backward"):
        assert any(r.ops.get("aten._to_copy.default") for r in records if r.kind == kind), kind
    eager_losses = _run_autocast(model, inputs, loss_fn, compiled=False)
    torch.testing.assert_close(losses, eager_losses, rtol=3e-2, atol=2e-2)
    assert losses[0] - losses[-1] > 0.5 * (eager_losses[0] - eager_losses[-1]) > 0, (losses, eager_losses)
