"""Training loops through Kiln: the model's forward and backward graphs and the
optimizer's step all compiled with fallback="error", so nothing may run in
eager, checked step by step against the same loop in eager PyTorch.

Every loss matches eager's at every step, the gradients after the first
step, and the parameters at the end. Dropout is off in the transformers
configs: eager's random masks cannot be reproduced by any compiler, and a
dropout that drops something is an op Kiln leaves to eager (it has no
random-number kernels yet)."""

from __future__ import annotations

import copy
from typing import Callable

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import kiln
from kiln.testing.models import MLP
from kiln.testing.zoo import CNN

pytestmark = pytest.mark.usefixtures("kiln_ext")

STEPS = 20
OPTIMIZERS: dict[str, Callable[..., torch.optim.Optimizer]] = {
    "sgd": lambda params: torch.optim.SGD(params, lr=0.05, momentum=0.9),
    "adamw": lambda params: torch.optim.AdamW(params, lr=1e-3, weight_decay=0.01),
}


def _generator(seed: int) -> torch.Generator:
    gen = torch.Generator()
    gen.manual_seed(seed)
    return gen


def _classification(model: nn.Module, x: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(model(x), labels)


def _mlp(batch: int):
    model = MLP(in_features=32, hidden=64, out_features=10)
    x = torch.randn(batch, 32, generator=_generator(1))
    labels = torch.randint(0, 10, (batch,), generator=_generator(2))
    # MLP ends in log_softmax: its loss is the negative log-likelihood.
    return model, (x, labels), lambda m, x, y: F.nll_loss(m(x), y)


def _cnn(batch: int):
    torch.manual_seed(0)
    model = CNN(width=8, num_classes=10)
    x = torch.randn(batch, 3, 16, 16, generator=_generator(1))
    labels = torch.randint(0, 10, (batch,), generator=_generator(2))
    return model, (x, labels), _classification


def _gpt2(batch: int):
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(vocab_size=96, n_positions=32, n_embd=32, n_layer=2, n_head=2,
                        use_cache=False, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
                        attn_implementation="sdpa")
    torch.manual_seed(0)
    model = GPT2LMHeadModel(config)
    ids = torch.randint(0, 96, (batch, 12), generator=_generator(1))

    def next_token_loss(m, ids, _unused):
        logits = m(input_ids=ids, return_dict=True).logits
        return F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1))

    return model, (ids, ids), next_token_loss


def _bert(batch: int):
    from transformers import BertConfig, BertForSequenceClassification

    config = BertConfig(vocab_size=96, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=32, num_labels=3,
                        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
                        attn_implementation="sdpa")
    torch.manual_seed(0)
    model = BertForSequenceClassification(config)
    ids = torch.randint(0, 96, (batch, 10), generator=_generator(1))
    labels = torch.randint(0, 3, (batch,), generator=_generator(2))

    def loss(m, ids, labels):
        return F.cross_entropy(m(input_ids=ids, return_dict=True).logits, labels)

    return model, (ids, labels), loss


MODELS = {"mlp": _mlp, "cnn": _cnn, "gpt2": _gpt2, "bert": _bert}


def _run(model, inputs, loss_fn, optimizer: str, compiled: bool):
    """STEPS steps on one batch: the losses, the gradients of the first step,
    and the parameters (and buffers: batch-norm statistics) at the end."""
    model = copy.deepcopy(model).train()
    opt = OPTIMIZERS[optimizer](model.parameters())

    def loss_of(*batch):
        return loss_fn(model, *batch)

    step = opt.step
    if compiled:
        torch._dynamo.reset()
        options = {"fallback": "error"}
        # fullgraph: a graph break would run the ops around it in eager. (The
        # optimizer breaks the graph itself around its step, where it only
        # switches grad mode.)
        loss_of = torch.compile(loss_of, backend="kiln", options=options, dynamic=False,
                                fullgraph=True)
        step = torch.compile(opt.step, backend="kiln", options=options, dynamic=False)
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


@pytest.mark.parametrize("optimizer", list(OPTIMIZERS))
@pytest.mark.parametrize("name, batch", [("mlp", 8), ("mlp", 3), ("cnn", 4), ("gpt2", 2),
                                         ("bert", 3)])
def test_training_loop_matches_eager(name, batch, optimizer):
    model, inputs, loss_fn = MODELS[name](batch)
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
