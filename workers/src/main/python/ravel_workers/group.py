"""A trainer group (``trainer.workers``): ranks that take one GRPO update together with ``torch.distributed``.

Each rank runs the forward and backward passes of its shard of the step's batch: a contiguous slice of the
sequences. The loss is a sum over sequences with normalisers computed once for the whole batch
(:func:`ravel_workers.grpo.loss_scales`), so the gradients' sum over the ranks is the gradient of one trainer on the
whole batch: an fsdp2 group is told to sum them (a divide factor of 1, in sum reductions: gloo has no average),
and as DDP averages them each rank's loss is multiplied by the group's size there (:func:`loss_weight`).
``gloo`` on CPU, ``nccl`` on CUDA. How the ranks hold the policy is ``trainer.strategy``:

- ``fsdp2``: :func:`shard_fsdp2` shards it with PyTorch's ``fully_shard`` (each transformer block, then the whole
  model), so parameters, gradients and the AdamW state are split over the ranks (each holds about 1/N; a forward pass
  gathers one block at a time); the reference model is sharded the same way. The whole weights are gathered
  (:func:`full_state_dict`, onto rank 0's CPU) once a version, for the refit and the checkpoint.
- ``ddp``: ``DistributedDataParallel``: every rank holds the whole policy and optimizer state and steps the same
  all-reduced gradient, so the ranks stay equal.

Every collective runs on every rank the same number of times: a rank whose shard has fewer micro-batches than
another's runs the missing ones on a stand-in sequence with weight 0 (:func:`micro_batches`).

Rank 0 answers :func:`rendezvous_address` (its node's address and a free port); every rank then calls
:func:`join` with it, which returns once all have joined and rank 0's weights have been broadcast.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterable
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist

from . import names
from .grpo import Measures

FSDP2, DDP = names.TRAINER_STRATEGIES

JOIN_TIMEOUT_S = 300
"""How long a rank waits for the others at :func:`join` (and for each collective after it)."""


def shard(n: int, rank: int, world_size: int) -> range:
    """The sequences of a batch of ``n`` that ``rank`` trains on: a contiguous slice, sizes differing by one at most."""
    return range(rank * n // world_size, (rank + 1) * n // world_size)


def node_ip() -> str:
    """This process's node address as Ray knows it (loopback outside Ray)."""
    try:
        import ray

        if ray.is_initialized():
            return str(ray.util.get_node_ip_address())  # type: ignore[no-untyped-call]
    except ImportError:  # pragma: no cover - the Ray virtualenv always has Ray
        pass
    return "127.0.0.1"


def rendezvous_address(host: str) -> str:
    """``host:port`` with a port free on ``host`` now, where rank 0's ``torch.distributed`` store will listen."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        port = s.getsockname()[1]
    return f"{host}:{port}"


def _interface_of(ip: str) -> str | None:
    """The network interface that holds ``ip`` (gloo binds to an interface; the host name may resolve elsewhere)."""
    try:
        import psutil  # type: ignore[import-untyped]  # a Ray dependency, without stubs
    except ImportError:  # pragma: no cover - a Ray dependency
        return None
    for name, addrs in psutil.net_if_addrs().items():
        if any(a.family == socket.AF_INET and a.address == ip for a in addrs):
            return str(name)
    return None


def join(address: str, rank: int, world_size: int, device: torch.device, model: torch.nn.Module,
         timeout_s: float = JOIN_TIMEOUT_S) -> str:
    """Joins the group that meets at ``address`` as ``rank`` of ``world_size``; returns the backend.

    Blocks until every rank has joined, then makes every rank's weights rank 0's (they are built from one seed or
    one checkpoint already; this makes it so whatever the initialisation did). gloo is told the interface of this
    node's address unless ``GLOO_SOCKET_IFNAME`` is set, so the ranks reach each other on the address Ray uses.
    """
    if dist.is_initialized():
        raise RuntimeError("join: this trainer has joined a group already")
    backend = "nccl" if device.type == "cuda" else "gloo"
    if backend == "gloo" and "GLOO_SOCKET_IFNAME" not in os.environ:
        iface = _interface_of(node_ip())
        if iface is not None:
            os.environ["GLOO_SOCKET_IFNAME"] = iface
    dist.init_process_group(backend, init_method=f"tcp://{address}", rank=rank, world_size=world_size,
                            timeout=timedelta(seconds=timeout_s))
    with torch.no_grad():
        for p in model.parameters():
            dist.broadcast(p.data, src=0)
    return backend


def all_reduce_measures(m: Measures, loss: float, device: torch.device) -> tuple[Measures, float]:
    """The whole batch's measures and loss from each rank's: sums added, the largest ratio the largest."""
    sums = torch.tensor([m.tokens, m.sequences, m.kl_sum, m.clipped_low, m.clipped_high, m.clipped_dual,
                         m.ratio_sum, m.truncated, m.entropy_sum, loss], dtype=torch.float64, device=device)
    dist.all_reduce(sums, op=dist.ReduceOp.SUM)
    top = torch.tensor([m.ratio_max], dtype=torch.float64, device=device)
    dist.all_reduce(top, op=dist.ReduceOp.MAX)
    v = sums.tolist()
    return Measures(tokens=round(v[0]), sequences=round(v[1]), kl_sum=v[2], clipped_low=round(v[3]),
                    clipped_high=round(v[4]), clipped_dual=round(v[5]), ratio_sum=v[6], ratio_max=float(top.item()),
                    truncated=round(v[7]), entropy_sum=v[8]), v[9]



def micro_batches(n: int, rank: int, world_size: int, size: int) -> list[range | None]:
    """The micro-batches ``rank`` runs for one pass over a batch of ``n`` (``size`` sequences each, 0: its whole
    shard): its shard's, then ``None`` for each it has fewer than the rank with the most, which it runs on a stand-in
    sequence with weight 0, so that every rank runs each collective of a pass as often as the others."""
    mine = shard(n, rank, world_size)
    largest = -(-n // world_size)
    per = size if size > 0 else max(1, largest)
    most = -(-largest // per)  # the largest shard's micro-batches
    out: list[range | None] = [range(a, min(a + per, mine.stop)) for a in range(mine.start, mine.stop, per)]
    return out + [None] * (max(most, 1) - len(out))


def transformer_blocks(model: torch.nn.Module) -> list[torch.nn.Module]:
    """The model's transformer blocks, the units ``fully_shard`` wraps one by one: the modules of the classes its
    transformers class says are never split (``_no_split_modules``: ``GPT2Block``, ``Qwen2DecoderLayer``)."""
    kinds = set(getattr(model, "_no_split_modules", None) or ())
    blocks = [m for m in model.modules() if type(m).__name__ in kinds]
    if not blocks:
        raise ValueError(f"trainer.strategy=fsdp2: {type(model).__name__} names no transformer block class to shard"
                         f" by (_no_split_modules: {sorted(kinds)})")
    return blocks


def shard_fsdp2(model: torch.nn.Module, device: torch.device, world_size: int) -> None:
    """Shards ``model`` in place over the group (a 1-D mesh of ``world_size`` ranks): each transformer block, then the
    model itself (the embeddings, the tied head, the final norm)."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    mesh = init_device_mesh(device.type, (world_size,))
    units = [*transformer_blocks(model), model]
    for unit in units:
        fully_shard(unit, mesh=mesh)
    for unit in units:
        # the ranks' gradients summed, not averaged: the loss's normalisers are the whole batch's already
        unit.set_force_sum_reduction_for_comms(True)  # type: ignore[operator]  # FSDPModule's, added in place
        unit.set_gradient_divide_factor(1.0)  # type: ignore[operator]


def clip_sharded_gradients(params: Iterable[torch.Tensor], max_norm: float) -> float:
    """Clips the gradients of an fsdp2 group's parameters (each rank holding disjoint shards) to a global norm of
    ``max_norm`` as ``torch.nn.utils.clip_grad_norm_`` does one trainer's (a coefficient of ``max_norm / (norm +
    1e-6)`` when below 1); returns the global norm. A collective: the squares of every rank's shards are summed."""
    grads = [p.grad for p in params if p.grad is not None]
    local = [g.to_local() if hasattr(g, "to_local") else g for g in grads]
    device = local[0].device if local else torch.device("cpu")
    squares = torch.zeros((), dtype=torch.float64, device=device)
    for g in local:
        squares += g.detach().double().pow(2).sum()
    dist.all_reduce(squares, op=dist.ReduceOp.SUM)
    norm = float(squares.sqrt().item())
    coefficient = max_norm / (norm + 1e-6)
    if coefficient < 1.0:
        with torch.no_grad():
            for g in local:
                g.mul_(coefficient)
    return norm


def loss_weight(strategy: str, world_size: int) -> float:
    """What a rank's loss is multiplied by before its backward pass, so that the group's gradient is the sum of the
    ranks': DDP averages them (x the group's size), an fsdp2 group sums them (:func:`shard_fsdp2`)."""
    return float(world_size) if strategy == DDP and world_size > 1 else 1.0


def local_bytes(tensors: Iterable[torch.Tensor]) -> int:
    """The bytes of ``tensors`` this rank holds: a sharded tensor's local shard, a plain tensor whole."""
    total = 0
    for t in tensors:
        local = t.to_local() if hasattr(t, "to_local") else t
        total += local.numel() * local.element_size()
    return total


def optimizer_tensors(optimizer: torch.optim.Optimizer) -> list[torch.Tensor]:
    """The tensors of ``optimizer``'s state (AdamW's two moments and step per parameter)."""
    return [v for state in optimizer.state.values() for v in state.values() if isinstance(v, torch.Tensor)]


def full_state_dict(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """The sharded ``model``'s whole state dict on rank 0's CPU (empty on the other ranks); a collective."""
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

    state = get_model_state_dict(model, options=StateDictOptions(full_state_dict=True, cpu_offload=True))
    return {name: t for name, t in state.items() if isinstance(t, torch.Tensor)}


def optimizer_state(model: torch.nn.Module, optimizer: torch.optim.Optimizer, sharded: bool) -> dict[str, Any]:
    """``optimizer``'s state keyed by parameter name (``torch.distributed.checkpoint``'s form), whole: gathered onto
    rank 0's CPU when ``sharded`` (a collective; empty on the other ranks). Ask only of an optimizer that has taken a
    step: torch makes a fresh one's state by taking a step of its own (lr 0, zero gradients), which it counts."""
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_optimizer_state_dict

    options = StateDictOptions(full_state_dict=True, cpu_offload=True) if sharded else None
    return dict(get_optimizer_state_dict(model, optimizer, options=options))


def load_optimizer_state(model: torch.nn.Module, optimizer: torch.optim.Optimizer, state: dict[str, Any],
                         sharded: bool) -> None:
    """Loads a whole optimizer state keyed by parameter name (:func:`optimizer_state`) into ``optimizer``: each rank
    keeps its shard of it when ``sharded`` (every rank passes the whole state)."""
    from torch.distributed.checkpoint.state_dict import StateDictOptions, set_optimizer_state_dict

    if not state.get("state"):
        return  # no step taken yet: nothing to load
    model.zero_grad(set_to_none=True)  # torch builds the state to fill from a step on no gradient
    set_optimizer_state_dict(model, optimizer, state,
                             options=StateDictOptions(full_state_dict=True) if sharded else None)


def whole_batch_rows(part: torch.Tensor, mine: range, n: int, width: int) -> torch.Tensor:
    """Every rank's rows ``[n, width]`` from this rank's ``part`` (the rows of ``mine``; others' zero), summed over
    the ranks: each row comes from the one rank that computed it. A collective."""
    rows = torch.zeros((n, width), dtype=part.dtype, device=part.device)
    if len(mine):
        rows[mine.start:mine.stop, :part.shape[1]] = part[:len(mine)]
    dist.all_reduce(rows, op=dist.ReduceOp.SUM)
    return rows
