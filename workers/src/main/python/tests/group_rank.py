"""One rank of a trainer group in its own process (tests/test_group.py spawns two)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ravel_workers import group, policy
from ravel_workers.actors import PolicyTrainerImpl
from ravel_workers.telemetry import ProcessTelemetry

from support import call, telemetry_env


def first_moment(t: PolicyTrainerImpl) -> dict[str, list[float]]:
    """AdamW's first moment of every parameter by name, whole (after one step, (1 - beta1) x that step's gradient);
    in an fsdp2 group a collective whose answer is rank 0's (the other ranks get nothing)."""
    state = group.optimizer_state(t.model, t.optimizer, sharded=t.spec.world_size > 1 and t.spec.strategy == "fsdp2")
    return {name: s["exp_avg"].reshape(-1).tolist() for name, s in state.get("state", {}).items()}


def run_rank(spec: dict[str, Any], address: str, batches: list[list[dict[str, Any]]], runs_dir: str,
             out: Any, checkpoint_after: int = 0) -> None:
    """Joins the group at ``address``, trains on each batch (log-probs first) and puts its results on ``out``:
    ``(rank, group size, outcomes, whole weights, their digest, first moments, parameter bytes, optimizer bytes,
    checkpoint path)`` (the whole weights and moments on rank 0 of an fsdp2 group only). With ``checkpoint_after``
    the group writes a checkpoint after that many batches (every rank is called, as the driver does)."""
    telemetry = ProcessTelemetry.from_env("policy_trainer", telemetry_env(Path(runs_dir)),
                                          resource_attributes={"ray.job.id": "01000000"})
    try:
        t = PolicyTrainerImpl(json.dumps(spec), telemetry=telemetry)
        size = call(t.join_group, address)
        outcomes = []
        first_moments: dict[str, list[float]] = {}
        checkpoint = ""
        for i, b in enumerate(batches):
            call(t.logprobs, b)
            outcomes.append(call(t.train, b))
            if i == 0:
                first_moments = first_moment(t)
            if i + 1 == checkpoint_after:
                checkpoint = call(t.checkpoint, str(Path(runs_dir).parent / "checkpoint"))
        whole = t._state() if spec["rank"] == 0 else {}
        state = {k: v.tolist() for k, v in whole.items()}
        digest = policy.state_sha256(whole) if whole else ""
        out.put((spec["rank"], size, outcomes, state, digest, first_moments,
                 group.local_bytes(t.model.parameters()), group.local_bytes(group.optimizer_tensors(t.optimizer)),
                 checkpoint))
    except BaseException as e:  # the parent reads it rather than waiting for a result that never comes
        out.put((spec.get("rank"), -1, repr(e), {}, "", {}, 0, 0, ""))
        raise
    finally:
        telemetry.shutdown()
