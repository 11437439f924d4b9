"""Compiling for a named CPU: x86-64 levels and CPUs by name, whatever this
machine is. Kernels use the target's vector registers, artifacts record its
features, and a machine that lacks one refuses the artifact before running
it."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import kiln
from kiln_test_utils import unwrap_backend_error

pytestmark = [pytest.mark.e2e, pytest.mark.device("cpu")]  # CPU targets and their instruction sets


def _model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Flatten(),
                         nn.Linear(8 * 6 * 6, 40), nn.GELU(), nn.Linear(40, 10))


def _compile(model, target, **options):
    torch._dynamo.reset()
    return torch.compile(model, backend="kiln", dynamic=False,
                         options={"target": target, "fallback": "error", "cache": False,
                                  **options})


def _host_has(feature: str) -> bool:
    return f"+{feature}" in kiln._C.compiler.target_info("cpu")["features"].split(",")


@pytest.mark.parametrize("target,bits,absent", [
    ("cpu:x86-64-v2", 128, ("%ymm", "%zmm")),
    ("cpu:x86-64-v3", 256, ("%zmm",)),
])
@pytest.mark.parametrize("batch", [1, 5])
def test_x86_64_levels_compile_with_their_vector_width(target, bits, absent, batch, tmp_path):
    info = kiln._C.compiler.target_info(target)
    assert info["cpu"] == target.split(":")[1] and info["vector_bits"] == bits
    model = _model()
    x = torch.randn(batch, 3, 6, 6)
    with torch.no_grad():
        actual = _compile(model, target, dump_dir=str(tmp_path))(x)
        expected = model(x)
    torch.testing.assert_close(actual, expected, rtol=1e-4, atol=1e-5)
    records = kiln.compile_records()
    assert records and all(r.status == "compiled" and r.target == target for r in records)
    assembly = "".join(p.read_text() for p in tmp_path.rglob("kernels.s"))
    assert "vfmadd" in assembly or bits == 128  # x86-64-v2 has no FMA
    for register in absent:
        assert register not in assembly, f"{target} kernels use {register}"


def test_avx512_level_runs_only_where_the_cpu_has_avx512():
    """cpu:x86-64-v4 kernels use AVX-512: they run on a CPU with it and are
    refused, naming the missing features, on one without."""
    model = _model()
    x = torch.randn(3, 3, 6, 6)
    compiled = _compile(model, "cpu:x86-64-v4")
    if _host_has("avx512f"):
        with torch.no_grad():
            torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-5)
    else:
        with pytest.raises(Exception, match="lacks.*avx512"):
            compiled(x)


def test_unknown_target_is_an_error_before_tracing():
    with pytest.raises(Exception) as info:
        _compile(_model(), "cpu:pentium9")(torch.randn(1, 3, 6, 6))
    err = unwrap_backend_error(info.value)
    assert isinstance(err, ValueError)
    assert "unknown target 'cpu:pentium9'" in str(err) and "cpu:x86-64-v3" in str(err)
    assert not kiln.compile_records()


def test_the_target_is_part_of_the_cache_key(tmp_path):
    model = _model()
    x = torch.randn(2, 3, 6, 6)
    for target, hits in (("cpu:x86-64-v3", 0), ("cpu:x86-64-v2", 0), ("cpu:x86-64-v3", 1)):
        kiln.reset()
        torch._dynamo.reset()
        with torch.no_grad():
            torch.compile(model, backend="kiln", options={
                "target": target, "cache": True, "cache_dir": str(tmp_path)})(x)
        assert sum(r.cache_hits for r in kiln.compile_records()) == hits, target


def _same_bits(actual: torch.Tensor, expected: torch.Tensor) -> None:
    nan = expected.isnan()
    assert torch.equal(actual.isnan(), nan)
    bits = {torch.float16: torch.int16, torch.bfloat16: torch.int16, torch.float32: torch.int32}
    a, e = actual[~nan].view(bits[actual.dtype]), expected[~nan].view(bits[expected.dtype])
    mismatch = (a != e).nonzero()
    assert mismatch.numel() == 0, (f"{mismatch.numel()} values differ, first at "
                                   f"{expected[~nan][mismatch[0]]}: {a[mismatch[0]]} vs {e[mismatch[0]]}")


def _float_samples() -> torch.Tensor:
    """Every float16 and bfloat16 value as float32, the midpoints between
    neighbours (ties round to even), and random floats of every magnitude
    (subnormal, overflowing, NaN, infinities)."""
    halves = torch.arange(-32768, 32768, dtype=torch.int32).to(torch.int16)
    values = [halves.view(torch.float16).float(), halves.view(torch.bfloat16).float()]
    for v in list(values):
        finite = v[v.isfinite()].sort().values
        values.append((finite[1:] + finite[:-1]) / 2)
    exponents = torch.randint(-160, 140, (20000,), generator=torch.Generator().manual_seed(0))
    values.append(torch.randn(20000, generator=torch.Generator().manual_seed(1)) * 2.0 ** exponents)
    values.append(torch.tensor([float("nan"), float("inf"), -float("inf"), 0.0, -0.0, 65520.0,
                                65519.99, 2.0 ** -25, 2.0 ** -24, 3.0 * 2.0 ** -26]))
    return torch.cat(values)


@pytest.mark.parametrize("target", ["cpu", "cpu:x86-64-v2", "cpu:x86-64-v3"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_conversions_are_exact_on_every_level(target, dtype):
    """x86-64-v2 has no F16C and x86-64-v3 no AVX512-BF16: there the kernel
    library's own conversion routines round, and must round as c10 does,
    bit for bit."""
    if target == "cpu:x86-64-v3" and not _host_has("avx2"):
        pytest.skip("this CPU cannot run x86-64-v3 code")
    samples = _float_samples()
    narrowed = _compile(lambda x: x.to(dtype), target)(samples)
    _same_bits(narrowed, samples.to(dtype))
    every = torch.arange(-32768, 32768, dtype=torch.int32).to(torch.int16).view(dtype)
    widened = _compile(lambda x: x.float(), target)(every)
    _same_bits(widened, every.float())
    assert all(r.status == "compiled" for r in kiln.compile_records())


def test_aarch64_artifacts_are_cross_compiled_and_refused_here():
    """cpu:aarch64 compiles on any host; an x86-64 runtime refuses to load
    the artifact, naming both architectures."""
    import platform

    from torch.fx.experimental.proxy_tensor import make_fx

    from kiln.fx_serialize import serialize_graph

    aten = make_fx(lambda x: torch.relu(x) * 2, tracing_mode="fake")(torch.randn(4, 8))
    graph_json = serialize_graph(aten, "relu_twice").to_json()
    result = kiln._C.compiler.compile(graph_json, "cpu:aarch64", False)
    assert len(result.artifact) > 0 and result.target == "cpu-aarch64"
    if platform.machine() == "x86_64":
        with pytest.raises(ValueError, match="cpu-aarch64.*cpu-x86_64"):
            kiln._C.runtime.Executable(result.artifact)
