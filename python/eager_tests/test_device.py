"""The kiln device's plumbing, as PyTorch's out-of-tree device example
(torch_openreg) tests its own: registration, devices, memory, copies,
serialization, pinned memory, random numbers, streams and events, and the
fallback's bookkeeping."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import textwrap
import warnings

import pytest
import torch

import kiln.device

pytestmark = pytest.mark.unit


def run_python(code: str, **env: str) -> str:
    """Runs `code` in a fresh interpreter (registration is once per
    process) and returns what it printed."""
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                            env={**os.environ, **env}, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


# --- Registration ------------------------------------------------------------


def test_only_importing_kiln_device_makes_kiln_the_accelerator():
    printed = run_python("""
        import torch
        before = torch.accelerator.current_accelerator()
        import kiln, kiln.backend
        after_kiln = torch.accelerator.current_accelerator()
        import kiln.device
        print(before, after_kiln, torch.accelerator.current_accelerator(), torch.kiln.__name__)
    """)
    assert printed == "None None kiln kiln.device"


def test_devices_come_from_the_environment():
    printed = run_python("""
        import torch, kiln.device
        x = torch.ones(3, device="kiln:2")
        with torch.kiln.device(1):
            y = torch.ones(5, device="kiln")
        print(torch.kiln.device_count(), torch.accelerator.device_count(), x.device, y.device,
              torch.kiln.memory_allocated(2), torch.kiln.memory_allocated(1), torch.kiln.memory_allocated(0))
    """, KILN_NUM_DEVICES="3")
    assert printed == "3 3 kiln:2 kiln:1 12 20 0"


def test_torchrun_local_world_size_sets_the_device_count():
    assert run_python("import torch, kiln.device; print(torch.kiln.device_count())", LOCAL_WORLD_SIZE="2") == "2"


def test_kiln_device_rejects_unknown_drivers_by_name():
    # A failed import registers nothing, so one process tries both.
    printed = run_python("""
        import os
        for driver in ("tpu", "cuda"):
            os.environ["KILN_DEVICE"] = driver
            try:
                import kiln.device
            except Exception as err:
                print(type(err).__name__, str(err).splitlines()[0])
    """).splitlines()
    assert printed[0] == "ValueError $KILN_DEVICE must be one of cpu, vulkan, cuda; got 'tpu'"
    # The runtime's CUDA driver, on a machine without libcuda: an error that
    # says so and how to point the runtime at one.
    assert printed[1].startswith("RuntimeError kiln: KILN_DEVICE=cuda:"), printed
    assert "no CUDA driver: cannot load libcuda.so.1" in printed[1], printed


def test_a_bad_device_count_is_a_clear_error():
    result = subprocess.run([sys.executable, "-c", "import kiln.device"], capture_output=True, text=True,
                            env={**os.environ, "KILN_NUM_DEVICES": "many"}, timeout=120)
    assert result.returncode != 0
    assert "$KILN_NUM_DEVICES must be a whole number" in result.stderr


def test_an_invalid_device_index_names_the_range():
    with pytest.raises(IndexError, match=r"kiln:5 \(this process has 1 kiln device"):
        torch.kiln.set_device(5)
    with pytest.raises(IndexError, match="kiln:3"):
        torch.ones(2, device="kiln:3")


def test_device_module_answers_what_core_pytorch_asks():
    assert torch.kiln.is_available() and torch.kiln.is_initialized()
    assert not torch.kiln._is_in_bad_fork()
    assert torch.kiln.current_device() == 0
    assert torch.bfloat16 in torch.kiln.get_amp_supported_dtype()
    assert torch.get_device_module("kiln") is kiln.device
    assert torch.device("kiln").type == "kiln"


# --- Memory ------------------------------------------------------------------


def test_memory_statistics_follow_allocations():
    torch.kiln.reset_peak_memory_stats()
    before = torch.kiln.memory_allocated()
    x = torch.empty(1 << 18, device="kiln")  # 1 MiB
    assert torch.kiln.memory_allocated() - before == 1 << 20
    assert torch.accelerator.memory_allocated() == torch.kiln.memory_allocated()
    assert torch.kiln.max_memory_allocated() >= before + (1 << 20)
    del x
    assert torch.kiln.memory_allocated() == before
    torch.kiln.reset_peak_memory_stats()
    assert torch.kiln.max_memory_allocated() == before
    assert torch.kiln.memory_stats()["allocated_bytes.all.current"] == before


def test_results_of_fallback_ops_are_counted_device_memory():
    x = torch.ones(1000, device="kiln")
    before = torch.kiln.memory_allocated()
    y = x.exp()  # a new result: CPU memory the device adopts, not copied
    assert torch.kiln.memory_allocated() - before == 4000
    del y
    assert torch.kiln.memory_allocated() == before


def test_storage_resize_keeps_the_prefix():
    s = torch.arange(4.0, device="kiln").untyped_storage()
    s.resize_(32)
    assert s.device.type == "kiln" and s.nbytes() == 32
    assert torch.equal(torch.tensor([], dtype=torch.float32, device="kiln").set_(s)[:4].cpu(), torch.arange(4.0))


# --- Copies, views, printing, errors as on CUDA ----------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64, torch.bfloat16, torch.bool])
def test_copies_round_trip(dtype):
    x = (torch.randn(5, 7) * 4).to(dtype)
    k = x.to("kiln")
    assert k.device == torch.device("kiln:0") and k.dtype == dtype
    assert torch.equal(k.cpu(), x)
    assert torch.equal(k.clone().cpu(), x)
    assert torch.equal(k.t().contiguous().cpu(), x.t())
    assert torch.equal(k.to(torch.float64).cpu(), x.to(torch.float64))


def test_views_share_device_memory():
    k = torch.zeros(4, 6, device="kiln")
    k[1:3, ::2] = 1.0
    k.view(24)[0] = 5.0
    k.unfold(1, 2, 2)[3, 2, 1] = 7.0  # unfold runs through the fallback and must alias
    expected = torch.zeros(4, 6)
    expected[1:3, ::2] = 1.0
    expected.view(24)[0] = 5.0
    expected[3, 5] = 7.0
    assert torch.equal(k.cpu(), expected)


def test_out_arguments_are_resized_and_written_in_place():
    a, b = torch.randn(3, 4), torch.randn(3, 4)
    out = torch.empty(0, device="kiln")
    torch.add(a.to("kiln"), b.to("kiln"), out=out)
    assert out.shape == (3, 4) and out.device.type == "kiln"
    assert torch.allclose(out.cpu(), a + b)
    k = a.to("kiln")
    k.mul_(2).add_(1)
    assert torch.allclose(k.cpu(), a * 2 + 1)


def test_printing_and_numpy_behave_as_on_cuda():
    k = torch.tensor([1.5, -2.0], device="kiln")
    assert "device='kiln:0'" in repr(k)
    with pytest.raises(TypeError, match="can't convert kiln:0 device type tensor to numpy"):
        k.numpy()
    assert k.sum().item() == -0.5


def test_module_and_tensor_methods_are_generated():
    m = torch.nn.Linear(3, 2).kiln()
    assert m.weight.device.type == "kiln" and m.weight.is_kiln
    assert torch.ones(2).kiln().device.type == "kiln"


# --- Serialization and pinned memory ------------------------------------------


def test_save_and_load_with_map_location():
    state = {"w": torch.randn(3, 3, device="kiln"), "step": 4}
    buffer = io.BytesIO()
    torch.save(state, buffer)
    for location, device in [(None, "kiln"), ("cpu", "cpu"), ("kiln:0", "kiln")]:
        buffer.seek(0)
        loaded = torch.load(buffer, map_location=location)
        assert loaded["w"].device.type == device
        assert torch.equal(loaded["w"].cpu(), state["w"].cpu())
    buffer = io.BytesIO()
    torch.save(torch.arange(3), buffer)
    buffer.seek(0)
    assert torch.load(buffer, map_location="kiln").device.type == "kiln"


def test_pinned_host_memory_and_the_data_loader():
    pinned = torch.randn(16).pin_memory()
    assert pinned.is_pinned() and not torch.randn(16).is_pinned()
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.arange(8.0)), batch_size=4,
                                         pin_memory=True)
    for (batch,) in loader:
        assert batch.is_pinned()
        assert torch.equal(batch.to("kiln", non_blocking=True).cpu(), batch)


# --- Random numbers -------------------------------------------------------------


def test_seeding_reproduces_random_numbers():
    torch.manual_seed(7)
    first = torch.randn(100, device="kiln").cpu()
    torch.manual_seed(7)
    assert torch.equal(torch.randn(100, device="kiln").cpu(), first)
    torch.kiln.manual_seed(7)
    assert torch.equal(torch.randn(100, device="kiln").cpu(), first)
    assert torch.kiln.initial_seed() == 7
    assert not torch.equal(torch.randn(100, device="kiln").cpu(), first)


def test_rng_state_is_a_16_byte_seed_and_offset_that_replays():
    state = torch.kiln.get_rng_state()
    assert state.dtype == torch.uint8 and state.shape == (16,)
    drawn = torch.rand(50, device="kiln").cpu()
    torch.kiln.set_rng_state(state)
    assert torch.equal(torch.rand(50, device="kiln").cpu(), drawn)
    with pytest.raises(RuntimeError, match="16 bytes"):
        torch.kiln.set_rng_state(torch.zeros(8, dtype=torch.uint8))


def test_explicit_generators_and_random_ops():
    generator = torch.Generator(device="kiln").manual_seed(3)
    a = torch.rand(64, device="kiln", generator=generator).cpu()
    generator.manual_seed(3)
    assert torch.equal(torch.rand(64, device="kiln", generator=generator).cpu(), a)
    assert ((a >= 0) & (a < 1)).all()
    ints = torch.randint(0, 5, (1000,), device="kiln").cpu()
    assert set(ints.tolist()) == {0, 1, 2, 3, 4}
    kept = torch.nn.functional.dropout(torch.ones(20000, device="kiln"), 0.25).cpu()
    assert abs((kept == 0).float().mean().item() - 0.25) < 0.02
    assert torch.allclose(kept[kept != 0], torch.tensor(1 / 0.75))
    assert torch.bernoulli(torch.full((4000,), 0.5, device="kiln")).mean().item() == pytest.approx(0.5, abs=0.05)
    assert torch.multinomial(torch.tensor([0.0, 1.0, 0.0], device="kiln"), 3, replacement=True).tolist() == [1, 1, 1]
    with pytest.raises(RuntimeError, match="Expected a 'kiln' device type for generator"):
        torch.rand(3, device="kiln", generator=torch.Generator().manual_seed(0))


def test_checkpointed_activations_replay_dropout():
    from torch.utils.checkpoint import checkpoint

    layer = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Dropout(0.5)).to("kiln")
    x = torch.randn(4, 8, device="kiln", requires_grad=True)
    torch.manual_seed(1)
    checkpoint(layer, x, use_reentrant=False).sum().backward()
    replayed = x.grad.cpu()
    x.grad = None
    torch.manual_seed(1)
    layer(x).sum().backward()
    assert torch.equal(x.grad.cpu(), replayed)


# --- Streams and events --------------------------------------------------------


def test_streams_and_events():
    stream = torch.kiln.Stream()
    assert stream.device == torch.device("kiln:0")
    assert torch.kiln.current_stream() != stream
    with torch.kiln.stream(stream):
        assert torch.kiln.current_stream() == stream
    assert torch.kiln.current_stream() != stream
    start, end = torch.kiln.Event(enable_timing=True), torch.kiln.Event(enable_timing=True)
    start.record()
    torch.randn(64, 64, device="kiln").sum()
    end.record()
    end.synchronize()
    assert end.query() and start.elapsed_time(end) >= 0
    torch.kiln.synchronize()
    stream.synchronize()


# --- The fallback's bookkeeping ------------------------------------------------


def test_stats_count_kernel_fallback_and_native_calls():
    x = torch.randn(8, device="kiln")
    kiln.device.reset_stats()
    x.exp()
    x.exp()
    x.lgamma()  # no Kiln kernel: ATen's
    x.view(2, 4)
    stats = kiln.device.stats()
    assert stats["kernel"] == {"aten::exp": 2}
    assert stats["fallback"] == {"aten::lgamma.out": 1}
    assert stats["native"]["aten::view"] == 1
    assert (stats["kernel_calls"], stats["fallback_calls"]) == (2, 1)


def test_fallback_policy_warns_once_per_op_or_raises():
    x = torch.randn(8, device="kiln")
    kiln.device.reset_stats()
    kiln.device.set_fallback_policy("warn")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        x.lgamma()
        x.lgamma()
    messages = [str(w.message) for w in caught if "aten::lgamma.out" in str(w.message)]
    assert len(messages) == 1 and "no Kiln kernel yet" in messages[0]
    kiln.device.set_fallback_policy("error")
    with pytest.raises(NotImplementedError, match="aten::digamma.out has no Kiln kernel.*KILN_EAGER_FALLBACK=error"):
        x.digamma()
    x.cos()  # a Kiln kernel: allowed
    with pytest.raises(ValueError, match="'allow', 'warn' or 'error'"):
        kiln.device.set_fallback_policy("sometimes")


def test_fallback_policy_from_the_environment():
    printed = run_python("""
        import torch, kiln.device
        x = torch.ones(2).to("kiln")  # a copy: the device's own op
        try:
            x.erfinv()
        except NotImplementedError as e:
            print(kiln.device.fallback_policy(), "aten::erfinv.out" in str(e))
    """, KILN_EAGER_FALLBACK="error")
    assert printed == "error True"


def test_backward_runs_on_the_device():
    w = torch.randn(5, 3, device="kiln", requires_grad=True)
    x = torch.randn(4, 5)
    (x.to("kiln") @ w).tanh().sum().backward()
    w_cpu = w.detach().cpu().requires_grad_()
    (x @ w_cpu).tanh().sum().backward()
    assert w.grad.device.type == "kiln"
    assert torch.allclose(w.grad.cpu(), w_cpu.grad, atol=1e-6)
