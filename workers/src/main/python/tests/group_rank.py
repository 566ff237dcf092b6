"""One rank of a trainer group in its own process (tests/test_group.py spawns two)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ravel_workers import policy
from ravel_workers.actors import PolicyTrainerImpl
from ravel_workers.telemetry import ProcessTelemetry

from support import call, telemetry_env


def first_moment(t: PolicyTrainerImpl) -> list[list[float]]:
    """AdamW's first moment of every parameter: after one step, (1 - beta1) x that step's gradient."""
    return [t.optimizer.state[p]["exp_avg"].reshape(-1).tolist() for p in t.model.parameters() if p.requires_grad]


def run_rank(spec: dict[str, Any], address: str, batches: list[list[dict[str, Any]]], runs_dir: str,
             out: Any) -> None:
    """Joins the group at ``address``, trains on each batch (log-probs first) and puts its results on ``out``."""
    telemetry = ProcessTelemetry.from_env("policy_trainer", telemetry_env(Path(runs_dir)),
                                          resource_attributes={"ray.job.id": "01000000"})
    try:
        t = PolicyTrainerImpl(json.dumps(spec), telemetry=telemetry)
        size = call(t.join_group, address)
        outcomes = []
        first_moments: list[list[float]] = []
        for b in batches:
            call(t.logprobs, b)
            outcomes.append(call(t.train, b))
            if not first_moments:
                first_moments = first_moment(t)
        state = {k: v.tolist() for k, v in policy.state_dict_cpu(t.model).items()}
        out.put((spec["rank"], size, outcomes, state, policy.weights_sha256(t.model), first_moments))
    except BaseException as e:  # the parent reads it rather than waiting for a result that never comes
        out.put((spec.get("rank"), -1, repr(e), {}, "", []))
        raise
    finally:
        telemetry.shutdown()
