"""torch.distributed on the kiln device: the "kiln" process group backend
(kiln/distributed.py), DDP and FSDP2 on kiln tensors, eager and compiled,
against the same runs on `cpu + gloo` and against one process.

Ranks are spawned processes on loopback (kiln.testing.distributed), two of
them, bounded in time. The gating tier runs the collectives, the MLP through
DDP and FSDP2, the compiled tensor-parallel Llama (with and without sequence
parallelism), a checkpoint, DTensor's random ops and a rank that raises or is
killed; GPT-2, the other FSDP2 settings, the eager tensor-parallel runs and a
stalled rank are in the slow tier.
"""

from __future__ import annotations

import time

import pytest
import torch

from kiln.testing import distributed, training

pytestmark = pytest.mark.e2e

WORLD = 2
STEPS = 10


def _ranked(rank: int, *shape: int) -> torch.Tensor:
    return torch.arange(torch.Size(shape).numel(), dtype=torch.float32).reshape(shape) + 100 * rank


def _expected_collectives(rank: int) -> dict[str, object]:
    ranks = range(WORLD)
    return {
        "all_reduce": sum(_ranked(r, 3, 4) for r in ranks),
        "all_reduce_max": _ranked(WORLD - 1, 5),
        "broadcast": _ranked(1, 6).long(),
        "all_gather": [_ranked(r, 2, 3) for r in ranks],
        "all_gather_into_tensor": torch.cat([_ranked(r, 4) for r in ranks]),
        "reduce_scatter_tensor": sum(_ranked(r, WORLD * 3) for r in ranks)[3 * rank:3 * rank + 3],
        "all_to_all_single": torch.cat([_ranked(r, WORLD * 2)[2 * rank:2 * rank + 2] for r in ranks]),
        "async_all_reduce": sum(_ranked(r, 1000) for r in ranks),
    }


def _check_collectives(device: str, results: list[dict]) -> None:
    for rank, got in enumerate(results):
        for name, expected in _expected_collectives(rank).items():
            value = got[name]
            if name == "all_reduce":
                value, in_place = value
                assert in_place, "all_reduce replaced the tensor's memory"
            if isinstance(expected, list):
                assert all(torch.equal(v, e) for v, e in zip(value, expected)), (device, rank, name, value)
            else:
                assert torch.equal(value, expected), (device, rank, name, value, expected)
        assert got["future_value"] == [device]  # the future's value is the caller's tensor
        # Four all_reduces of 12, 5, 1000 and 7 float32s; one broadcast of 6 int64s.
        assert got["stats"]["all_reduce"] == {"calls": 4, "bytes": 4 * (12 + 5 + 1000 + 7)}
        assert got["stats"]["broadcast"] == {"calls": 1, "bytes": 6 * 8}
    assert torch.equal(results[1]["recv"], _ranked(0, 4))


def test_collectives_of_the_kiln_backend():
    """Every collective DDP, FSDP2 and DTensor use, on kiln tensors (gloo on
    their memory, results in place) and on CPU tensors of the same group."""
    devices = ["kiln", "cpu"]
    ranks = distributed.run_ranks(distributed.collectives_on, WORLD, devices)
    for device in devices:
        _check_collectives(device, [by_device[device] for by_device in ranks])


def _one_process_params(model_name: str, steps: int, accumulate: int = 1,
                        batch_per_rank: int = 2) -> dict[str, torch.Tensor]:
    """The parameters after the same training on one process over the
    global batch, on the CPU (the ranks' mean loss is the batch's)."""
    torch.manual_seed(0)
    case = training.MODELS[model_name](batch=batch_per_rank * WORLD * accumulate)
    _, model = training.train_on(case, "cpu", steps)
    return {k: v.detach() for k, v in model.state_dict().items()}


def _assert_params_match(params: dict, reference: dict, rel: float = 1e-3, atol: float = 1e-4) -> None:
    for name, value in reference.items():
        torch.testing.assert_close(params[name], value, rtol=rel, atol=atol, msg=name)


def _assert_matches(run: dict, reference: dict, rel: float = 1e-4, atol: float = 1e-5) -> None:
    assert run["losses"] == pytest.approx(reference["losses"], rel=rel, abs=atol)
    _assert_params_match(run["params"], reference["params"], rel * 10, atol * 10)


def _assert_ran_in_kiln(run: dict, compiled: bool) -> None:
    if compiled:
        assert run["kiln_graphs"] > 0, "no Kiln graph compiled"
    else:
        assert run["kernel_calls"] > 0 and run["kernel_calls"] >= 0.95 * (
            run["kernel_calls"] + run["fallback_calls"]), run["fallbacks"]


def _check_ddp(model_name: str, compiled: bool, accumulate: int = 1, batch_per_rank: int = 2) -> None:
    ranks = distributed.run_ranks(distributed.compare_ddp, WORLD, model_name, STEPS, compiled, accumulate,
                                  batch_per_rank)
    one_process = _one_process_params(model_name, STEPS, accumulate, batch_per_rank)
    for runs in ranks:
        gloo, kiln = runs["cpu+gloo"], runs["kiln+kiln"]
        assert kiln["devices"] == ["kiln"] and gloo["devices"] == ["cpu"]
        # Compiled: also Kiln's graphs on CPU tensors, through the gloo group.
        for run in [kiln] + ([runs["cpu+gloo compiled"]] if compiled else []):
            _assert_ran_in_kiln(run, compiled)
            _assert_matches(run, gloo)
            _assert_params_match(run["params"], one_process)
    assert ranks[0]["kiln+kiln"]["losses"] != ranks[1]["kiln+kiln"]["losses"]  # each its own shard


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_ddp_on_kiln_matches_cpu_gloo_and_one_process(compiled):
    """Eagerly with gradient accumulation (a micro-batch under no_sync(),
    then one that synchronizes); compiled (DDPOptimizer's bucket graphs
    through Kiln) one batch a step, of another size."""
    _check_ddp("mlp", compiled, accumulate=1 if compiled else 2, batch_per_rank=3 if compiled else 2)


@pytest.mark.slow
@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_ddp_trains_gpt2_on_kiln_like_cpu_gloo(compiled):
    _check_ddp("gpt2", compiled)


def _check_fsdp(model_name: str, compiled: bool, reshard_after_forward: bool = True,
                mixed_precision: bool = False, checkpointed: bool = False, device: str = "kiln") -> None:
    """FSDP2 on `device` ("kiln", or "cpu" through gloo) against cpu + gloo eager."""
    gloo = distributed.run_ranks(distributed.train_fsdp, WORLD, model_name, "cpu", STEPS, False,
                                 reshard_after_forward, mixed_precision, backend="gloo", kiln_device=False)
    kiln = distributed.run_ranks(distributed.train_fsdp, WORLD, model_name, device, STEPS, compiled,
                                 reshard_after_forward, mixed_precision, "small", 2, checkpointed,
                                 backend="kiln" if device == "kiln" else "gloo", kiln_device=device == "kiln")
    # bfloat16 parameters: Kiln computes in float32 and rounds once, eager per op.
    rel, atol = (2e-2, 2e-2) if mixed_precision else (1e-4, 1e-5)
    for rank in range(WORLD):
        _assert_ran_in_kiln(kiln[rank], compiled)
        _assert_matches(kiln[rank], gloo[rank], rel=rel, atol=atol)
    if not mixed_precision:
        _assert_params_match(kiln[0]["params"], _one_process_params(model_name, STEPS))


@pytest.mark.slow
def test_fsdp2_with_torch_nn_layers_compiled_one_by_one():
    """Found by the benchmark: kernels the device compiles while Dynamo's
    frame hook is set (a compiled nn.Linear runs eagerly) were traced."""
    for run in distributed.run_ranks(distributed.fsdp_per_layer_compile, WORLD, 3):
        assert run["per_layer_compile"] == pytest.approx(run["eager"], rel=1e-5)


def test_fsdp2_on_kiln_matches_cpu_gloo_and_one_process():
    _check_fsdp("mlp", compiled=False)


@pytest.mark.slow
@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
@pytest.mark.parametrize("reshard_after_forward", [True, False], ids=["reshard", "keep"])
def test_fsdp2_trains_gpt2_on_kiln_like_cpu_gloo(compiled, reshard_after_forward):
    _check_fsdp("gpt2", compiled, reshard_after_forward)


@pytest.mark.slow
@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_fsdp2_with_activation_checkpointing_on_kiln(compiled):
    """Each block checkpointed (recomputed in the backward) and sharded; the
    losses and parameters those of cpu + gloo without checkpointing."""
    _check_fsdp("gpt2", compiled, checkpointed=True)


@pytest.mark.slow
def test_fsdp2_compiled_by_kiln_on_cpu_gloo():
    """Kiln's per-block graphs over CPU tensors, the shards through gloo."""
    _check_fsdp("gpt2", compiled=True, device="cpu")


@pytest.mark.slow
def test_fsdp2_mixed_precision_on_kiln():
    _check_fsdp("gpt2", compiled=True, mixed_precision=True)


def _check_tensor_parallel(device: str, backend: str, compiled: bool = False, batch: int = 2,
                           sequence_parallel: bool = False) -> None:
    ranks = distributed.run_ranks(distributed.train_tensor_parallel, WORLD, device, STEPS, compiled, batch,
                                  sequence_parallel, backend=backend, kiln_device=backend == "kiln")
    losses, params = distributed.train_llama_one_process(STEPS, batch)
    for run in ranks:
        if compiled:
            # One Kiln graph forward and one backward, each with its
            # collectives inside (not split at them), nothing in eager.
            assert [(kind, partitions, fallbacks) for kind, _, partitions, _, _, fallbacks in run["graphs"]] \
                == [("forward", 1, 0), ("backward", 1, 0)], run["graphs"]
            assert all(kernels > 0 and collectives > 0 for *_, kernels, collectives, _ in run["graphs"])
            # The backward's weight gradients run while its input gradients'
            # all-reduces are in flight.
            assert run["overlapped_launches"][1] > 0, run["overlapped_launches"]
        elif device == "kiln":
            _assert_ran_in_kiln(run, compiled=False)
        _assert_matches(run, {"losses": losses, "params": params})


@pytest.mark.slow
def test_tensor_parallel_llama_on_kiln_matches_one_process():
    """ColwiseParallel/RowwiseParallel (DTensor) on a Llama-style model,
    eagerly on kiln: the sharded training equals the unsharded one."""
    _check_tensor_parallel("kiln", "kiln")


@pytest.mark.slow
def test_tensor_parallel_llama_on_cpu_gloo_matches_one_process():
    """The reference the kiln run is held to, on cpu + gloo."""
    _check_tensor_parallel("cpu", "gloo")


def test_compiled_tensor_parallel_keeps_its_collectives_in_one_kiln_graph():
    """torch.compile(backend="kiln", fallback="error") of the tensor-parallel
    Llama on kiln: DTensor's all-reduces run inside the compiled graphs, as
    plan collectives between their kernels; training equals the unsharded
    one."""
    _check_tensor_parallel("kiln", "kiln", compiled=True)


@pytest.mark.slow
def test_compiled_tensor_parallel_on_cpu_gloo():
    """The same compiled graphs over CPU tensors and a gloo group."""
    _check_tensor_parallel("cpu", "gloo", compiled=True)


def test_compiled_sequence_parallel_keeps_its_collectives_in_one_kiln_graph():
    """Sequence parallelism on top (SequenceParallel norms, the residual
    stream split along the sequence): all-gathers and reduce-scatters inside
    the compiled graphs; another batch size than the plain case."""
    _check_tensor_parallel("kiln", "kiln", compiled=True, batch=3, sequence_parallel=True)


@pytest.mark.slow
@pytest.mark.parametrize("device, backend", [("kiln", "kiln"), ("cpu", "gloo")])
def test_sequence_parallel_llama_matches_one_process(device, backend):
    """Sequence parallelism eagerly on kiln, and compiled over cpu + gloo."""
    _check_tensor_parallel(device, backend, compiled=backend == "gloo", batch=3, sequence_parallel=True)


def test_checkpoint_of_a_sharded_model_resumes_the_same_loss_curve(tmp_path):
    """torch.distributed.checkpoint saves an FSDP2 model and its optimizer
    on kiln; a fresh model and optimizer loaded from it train on exactly as
    the saved ones did."""
    ranks = distributed.run_ranks(distributed.fsdp_checkpoint_resume, WORLD, "kiln", str(tmp_path / "step3"),
                                  3, 3)
    for run in ranks:
        assert run["devices"] == ["kiln"]
        assert run["resumed"] == run["straight_on"]
    assert any((tmp_path / "step3").iterdir())


def test_dtensor_random_ops_use_the_kiln_generator_state():
    """DTensor's RNG tracker runs on kiln's (seed, offset) generator state:
    ranks seeded differently still draw the same replicated numbers, and a
    sharded draw gives each shard numbers of its own."""
    first, second = distributed.run_ranks(distributed.dtensor_random, WORLD, "kiln")
    assert first["tracker"] == "OffsetBasedRNGTracker"
    assert torch.equal(first["replicated"], second["replicated"])
    assert torch.equal(first["sharded"], second["sharded"])
    assert not torch.equal(first["local"], second["local"])
    assert 0 <= first["sharded"].min() and first["sharded"].max() < 1
    assert abs(first["sharded"].mean().item() - 0.5) < 0.05


def test_a_failing_rank_fails_the_others_within_the_timeout():
    """Rank 1 raises before a collective: rank 0's all_reduce fails within
    the group's timeout (no hang), and the report names both ranks."""
    with pytest.raises(distributed.RankFailed) as failure:
        distributed.run_ranks(distributed.fail_on_rank, WORLD, 1, timeout_s=60, group_timeout_s=10)
    message = str(failure.value)
    assert "rank 1: RuntimeError: rank 1 gives up" in message
    assert "rank 0: DistBackendError: kiln process group: all_reduce on rank 0 of 2 failed" in message
    assert failure.value.left_behind == []


def test_a_killed_rank_fails_the_others_and_leaves_nothing_behind():
    """Rank 1 is killed (SIGKILL: no cleanup of its own) between two
    collectives: rank 0 fails with an error naming the collective and
    itself instead of hanging, and neither rank leaves files in its
    temporary directory or shared memory."""
    with pytest.raises(distributed.RankFailed) as failure:
        distributed.run_ranks(distributed.fail_on_rank, WORLD, 1, "kill", timeout_s=60, group_timeout_s=10)
    message = str(failure.value)
    assert "rank 1: died (killed by SIGKILL)" in message
    assert "rank 0: DistBackendError: kiln process group: all_reduce on rank 0 of 2 failed" in message
    assert "still running" not in message
    assert failure.value.left_behind == []


@pytest.mark.slow
def test_a_stalled_rank_times_the_others_out():
    """Rank 1 stays alive but skips a collective: rank 0 fails when the
    group's timeout (4 s) runs out, long before rank 1 comes back."""
    start = time.monotonic()
    with pytest.raises(distributed.RankFailed) as failure:
        distributed.run_ranks(distributed.fail_on_rank, WORLD, 1, "stall", 20.0, timeout_s=120,
                              group_timeout_s=4)
    message = str(failure.value)
    assert "rank 0: DistBackendError: kiln process group: all_reduce on rank 0 of 2 failed" in message
    assert "Timed out" in message or "timed out" in message
    assert "rank 1" not in message  # it came back and returned normally
    assert time.monotonic() - start < 60
