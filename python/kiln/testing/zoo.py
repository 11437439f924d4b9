"""A zoo of small real-world models for Kiln's tests and benchmarks.

Most come from Hugging Face transformers, built from tiny configs with random
weights (no downloads); two (CNN, UNetBlock) are written here. Each builder
returns a ZooModel: the model in eval mode, returning one plain tensor, and
make_inputs(size) for size in SIZES, so every model runs at two input shapes.

Weights are drawn under torch.manual_seed inside torch.random.fork_rng (the
caller's global RNG is left alone), inputs from seeded generators, so eager,
Kiln and other backends see the same numbers in any order of construction.
The configs are what a user's model would have, only smaller: attention is
attn_implementation="sdpa" (transformers' default) wherever a model has it.
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

import torch
import torch.nn.functional as F
from torch import nn

SIZES = ("small", "large")


class ZooModel(NamedTuple):
    model: nn.Module
    make_inputs: Callable[[str], tuple[torch.Tensor, ...]]


def _generator(seed: int) -> torch.Generator:
    gen = torch.Generator()
    gen.manual_seed(seed)
    return gen


def _pick(size: str, small: Any, large: Any) -> Any:
    if size not in SIZES:
        raise ValueError(f"unknown size {size!r}; sizes are {', '.join(SIZES)}")
    return small if size == "small" else large


def _seeded(
    build: Callable[[], nn.Module],
    seed: int,
    calibration: Callable[[], tuple[torch.Tensor, ...]] | None = None,
) -> nn.Module:
    """build() with parameters drawn from torch's RNG seeded with seed; in eval mode.

    With calibration, batch norms get the running statistics of the model on
    those inputs.
    """
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = build()
        if calibration is not None:
            _calibrate_batch_norms(model, calibration())
    return model.eval()


@torch.no_grad()
def _calibrate_batch_norms(model: nn.Module, inputs: tuple[torch.Tensor, ...]) -> None:
    """Set every batch norm's running statistics to those of its input on one
    forward pass, as training would. Fresh statistics (mean 0, variance 1) do
    not match randomly initialised layers, and activations then shrink or grow
    from layer to layer until the output hardly depends on the input."""
    norms = [m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    momenta = [m.momentum for m in norms]
    for m in norms:
        m.reset_running_stats()
        m.momentum = None  # a cumulative average: one pass gives that pass's statistics
    model.train()
    model(*inputs)
    for m, momentum in zip(norms, momenta):
        m.momentum = momentum


class HFOutput(nn.Module):
    """A transformers model called with keyword inputs, returning one output tensor."""

    def __init__(self, model: nn.Module, input_names: tuple[str, ...], output: str):
        super().__init__()
        self.model = model
        self.input_names = input_names
        self.output = output

    def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
        kwargs = dict(zip(self.input_names, inputs))
        return getattr(self.model(**kwargs, return_dict=True), self.output)


def _hf(
    build: Callable[[], nn.Module],
    inputs: tuple[str, ...],
    output: str,
    calibration: Callable[[], tuple[torch.Tensor, ...]] | None = None,
) -> nn.Module:
    return HFOutput(_seeded(build, 0, calibration), inputs, output).eval()


# ---------------------------------------------------------------------------
# Text

VOCAB = 128


def _token_ids(batch: int, seq: int, seed: int) -> torch.Tensor:
    return torch.randint(0, VOCAB, (batch, seq), generator=_generator(seed))


def _text_shape(size: str) -> tuple[int, int]:
    return _pick(size, (1, 8), (2, 24))


def bert() -> ZooModel:
    from transformers import BertConfig, BertModel

    config = BertConfig(
        vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=64, max_position_embeddings=64, attn_implementation="sdpa",
    )
    model = _hf(lambda: BertModel(config), ("input_ids", "attention_mask"), "last_hidden_state")

    def make_inputs(size: str) -> tuple[torch.Tensor, ...]:
        batch, seq = _text_shape(size)
        mask = torch.ones(batch, seq, dtype=torch.int64)
        if batch > 1:
            mask[1, seq - seq // 3:] = 0  # the second sequence is padded
        return _token_ids(batch, seq, seed=1), mask

    return ZooModel(model, make_inputs)


def _causal_lm_inputs(size: str) -> tuple[torch.Tensor, ...]:
    batch, seq = _text_shape(size)
    return (_token_ids(batch, seq, seed=1),)


def gpt2() -> ZooModel:
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(
        vocab_size=VOCAB, n_positions=64, n_embd=32, n_layer=2, n_head=2, use_cache=False,
        bos_token_id=VOCAB - 1, eos_token_id=VOCAB - 1, attn_implementation="sdpa",
    )
    return ZooModel(_hf(lambda: GPT2LMHeadModel(config), ("input_ids",), "logits"), _causal_lm_inputs)


def t5() -> ZooModel:
    from transformers import T5Config, T5Model

    config = T5Config(
        vocab_size=VOCAB, d_model=32, d_kv=16, d_ff=64, num_layers=2, num_decoder_layers=2,
        num_heads=2, relative_attention_num_buckets=8, relative_attention_max_distance=32,
        use_cache=False, attn_implementation="sdpa",
    )
    model = _hf(lambda: T5Model(config), ("input_ids", "decoder_input_ids"), "last_hidden_state")

    def make_inputs(size: str) -> tuple[torch.Tensor, ...]:
        batch, seq = _text_shape(size)
        return _token_ids(batch, seq, seed=1), _token_ids(batch, seq // 2, seed=2)

    return ZooModel(model, make_inputs)


def llama() -> ZooModel:
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=64,
        use_cache=False, attn_implementation="sdpa",
    )
    return ZooModel(_hf(lambda: LlamaForCausalLM(config), ("input_ids",), "logits"), _causal_lm_inputs)


def mistral() -> ZooModel:
    from transformers import MistralConfig, MistralForCausalLM

    # A sliding window shorter than the large input, so both mask shapes occur.
    config = MistralConfig(
        vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=64,
        sliding_window=16, use_cache=False, attn_implementation="sdpa",
    )
    return ZooModel(_hf(lambda: MistralForCausalLM(config), ("input_ids",), "logits"), _causal_lm_inputs)


# ---------------------------------------------------------------------------
# Vision and audio

NUM_LABELS = 10
CALIBRATION_SEED = 7  # batch norm statistics come from other images than the test inputs


def _images(batch: int, side: int, seed: int = 1) -> tuple[torch.Tensor]:
    return (torch.randn(batch, 3, side, side, generator=_generator(seed)),)


def vit() -> ZooModel:
    from transformers import ViTConfig, ViTForImageClassification

    config = ViTConfig(
        image_size=16, patch_size=4, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=64, num_labels=NUM_LABELS, attn_implementation="sdpa",
    )
    model = _hf(lambda: ViTForImageClassification(config), ("pixel_values",), "logits")
    # The position embeddings fix the image size; the sizes differ in batch.
    return ZooModel(model, lambda size: _images(_pick(size, 1, 4), 16))


def swin() -> ZooModel:
    from transformers import SwinConfig, SwinForImageClassification

    # Two blocks in the first stage: the second one shifts its windows.
    config = SwinConfig(
        image_size=32, patch_size=2, embed_dim=16, depths=(2, 1), num_heads=(2, 4), window_size=4,
        mlp_ratio=2.0, drop_path_rate=0.0, num_labels=NUM_LABELS, attn_implementation="sdpa",
    )
    model = _hf(lambda: SwinForImageClassification(config), ("pixel_values",), "logits")
    return ZooModel(model, lambda size: _images(*_pick(size, (1, 32), (2, 48))))


def resnet() -> ZooModel:
    from transformers import ResNetConfig, ResNetForImageClassification

    config = ResNetConfig(
        embedding_size=16, hidden_sizes=(16, 32), depths=(1, 1), layer_type="basic",
        num_labels=NUM_LABELS,
    )
    model = _hf(lambda: ResNetForImageClassification(config), ("pixel_values",), "logits",
                calibration=lambda: _images(4, 32, seed=CALIBRATION_SEED))
    return ZooModel(model, lambda size: _images(*_pick(size, (1, 32), (2, 64))))


def efficientnet() -> ZooModel:
    from transformers import EfficientNetConfig, EfficientNetForImageClassification

    # hidden_dim is the width of the top convolution, round_filters(1280).
    # transformers draws batch norm weights too from N(0, initializer_range);
    # at the default 0.02 every block scales activations down 50x.
    config = EfficientNetConfig(
        image_size=32, width_coefficient=0.25, depth_coefficient=1.0,
        kernel_sizes=(3, 3, 5), in_channels=(32, 16, 24), out_channels=(16, 24, 40),
        strides=(1, 2, 2), num_block_repeats=(1, 2, 1), expand_ratios=(1, 6, 6),
        hidden_dim=320, initializer_range=1.0, num_labels=NUM_LABELS,
    )
    model = _hf(lambda: EfficientNetForImageClassification(config), ("pixel_values",), "logits",
                calibration=lambda: _images(4, 32, seed=CALIBRATION_SEED))
    return ZooModel(model, lambda size: _images(*_pick(size, (1, 32), (2, 64))))


def wav2vec2() -> ZooModel:
    from transformers import Wav2Vec2Config, Wav2Vec2Model

    config = Wav2Vec2Config(
        hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
        conv_dim=(16, 16, 16), conv_stride=(5, 2, 2), conv_kernel=(10, 3, 3),
        num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=2,
        vocab_size=VOCAB, attn_implementation="sdpa",
    )
    model = _hf(lambda: Wav2Vec2Model(config), ("input_values",), "last_hidden_state")

    def make_inputs(size: str) -> tuple[torch.Tensor, ...]:
        batch, samples = _pick(size, (1, 800), (2, 1600))
        return (torch.randn(batch, samples, generator=_generator(1)),)

    return ZooModel(model, make_inputs)


# ---------------------------------------------------------------------------
# Written here


class ResidualBlock(nn.Module):
    def __init__(self, channels_in: int, channels_out: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(channels_in, channels_out, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels_out)
        self.conv2 = nn.Conv2d(channels_out, channels_out, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels_out)
        self.shortcut: nn.Module = nn.Identity()
        if stride != 1 or channels_in != channels_out:
            self.shortcut = nn.Sequential(
                nn.Conv2d(channels_in, channels_out, 1, stride, bias=False), nn.BatchNorm2d(channels_out)
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return F.relu(y + self.shortcut(x))


class CNN(nn.Module):
    """Conv-BN-ReLU stem, max pool, two residual blocks, global average pool, linear."""

    def __init__(self, width: int = 16, num_classes: int = NUM_LABELS):
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, width, 3, 1, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU(),
            nn.MaxPool2d(3, 2, 1),
        )
        self.block1 = ResidualBlock(width, width, 1)
        self.block2 = ResidualBlock(width, 2 * width, 2)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(2 * width, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.block2(self.block1(self.stem(x)))
        return self.fc(torch.flatten(self.pool(x), 1))


def cnn() -> ZooModel:
    model = _seeded(CNN, seed=0, calibration=lambda: _images(4, 32, seed=CALIBRATION_SEED))
    return ZooModel(model, lambda size: _images(*_pick(size, (1, 32), (2, 48))))


class ConvGNSiLU(nn.Sequential):
    def __init__(self, channels_in: int, channels_out: int, groups: int = 4):
        super().__init__(
            nn.Conv2d(channels_in, channels_out, 3, padding=1), nn.GroupNorm(groups, channels_out), nn.SiLU()
        )


class UNetBlock(nn.Module):
    """Two levels down (average pool, then max pool) and back up (nearest,
    then bilinear upsampling), concatenating the skip connections."""

    def __init__(self, channels: int = 3, width: int = 16):
        super().__init__()
        self.enc1 = nn.Sequential(ConvGNSiLU(channels, width), ConvGNSiLU(width, width))
        self.enc2 = ConvGNSiLU(width, 2 * width)
        self.mid = ConvGNSiLU(2 * width, 2 * width)
        self.dec2 = ConvGNSiLU(4 * width, width)
        self.dec1 = ConvGNSiLU(2 * width, width)
        self.out = nn.Conv2d(width, channels, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        s1 = self.enc1(x)
        s2 = self.enc2(F.avg_pool2d(s1, 2))
        m = self.mid(F.max_pool2d(s2, 2))
        d2 = self.dec2(torch.cat([F.interpolate(m, scale_factor=2, mode="nearest"), s2], dim=1))
        up = F.interpolate(d2, scale_factor=2, mode="bilinear", align_corners=False)
        d1 = self.dec1(torch.cat([up, s1], dim=1))
        return self.out(d1)


def unet() -> ZooModel:
    model = _seeded(UNetBlock, seed=0)
    return ZooModel(model, lambda size: _images(*_pick(size, (1, 32), (2, 64))))


# name -> builder, in the order tests and benchmarks list them.
ZOO: dict[str, Callable[[], ZooModel]] = {
    "bert": bert,
    "gpt2": gpt2,
    "t5": t5,
    "llama": llama,
    "mistral": mistral,
    "vit": vit,
    "swin": swin,
    "resnet": resnet,
    "efficientnet": efficientnet,
    "wav2vec2": wav2vec2,
    "cnn": cnn,
    "unet": unet,
}


def build(name: str) -> ZooModel:
    """The zoo model called name (a key of ZOO)."""
    try:
        builder = ZOO[name]
    except KeyError:
        raise ValueError(f"unknown zoo model {name!r}; models are {', '.join(ZOO)}") from None
    return builder()
