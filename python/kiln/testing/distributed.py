"""Multi-process runs for the distributed tests and benchmark: ranks spawned
on loopback, bounded in time, each writing what it measured to a file the
parent reads back.

A rank is a function `worker(rank, world_size, setup, *args) -> Any`
defined at module level (spawn pickles it by name); `setup` has joined the
default process group before it runs and the group is torn down after.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import os
import signal
import sys
import tempfile
import time
import traceback
from typing import Any, Callable

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from kiln.testing import training


@dataclasses.dataclass(frozen=True)
class GroupSetup:
    backend: str  # "kiln", "gloo", ...
    store_path: str  # a FileStore's file, fresh per run
    timeout_s: float
    kiln_device: bool  # import kiln.device in the rank (the kiln backend needs it)
    temp_dir: str  # the ranks' TMPDIR, fresh per run: what is left there was left behind


def _rank_main(rank: int, world_size: int, setup: GroupSetup, out_dir: str,
               worker: Callable[..., Any], args: tuple[Any, ...]) -> None:
    os.environ["TMPDIR"] = tempfile.tempdir = setup.temp_dir
    torch.set_num_threads(1)  # two ranks on two cores
    if setup.kiln_device:
        import kiln.device  # noqa: F401  (registers the device and the backend)
    result: dict[str, Any] = {}
    try:
        dist.init_process_group(setup.backend, init_method=f"file://{setup.store_path}", rank=rank,
                                world_size=world_size,
                                timeout=datetime.timedelta(seconds=setup.timeout_s))
        try:
            result["value"] = worker(rank, world_size, *args)
        finally:
            dist.destroy_process_group()
    except BaseException as error:  # reported by the parent, naming the rank
        result["error"] = f"{type(error).__name__}: {error}\n{traceback.format_exc()}"
    torch.save(result, os.path.join(out_dir, f"rank{rank}.pt"))


class RankFailed(RuntimeError):
    """Ranks raised, died or hung; `left_behind` lists the files the ranks
    left in their temporary directory and in /dev/shm."""

    def __init__(self, message: str, left_behind: list[str] | None = None):
        super().__init__(message)
        self.left_behind = left_behind or []


# Time the others get, past the group's timeout, to fail once a rank died.
_FAILURE_GRACE_S = 30.0


def _shared_memory() -> set[str]:
    return set(os.listdir("/dev/shm")) if os.path.isdir("/dev/shm") else set()


def _exit_reason(code: int | None) -> str:
    if code is not None and code < 0:
        with contextlib.suppress(ValueError):
            return f"killed by {signal.Signals(-code).name}"
    return f"exit code {code}"


def run_ranks(worker: Callable[..., Any], world_size: int = 2, *args: Any, backend: str = "kiln",
              timeout_s: float = 300.0, group_timeout_s: float = 60.0,
              kiln_device: bool = True) -> list[Any]:
    """Runs `worker` on `world_size` spawned ranks joined in a `backend`
    group (collectives time out after `group_timeout_s`); returns each rank's
    value. Raises RankFailed naming each rank that raised or died, and for a
    run past `timeout_s` (its ranks killed). Once a rank died, the others
    have the group's timeout (and a grace) to fail by themselves; one still
    running then hangs, and is reported and killed."""
    shared_before = _shared_memory()
    with tempfile.TemporaryDirectory(prefix="kiln-ranks-") as out_dir:
        temp_dir = os.path.join(out_dir, "tmp")
        os.mkdir(temp_dir)
        setup = GroupSetup(backend, os.path.join(out_dir, "store"), group_timeout_s, kiln_device, temp_dir)
        context = mp.start_processes(_rank_main, args=(world_size, setup, out_dir, worker, args),
                                     nprocs=world_size, join=False, start_method="spawn")
        processes = context.processes
        deadline = time.monotonic() + timeout_s
        problems: list[str] = []
        died_at: float | None = None
        try:
            while any(p.is_alive() for p in processes):
                now = time.monotonic()
                if died_at is None and any(p.exitcode not in (None, 0) for p in processes):
                    died_at = now
                if now >= deadline:
                    problems.append(f"{worker.__name__} on {world_size} ranks ran past {timeout_s:.0f} s")
                    break
                if died_at is not None and now - died_at > group_timeout_s + _FAILURE_GRACE_S:
                    problems += [f"rank {rank}: still running {now - died_at:.0f} s after a rank died "
                                 f"(the group's timeout is {group_timeout_s:.0f} s)"
                                 for rank, p in enumerate(processes) if p.is_alive()]
                    break
                time.sleep(0.05)
        finally:
            for process in processes:
                if process.is_alive():
                    process.kill()
                process.join()
        results: list[dict[str, Any]] = []
        for rank, process in enumerate(processes):
            path = os.path.join(out_dir, f"rank{rank}.pt")
            if os.path.exists(path):
                results.append(torch.load(path, weights_only=False))
            else:
                results.append({"error": f"died ({_exit_reason(process.exitcode)})"})
        problems += [f"rank {rank}: {r['error']}" for rank, r in enumerate(results) if "error" in r]
        left_behind = sorted(os.listdir(temp_dir)) + sorted(f"/dev/shm/{name}" for name in
                                                            _shared_memory() - shared_before)
        if problems:
            raise RankFailed("\n".join(problems), left_behind)
        return [r["value"] for r in results]


# --- Workers -----------------------------------------------------------------------------------


def shard(case: training.TrainingCase, rank: int, world_size: int) -> tuple[torch.Tensor, ...]:
    """This rank's share of the case's global batch (equal shares: the mean
    of the ranks' mean losses is the global batch's)."""
    return tuple(x.chunk(world_size)[rank] for x in case.inputs)


def _compile_settings(compiled: bool | str) -> dict[str, Any]:
    """torch.compile's arguments for `compiled` as the backend (True:
    "kiln", with fallback="error")."""
    backend = "kiln" if compiled is True else compiled
    return {"backend": backend, "options": {"fallback": "error"} if backend == "kiln" else None}


def _compile(module: torch.nn.Module, compiled: bool | str) -> torch.nn.Module:
    """The module compiled as _compile_settings says, or itself."""
    return torch.compile(module, **_compile_settings(compiled)) if compiled else module


def _reset_evidence() -> None:
    torch._dynamo.reset()  # and kiln.reset(): the evidence is this run's
    if "kiln.device" in sys.modules:
        sys.modules["kiln.device"].reset_stats()
        from kiln import distributed as kiln_distributed

        kiln_distributed.reset_stats()


def _timed_step(device: str, step: Callable[[], float]) -> tuple[float, float]:
    """(loss, seconds) of one training step, the device synchronized."""
    start = time.perf_counter()
    loss = step()
    if device != "cpu":
        torch.accelerator.synchronize()
    return loss, time.perf_counter() - start


def train_ddp(rank: int, world_size: int, model_name: str, device: str, group_backend: str,
              steps: int, compiled: bool | str, accumulate: int = 1, size: str = "small",
              batch_per_rank: int = 2) -> dict[str, Any]:
    """DDP training of a training case on `device` through a group of
    `group_backend` (the default group, or a new one of another backend):
    per-step losses and times and the trained parameters (on the CPU). With
    `accumulate` > 1, micro-batches under no_sync() before the synchronizing
    one."""
    from torch.nn.parallel import DistributedDataParallel

    group = None if dist.get_backend() == group_backend else dist.new_group(backend=group_backend)
    _reset_evidence()
    torch.manual_seed(0)  # the same initial model in every configuration
    case = training.MODELS[model_name](batch=batch_per_rank * world_size * accumulate, size=size)
    model = case.model.to(device)
    ddp = DistributedDataParallel(model, process_group=group)
    forward = _compile(ddp, compiled)
    optimizer = training.OPTIMIZERS["adamw"](model.parameters())
    micro_batches = [tuple(x.to(device) for x in micro)
                     for micro in zip(*(x.chunk(accumulate) for x in shard(case, rank, world_size)))]
    def step() -> float:
        optimizer.zero_grad(set_to_none=True)
        total = 0.0
        for i, inputs in enumerate(micro_batches):
            last = i == len(micro_batches) - 1
            with ddp.no_sync() if not last else contextlib.nullcontext():
                loss = case.loss(forward, *inputs) / accumulate
                loss.backward()
            total += loss.item()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        return total

    losses, seconds = zip(*(_timed_step(device, step) for _ in range(steps)))
    return {"losses": list(losses), "seconds": list(seconds),
            "params": {k: v.detach().cpu() for k, v in model.state_dict().items()},
            "devices": sorted({p.device.type for p in model.parameters()}), **_kiln_evidence()}


def _kiln_evidence() -> dict[str, Any]:
    """What ran in Kiln in this rank: compiled graphs with kernels, and the
    eager device's kernel and fallback calls."""
    import kiln

    records = kiln.compile_records()
    evidence: dict[str, Any] = {
        "kiln_graphs": sum(1 for r in records if r.status == "compiled" and r.kernel_count > 0),
        # graphs that ran in Kiln whole or as partitions, and the collectives
        # inside them
        "graphs": [(r.kind, r.status, r.partitions, r.kernel_count, r.collectives, len(r.fallbacks))
                   for r in records],
        # per graph, the launches that run while its collectives are in flight
        "overlapped_launches": [r.overlapped_launches for r in records]}
    if "kiln.device" in sys.modules:
        from kiln import distributed as kiln_distributed

        stats = sys.modules["kiln.device"].stats()
        evidence.update(kernel_calls=stats["kernel_calls"], fallback_calls=stats["fallback_calls"],
                        fallbacks=stats["fallback"], collectives=kiln_distributed.stats())
    return evidence


def compare_ddp(rank: int, world_size: int, model_name: str, steps: int, compiled: bool,
                accumulate: int = 1, batch_per_rank: int = 2) -> dict[str, Any]:
    """train_ddp eagerly on `cpu + gloo` and as `compiled` says on `kiln +
    kiln`, and, when compiled, on `cpu + gloo` too ("cpu+gloo compiled"):
    one after the other in the same ranks (the default group is kiln's)."""
    configs = [("cpu+gloo", "cpu", "gloo", False), ("kiln+kiln", "kiln", "kiln", compiled)]
    if compiled:
        configs.append(("cpu+gloo compiled", "cpu", "gloo", compiled))
    return {config: train_ddp(rank, world_size, model_name, device, backend, steps, how, accumulate,
                              batch_per_rank=batch_per_rank)
            for config, device, backend, how in configs}



def collectives(rank: int, world_size: int, device: str) -> dict[str, Any]:
    """Each collective DDP, FSDP2 and DTensor use, on `device` tensors: what
    it produced (on the CPU), and whether results landed in the tensors
    passed in (same data pointers)."""
    def ranked(*shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        return (torch.arange(torch.Size(shape).numel(), dtype=dtype).reshape(shape) + 100 * rank).to(device)

    out: dict[str, Any] = {}
    if "kiln.device" in sys.modules:
        from kiln import distributed as kiln_distributed

        kiln_distributed.reset_stats()
    x = ranked(3, 4)
    pointer = x.data_ptr()
    dist.all_reduce(x)
    out["all_reduce"] = (x.cpu(), x.data_ptr() == pointer)
    m = ranked(5)
    dist.all_reduce(m, op=dist.ReduceOp.MAX)
    out["all_reduce_max"] = m.cpu()
    b = ranked(6, dtype=torch.int64)
    dist.broadcast(b, src=1)
    out["broadcast"] = b.cpu()
    gathered = [torch.empty(2, 3, device=device) for _ in range(world_size)]
    dist.all_gather(gathered, ranked(2, 3))
    out["all_gather"] = [g.cpu() for g in gathered]
    flat = torch.empty(world_size * 4, device=device)
    dist.all_gather_single(flat, ranked(4))
    out["all_gather_into_tensor"] = flat.cpu()
    scattered = torch.empty(3, device=device)
    dist.reduce_scatter_single(scattered, ranked(world_size * 3))
    out["reduce_scatter_tensor"] = scattered.cpu()
    swapped = torch.empty(world_size * 2, device=device)
    dist.all_to_all_single(swapped, ranked(world_size * 2))
    out["all_to_all_single"] = swapped.cpu()
    if rank == 0:
        dist.send(ranked(4), dst=1)
    else:
        received = torch.empty(4, device=device)
        dist.recv(received, src=0)
        out["recv"] = received.cpu()
    pending = ranked(1000)
    work = dist.all_reduce(pending, async_op=True)
    work.wait()
    out["async_all_reduce"] = pending.cpu()
    future = dist.all_reduce(ranked(7), async_op=True).get_future()
    out["future_value"] = [t.device.type for t in future.wait()]
    dist.barrier()
    if "kiln.device" in sys.modules:
        out["stats"] = kiln_distributed.stats()
    return out


def train_fsdp(rank: int, world_size: int, model_name: str, device: str, steps: int, compiled: bool | str,
               reshard_after_forward: bool = True, mixed_precision: bool = False, size: str = "small",
               batch_per_rank: int = 2, checkpointed: bool = False) -> dict[str, Any]:
    """FSDP2 (fully_shard on each block, then the root) training of a
    training case on `device` over the default group's mesh: per-step losses
    and the full trained parameters (gathered, on the CPU)."""
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
    from torch.distributed.device_mesh import init_device_mesh

    _reset_evidence()
    torch.manual_seed(0)
    case = training.MODELS[model_name](batch=batch_per_rank * world_size, size=size)
    model = case.model.to(device)
    mesh = init_device_mesh(device, (world_size,))
    policy = (MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
              if mixed_precision else MixedPrecisionPolicy())
    if checkpointed:
        # Activation checkpointing: each block's forward recomputed in the
        # backward (the blocks are replaced by their wrappers).
        from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import (
            apply_activation_checkpointing)

        blocks = set(map(id, _blocks(model)))
        apply_activation_checkpointing(model, check_fn=lambda m: id(m) in blocks)
    blocks = _blocks(model)
    # A transformer's blocks are compiled one by one (FSDP2's hooks stay
    # outside); a model of plain layers whole (Dynamo skips torch.nn's own
    # frames, so a compiled nn.Linear alone would run eagerly).
    compile_blocks = compiled and not all(type(b).__module__.startswith("torch.nn") for b in blocks)
    for block in blocks:
        fully_shard(block, mesh=mesh, reshard_after_forward=reshard_after_forward, mp_policy=policy)
        if compile_blocks:
            block.compile(**_compile_settings(compiled))
    fully_shard(model, mesh=mesh, reshard_after_forward=reshard_after_forward, mp_policy=policy)
    if compiled and not compile_blocks:
        model.compile(**_compile_settings(compiled))
    optimizer = training.OPTIMIZERS["adamw"](model.parameters())
    inputs = tuple(x.to(device) for x in shard(case, rank, world_size))

    def step() -> float:
        optimizer.zero_grad(set_to_none=True)
        loss = case.loss(model, *inputs)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        return loss.item()

    losses, seconds = zip(*(_timed_step(device, step) for _ in range(steps)))
    params = {k: v.full_tensor().detach().cpu() for k, v in model.state_dict().items()}
    return {"losses": list(losses), "seconds": list(seconds), "params": params, **_kiln_evidence()}


def _blocks(model: torch.nn.Module) -> list[torch.nn.Module]:
    """The repeated blocks FSDP shards one by one: a transformer's layers,
    else the model's direct children that hold parameters."""
    for container in ("transformer.h", "bert.encoder.layer"):
        module = model
        try:
            for name in container.split("."):
                module = getattr(module, name)
        except AttributeError:
            continue
        return list(module)
    return [m for m in model.children() if any(True for _ in m.parameters())]


def fail_on_rank(rank: int, world_size: int, failing: int, how: str = "raise", stall_s: float = 0.0) -> None:
    """After one all_reduce, rank `failing` raises (`how` "raise"), is
    killed ("kill": SIGKILL, no cleanup) or stalls for `stall_s` ("stall")
    before the next, which the others wait in."""
    x = torch.ones(4, device="kiln" if "kiln.device" in sys.modules else "cpu")
    dist.all_reduce(x)
    if rank == failing and how == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    if rank == failing and how == "stall":
        time.sleep(stall_s)
        return
    if rank == failing:
        raise RuntimeError(f"rank {rank} gives up")
    dist.all_reduce(x)


def collectives_on(rank: int, world_size: int, devices: list[str]) -> dict[str, dict[str, Any]]:
    """`collectives` on each device in turn, in the same group."""
    return {device: collectives(rank, world_size, device) for device in devices}


# Llama-style sizes: (vocabulary, hidden, MLP width, layers, heads, KV heads, sequence).
LLAMA_SIZES = {"small": (96, 32, 64, 2, 4, 2, 12), "large": (2048, 512, 1408, 4, 8, 4, 128)}


def llama(batch: int, size: str = "small") -> training.TrainingCase:
    """A Llama-style causal LM (RMSNorm, rotary attention, SwiGLU MLP) for
    tensor parallelism: heads, MLP width, vocabulary and sequence divisible
    by the ranks."""
    from transformers import LlamaConfig, LlamaForCausalLM

    vocab, hidden, width, layers, heads, kv_heads, sequence = LLAMA_SIZES[size]
    config = LlamaConfig(vocab_size=vocab, hidden_size=hidden, intermediate_size=width,
                         num_hidden_layers=layers, num_attention_heads=heads, num_key_value_heads=kv_heads,
                         max_position_embeddings=sequence, use_cache=False, attn_implementation="sdpa")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = LlamaForCausalLM(config)
    generator = torch.Generator().manual_seed(1)
    ids = torch.randint(0, vocab, (batch, sequence), generator=generator)

    def next_token_loss(m: torch.nn.Module, ids: torch.Tensor, _targets: torch.Tensor) -> torch.Tensor:
        # Positions and the causal mask given, as sequence parallelism needs:
        # its embedding output holds this rank's part of the sequence (from
        # which the model would make them), while attention sees the whole.
        positions = torch.arange(ids.shape[1], device=ids.device)
        causal = torch.ones(ids.shape[1], ids.shape[1], dtype=torch.bool, device=ids.device).tril()
        logits = m(input_ids=ids, position_ids=positions.unsqueeze(0), cache_position=positions,
                   attention_mask=causal.expand(ids.shape[0], 1, -1, -1), return_dict=True).logits
        return torch.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]).float(),
                                                 ids[:, 1:].reshape(-1))

    return training.TrainingCase(model, (ids, ids), next_token_loss)


def _tensor_parallel_plan(model: torch.nn.Module, sequence_parallel: bool = False) -> dict[str, Any]:
    """Megatron-style: attention's q/k/v and the MLP's gate/up split by
    columns, o and down by rows (one all-reduce after each). With
    `sequence_parallel`, the residual stream between them is split along
    the sequence (Megatron-SP, as torchtitan does): the norms run on each
    rank's part, an all-gather before attention and the MLP, a
    reduce-scatter after; the embedding is split by vocabulary rows, the
    LM head by vocabulary columns."""
    from torch.distributed.tensor import Replicate, Shard
    from torch.distributed.tensor.parallel import (ColwiseParallel, PrepareModuleInput, RowwiseParallel,
                                                   SequenceParallel)

    plan: dict[str, Any] = {}
    rowwise_output = Shard(1) if sequence_parallel else Replicate()
    for i, _ in enumerate(model.model.layers):
        layer = f"model.layers.{i}"
        for name in ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "mlp.gate_proj", "mlp.up_proj"):
            plan[f"{layer}.{name}"] = ColwiseParallel()
        for name in ("self_attn.o_proj", "mlp.down_proj"):
            plan[f"{layer}.{name}"] = RowwiseParallel(output_layouts=rowwise_output)
        if sequence_parallel:
            plan[f"{layer}.input_layernorm"] = SequenceParallel()
            plan[f"{layer}.post_attention_layernorm"] = SequenceParallel()
            plan[f"{layer}.self_attn"] = PrepareModuleInput(
                input_kwarg_layouts={"hidden_states": Shard(1)},
                desired_input_kwarg_layouts={"hidden_states": Replicate()}, use_local_output=True)
            plan[f"{layer}.mlp"] = PrepareModuleInput(input_layouts=(Shard(1),),
                                                      desired_input_layouts=(Replicate(),),
                                                      use_local_output=True)
    if sequence_parallel:
        plan["model.embed_tokens"] = RowwiseParallel(input_layouts=Replicate(), output_layouts=Shard(1))
        plan["model.norm"] = SequenceParallel()
        plan["lm_head"] = ColwiseParallel(input_layouts=Shard(1), output_layouts=Replicate())
    return plan


def _train(case: training.TrainingCase, forward: Any, inputs: tuple[torch.Tensor, ...],
           optimizer: torch.optim.Optimizer, steps: int) -> list[float]:
    """`steps` plain steps (no clipping): the losses."""
    losses = []
    for _ in range(steps):
        optimizer.zero_grad(set_to_none=True)
        loss = case.loss(forward, *inputs)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def train_llama_one_process(steps: int, batch: int = 2) -> tuple[list[float], dict[str, torch.Tensor]]:
    """train_tensor_parallel's training on one CPU process, unsharded."""
    case = llama(batch)
    optimizer = torch.optim.AdamW(case.model.parameters(), lr=1e-3, weight_decay=0.01, foreach=False)
    losses = _train(case, case.model, case.inputs, optimizer, steps)
    return losses, {k: v.detach() for k, v in case.model.state_dict().items()}


def train_tensor_parallel(rank: int, world_size: int, device: str, steps: int, compiled: bool | str,
                          batch: int = 2, sequence_parallel: bool = False, size: str = "small") -> dict[str, Any]:
    """Tensor-parallel training of the Llama-style model on `device`, every
    rank on the same batch: per-step losses and times, the full parameters."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import DTensor
    from torch.distributed.tensor.parallel import parallelize_module

    torch._dynamo.reset()
    if "kiln.device" in sys.modules:
        sys.modules["kiln.device"].reset_stats()
    case = llama(batch, size)
    mesh = init_device_mesh(device, (world_size,))
    model = parallelize_module(case.model.to(device), mesh, _tensor_parallel_plan(case.model, sequence_parallel))
    forward = _compile(model, compiled)
    # foreach=False: sharded (DTensor) and replicated (plain) parameters mix.
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01, foreach=False)
    inputs = tuple(x.to(device) for x in case.inputs)
    losses, seconds = zip(*(_timed_step(device, lambda: _train(case, forward, inputs, optimizer, 1)[0])
                            for _ in range(steps)))
    params = {k: (v.full_tensor() if isinstance(v, DTensor) else v).detach().cpu()
              for k, v in model.state_dict().items()}
    return {"losses": list(losses), "seconds": list(seconds), "params": params, **_kiln_evidence()}


def fsdp_checkpoint_resume(rank: int, world_size: int, device: str, checkpoint_dir: str,
                           steps_before: int, steps_after: int) -> dict[str, list[float]]:
    """FSDP2 training saved with torch.distributed.checkpoint after
    `steps_before` steps: the losses of `steps_after` more steps run straight
    on, and of the same steps run by a fresh model and optimizer loaded from
    the checkpoint."""
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    mesh = init_device_mesh(device, (world_size,))

    def build() -> tuple[training.TrainingCase, torch.nn.Module, torch.optim.Optimizer]:
        torch.manual_seed(0)
        case = training.MODELS["mlp"](batch=2 * world_size)
        model = case.model.to(device)
        for block in _blocks(model):
            fully_shard(block, mesh=mesh)
        fully_shard(model, mesh=mesh)
        return case, model, training.OPTIMIZERS["adamw"](model.parameters())

    def train(case, model, optimizer, steps: int) -> list[float]:
        return _train(case, model, tuple(x.to(device) for x in shard(case, rank, world_size)),
                      optimizer, steps)

    case, model, optimizer = build()
    train(case, model, optimizer, steps_before)
    model_state, optimizer_state = get_state_dict(model, optimizer)
    dcp.save({"model": model_state, "optimizer": optimizer_state}, checkpoint_id=checkpoint_dir)
    straight_on = train(case, model, optimizer, steps_after)

    case, model, optimizer = build()
    model_state, optimizer_state = get_state_dict(model, optimizer)
    state = {"model": model_state, "optimizer": optimizer_state}
    dcp.load(state, checkpoint_id=checkpoint_dir)
    set_state_dict(model, optimizer, model_state_dict=state["model"], optim_state_dict=state["optimizer"])
    resumed = train(case, model, optimizer, steps_after)
    return {"straight_on": straight_on, "resumed": resumed,
            "devices": sorted({p.device.type for p in model.parameters()})}


def dtensor_random(rank: int, world_size: int, device: str) -> dict[str, Any]:
    """DTensor's random ops on `device`: a sharded uniform_ (each shard its
    own numbers) and a replicated one (the same numbers on every rank), with
    the seed synchronized by DTensor's RNG tracker (a Philox-style (seed,
    offset) state)."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Replicate, Shard, distribute_tensor
    import torch.distributed.tensor._random as dtensor_random_module

    mesh = init_device_mesh(device, (world_size,))
    torch.manual_seed(1234 + rank)  # different local seeds: DTensor must synchronize them
    sharded = distribute_tensor(torch.empty(8, 64, device=device), mesh, [Shard(0)]).uniform_()
    replicated = distribute_tensor(torch.empty(4, 64, device=device), mesh, [Replicate()]).normal_()
    tracker = dtensor_random_module._rng_tracker
    return {"sharded": sharded.full_tensor().cpu(), "local": sharded.to_local().cpu(),
            "replicated": replicated.to_local().cpu(),
            "tracker": type(tracker).__name__ if tracker is not None else None}


def fsdp_per_layer_compile(rank: int, world_size: int, steps: int) -> dict[str, list[float]]:
    """FSDP2 on kiln with each nn.Linear compiled on its own: Dynamo skips
    torch.nn's frames, so the layers run eagerly with Dynamo's frame hook
    set, and the device compiles its kernels there (which Dynamo must not
    trace). The losses, and those of the same run uncompiled."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    mesh = init_device_mesh("kiln", (world_size,))
    losses = {}
    for name, compiled in (("per_layer_compile", True), ("eager", False)):
        torch._dynamo.reset()
        torch.manual_seed(0)
        case = training.MODELS["mlp"](batch=8 * world_size, size="large")
        model = case.model.to("kiln")
        for layer in _blocks(model):
            fully_shard(layer, mesh=mesh)
            if compiled:
                layer.compile(**_compile_settings(True))
        fully_shard(model, mesh=mesh)
        optimizer = training.OPTIMIZERS["adamw"](model.parameters())
        losses[name] = _train(case, model, tuple(x.to("kiln") for x in shard(case, rank, world_size)),
                              optimizer, steps)
    return losses
