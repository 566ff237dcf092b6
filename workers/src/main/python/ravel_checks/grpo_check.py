"""``python -m ravel_checks.grpo_check``: the GRPO loss of JSON inputs, for the Java parity test.

Reads on stdin::

    {"policy_logprobs": [[float]], "behaviour_logprobs": [[float]], "reference_logprobs": [[float]],
     "rewards": [float], "group_size": int, "clip_epsilon": float, "kl_beta": float, "advantage_eps": float}

and prints ``{"loss", "kl", "clip_fraction", "mean_ratio", "advantages": [float], "grad_logprobs": [[float]]}``,
where ``grad_logprobs`` is dLoss/d(policy log-prob) of every token, by autograd in float64.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from typing import Any

import torch

from ravel_workers.grpo import group_advantages, grpo_loss, pad


def check(inputs: Mapping[str, Any]) -> dict[str, Any]:
    """The loss, its measures, the advantages and the per-token gradient of ``inputs`` (module docstring)."""
    policy = inputs["policy_logprobs"]
    behaviour = inputs["behaviour_logprobs"]
    reference = inputs["reference_logprobs"]
    rewards = inputs["rewards"]
    for name, rows in (("behaviour_logprobs", behaviour), ("reference_logprobs", reference)):
        if len(rows) != len(policy) or any(len(a) != len(b) for a, b in zip(rows, policy, strict=True)):
            raise ValueError(f"{name}: must have the shape of policy_logprobs")
    if len(rewards) != len(policy):
        raise ValueError(f"rewards: {len(rewards)} for {len(policy)} sequences")
    advantages = group_advantages(rewards, int(inputs["group_size"]), float(inputs["advantage_eps"]))
    logp, mask = pad(policy)
    logp.requires_grad_(True)
    result = grpo_loss(logp, pad(behaviour)[0], pad(reference)[0], mask,
                       torch.tensor(advantages, dtype=torch.float64), float(inputs["clip_epsilon"]),
                       float(inputs["kl_beta"]))
    result.loss.backward()  # type: ignore[no-untyped-call]  # torch's Tensor.backward is unannotated
    grad = logp.grad if logp.grad is not None else torch.zeros_like(logp)
    return {"loss": float(result.loss.item()), "kl": result.kl, "clip_fraction": result.clip_fraction,
            "mean_ratio": result.mean_ratio, "advantages": advantages,
            "grad_logprobs": [grad[i, :len(row)].tolist() for i, row in enumerate(policy)]}


def main() -> int:
    print(json.dumps(check(json.load(sys.stdin))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
