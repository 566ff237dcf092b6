"""``python -m ravel_checks.grpo_check``: the GRPO loss of JSON inputs, for the Java parity test.

Reads on stdin one case, or ``{"cases": [case, ...]}``, each::

    {"policy_logprobs": [[float]], "behaviour_logprobs": [[float]], "old_logprobs": [[float]] (optional),
     "reference_logprobs": [[float]] (optional), "rewards": [float], "settings": {GrpoSettings fields}}

(``settings.group_size`` groups the rewards; ``settings.micro_batch_size`` splits the batch as the trainer does)
and prints, per case, ``{"loss", "kl", "clip_fraction", "clip_low", "clip_high", "clip_dual", "mean_ratio",
"max_ratio", "tis_truncated", "zero_advantage_groups", "advantages": [float], "scales": [float],
"grad_logprobs": [[float]]}`` (a list for ``cases``), where ``grad_logprobs`` is dLoss/d(policy log-prob) of every
token by autograd in float64, summed over the micro-batches.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import torch

from ravel_workers.grpo import Measures, advantages, grpo_loss, loss_scales, pad
from ravel_workers.wire import GrpoSettings


def _rows(inputs: Mapping[str, Any], name: str, policy: Sequence[Sequence[float]]) -> list[list[float]] | None:
    rows = inputs.get(name)
    if rows is None:
        return None
    if len(rows) != len(policy) or any(len(a) != len(b) for a, b in zip(rows, policy, strict=True)):
        raise ValueError(f"{name}: must have the shape of policy_logprobs")
    return [list(map(float, r)) for r in rows]


def check(inputs: Mapping[str, Any]) -> dict[str, Any]:
    """The loss, its measures, the advantages and the per-token gradient of one case (module docstring)."""
    settings = GrpoSettings.from_wire(inputs.get("settings", {}))
    policy = [list(map(float, r)) for r in inputs["policy_logprobs"]]
    behaviour = _rows(inputs, "behaviour_logprobs", policy)
    if behaviour is None:
        raise ValueError("behaviour_logprobs: missing")
    old = _rows(inputs, "old_logprobs", policy)
    reference = _rows(inputs, "reference_logprobs", policy)
    rewards = inputs["rewards"]
    if len(rewards) != len(policy):
        raise ValueError(f"rewards: {len(rewards)} for {len(policy)} sequences")
    adv = advantages(rewards, settings.group_size, behaviour, reference, settings)
    scales = loss_scales([len(r) for r in policy], adv.kept, settings, settings.micro_batch_size)
    n = len(policy)
    mb = settings.micro_batch_size if settings.micro_batch_size > 0 else n
    grads: list[list[float]] = []
    loss = 0.0
    measures = Measures()
    for a in range(0, n, mb):
        part = slice(a, a + mb)
        logp, mask = pad(policy[part])
        logp.requires_grad_(True)
        result = grpo_loss(logp, pad(behaviour[part])[0], None if old is None else pad(old[part])[0],
                           None if reference is None else pad(reference[part])[0], mask,
                           torch.tensor(adv.advantages[part], dtype=torch.float64),
                           torch.tensor(scales[part], dtype=torch.float64), settings)
        result.loss.backward()  # type: ignore[no-untyped-call]  # torch's Tensor.backward is unannotated
        grad = logp.grad if logp.grad is not None else torch.zeros_like(logp)
        grads.extend(grad[i, :len(row)].tolist() for i, row in enumerate(policy[part]))
        loss += float(result.loss.item())
        measures = measures.plus(result.measures)
    return {"loss": loss, "kl": measures.kl, "clip_fraction": measures.clip_fraction, "clip_low": measures.clip_low,
            "clip_high": measures.clip_high, "clip_dual": measures.clip_dual, "mean_ratio": measures.mean_ratio,
            "max_ratio": measures.ratio_max, "tis_truncated": measures.tis_truncated,
            "zero_advantage_groups": adv.zero_advantage_groups, "advantages": adv.advantages, "scales": scales,
            "grad_logprobs": grads}


def main() -> int:
    inputs = json.load(sys.stdin)
    if isinstance(inputs, Mapping) and "cases" in inputs:
        print(json.dumps([check(c) for c in inputs["cases"]]))
    else:
        print(json.dumps(check(inputs)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
