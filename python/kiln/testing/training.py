"""Models, batches and losses for training loops: the training tests
(python/tests/test_training_loops.py) and benchmarks/bench_training.py.

Each builder takes a batch size and returns a TrainingCase. Dropout is off in
the transformers configs unless asked for: eager's random masks cannot be
reproduced by any compiler, so a loop with dropout cannot be compared step
by step."""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

import torch
import torch.nn.functional as F
from torch import nn

from kiln.testing.models import MLP
from kiln.testing.zoo import CNN


class TrainingCase(NamedTuple):
    model: nn.Module
    inputs: tuple[torch.Tensor, ...]
    # loss(model, *inputs) -> scalar tensor
    loss: Callable[..., torch.Tensor]


OPTIMIZERS: dict[str, Callable[[Any], torch.optim.Optimizer]] = {
    "sgd": lambda params: torch.optim.SGD(params, lr=0.05, momentum=0.9),
    "adamw": lambda params: torch.optim.AdamW(params, lr=1e-3, weight_decay=0.01),
}


SIZES = ("small", "large")  # small: the tests; large: the benchmark


def _generator(seed: int) -> torch.Generator:
    gen = torch.Generator()
    gen.manual_seed(seed)
    return gen


def _classification(model: nn.Module, x: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(model(x), labels)


def mlp(batch: int, size: str = "small") -> TrainingCase:
    features, hidden = (32, 64) if size == "small" else (256, 512)
    model = MLP(in_features=features, hidden=hidden, out_features=10)
    x = torch.randn(batch, features, generator=_generator(1))
    labels = torch.randint(0, 10, (batch,), generator=_generator(2))
    # MLP ends in log_softmax: its loss is the negative log-likelihood.
    return TrainingCase(model, (x, labels), lambda m, x, y: F.nll_loss(m(x), y))


def cnn(batch: int, size: str = "small") -> TrainingCase:
    """The zoo's CNN: convolutions, batch norm in training mode, ReLU, max
    pooling, residual blocks."""
    width, side = (8, 16) if size == "small" else (16, 32)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = CNN(width=width, num_classes=10)
    x = torch.randn(batch, 3, side, side, generator=_generator(1))
    labels = torch.randint(0, 10, (batch,), generator=_generator(2))
    return TrainingCase(model, (x, labels), _classification)


def gpt2(batch: int, size: str = "small", dropout: float = 0.0) -> TrainingCase:
    """A causal language model, trained on next-token prediction."""
    from transformers import GPT2Config, GPT2LMHeadModel

    width, seq = (32, 12) if size == "small" else (128, 64)
    config = GPT2Config(vocab_size=96, n_positions=64, n_embd=width, n_layer=2, n_head=2,
                        use_cache=False, resid_pdrop=dropout, embd_pdrop=dropout,
                        attn_pdrop=dropout,
                        attn_implementation="sdpa")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = GPT2LMHeadModel(config)
    ids = torch.randint(0, 96, (batch, seq), generator=_generator(1))

    def next_token_loss(m, ids, _targets):
        logits = m(input_ids=ids, return_dict=True).logits
        return F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]),
                               ids[:, 1:].reshape(-1))

    return TrainingCase(model, (ids, ids), next_token_loss)


def bert(batch: int, size: str = "small", dropout: float = 0.0) -> TrainingCase:
    """An encoder with a sequence-classification head."""
    from transformers import BertConfig, BertForSequenceClassification

    width, seq = (32, 10) if size == "small" else (128, 64)
    config = BertConfig(vocab_size=96, hidden_size=width, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=2 * width,
                        max_position_embeddings=64, num_labels=3, hidden_dropout_prob=dropout,
                        attention_probs_dropout_prob=dropout, attn_implementation="sdpa")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = BertForSequenceClassification(config)
    ids = torch.randint(0, 96, (batch, seq), generator=_generator(1))
    labels = torch.randint(0, 3, (batch,), generator=_generator(2))

    def loss(m, ids, labels):
        return F.cross_entropy(m(input_ids=ids, return_dict=True).logits, labels)

    return TrainingCase(model, (ids, labels), loss)


MODELS: dict[str, Callable[..., TrainingCase]] = {"mlp": mlp, "cnn": cnn, "gpt2": gpt2,
                                                  "bert": bert}


def train_on(case: TrainingCase, device: str, steps: int,
             before_last_step: Callable[[], None] | None = None) -> tuple[list[float], nn.Module]:
    """`steps` eager AdamW steps with gradient clipping of a copy of
    `case`'s model on `device`: the losses, and the trained model.
    `before_last_step` runs before the last (a test resets counters there:
    the earlier steps compiled and cached what the last one reuses)."""
    import copy

    model = copy.deepcopy(case.model).to(device)
    inputs = [x.to(device) for x in case.inputs]
    optimizer = OPTIMIZERS["adamw"](model.parameters())
    losses = []
    for step in range(steps):
        if step == steps - 1 and before_last_step is not None:
            before_last_step()
        loss = case.loss(model, *inputs)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        losses.append(loss.item())
    return losses, model
