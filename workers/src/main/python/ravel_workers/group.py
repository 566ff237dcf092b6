"""A trainer group (``trainer.workers``): ranks that take one GRPO update together with ``torch.distributed``.

Each rank holds the whole policy and optimizer (data parallel, as DDP does) and runs the forward and backward
passes of its shard of the step's batch: a contiguous slice of the sequences. The loss is a sum over sequences
with normalisers computed once for the whole batch (:func:`ravel_workers.grpo.loss_scales`), so the gradients'
sum over the ranks (``all_reduce``) is the gradient of one trainer on the whole batch; every rank then clips and
steps the same gradient from the same state, and the ranks stay equal. ``gloo`` on CPU, ``nccl`` on CUDA.

Rank 0 answers :func:`rendezvous_address` (its node's address and a free port); every rank then calls
:func:`join` with it, which returns once all have joined and rank 0's weights have been broadcast.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Sequence
from datetime import timedelta

import torch
import torch.distributed as dist

from .grpo import Measures

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


def all_reduce_gradients(params: Sequence[torch.nn.Parameter]) -> None:
    """Sums every parameter's gradient over the ranks, in one flat buffer (a rank with no sequence adds zeros)."""
    for p in params:
        if p.grad is None:
            p.grad = torch.zeros_like(p)
    grads = [p.grad for p in params if p.grad is not None]
    flat = torch.cat([g.reshape(-1) for g in grads])
    dist.all_reduce(flat, op=dist.ReduceOp.SUM)
    offset = 0
    for g in grads:
        g.copy_(flat[offset:offset + g.numel()].view_as(g))
        offset += g.numel()


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

