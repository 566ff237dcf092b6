"""Group-relative advantages and the GRPO loss in PyTorch: the maths of the Java ``Advantages``/``GrpoLoss``.

For ``B`` trajectories with advantages ``A_i``, per completion token ``t`` (Shao et al. 2024, eq. 3)::

    r_it = exp(logp_it - behaviour_it)                      importance ratio to the behaviour policy
    surrogate_it = min(r_it A_i, clip(r_it, 1-eps, 1+eps) A_i)
    D_it = exp(ref_it - logp_it) - (ref_it - logp_it) - 1   k3 estimate of KL(policy || reference)
    loss = -1/B sum_i 1/|o_i| sum_t (surrogate_it - beta D_it)

Log-probs are taken at the sampling temperature (0 counting as 1). ``kl`` is the mean over sequences of the
per-sequence token mean of ``D``, ``clip_fraction`` the share of tokens whose clipped term is strictly below
the unclipped one (the gradient then flows through neither), ``mean_ratio`` the token mean of ``r``.
A sequence with no completion token contributes 0 to the objective and to ``kl``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch


def group_advantages(rewards: Sequence[float], group_size: int, eps: float) -> list[float]:
    """``(r - mean) / (std + eps)`` within each run of ``group_size`` rewards (population std).

    A group whose rewards are all equal gets advantages of exactly 0. Computed in double precision in the
    same order as the Java ``Advantages.groupRelative``.
    """
    if group_size < 1:
        raise ValueError(f"group_size must be >= 1, got {group_size}")
    if len(rewards) % group_size != 0:
        raise ValueError(f"rewards: length {len(rewards)} is not a multiple of group_size {group_size}")
    if not (eps >= 0) or math.isinf(eps):
        raise ValueError(f"eps must be finite and >= 0, got {eps}")
    r = [float(x) for x in rewards]
    for i, x in enumerate(r):
        if not math.isfinite(x):
            raise ValueError(f"rewards[{i}] is not finite: {x}")
    a = [0.0] * len(r)
    for start in range(0, len(r), group_size):
        group = r[start:start + group_size]
        if all(x == group[0] for x in group):
            continue
        mean = 0.0
        for x in group:
            mean += x
        mean /= group_size
        var = 0.0
        for x in group:
            var += (x - mean) * (x - mean)
        std = math.sqrt(var / group_size)
        for j, x in enumerate(group):
            a[start + j] = (x - mean) / (std + eps)
    return a


@dataclass
class LossResult:
    """The loss (a scalar tensor with its graph) and what it measured (plain floats)."""

    loss: torch.Tensor
    kl: float
    clip_fraction: float
    mean_ratio: float
    tokens: int
    sequences: int


def grpo_loss(policy_logprobs: torch.Tensor, behaviour_logprobs: torch.Tensor,
              reference_logprobs: torch.Tensor | None, mask: torch.Tensor, advantages: torch.Tensor,
              clip_epsilon: float, kl_beta: float) -> LossResult:
    """The GRPO loss over padded ``[B, L]`` log-prob tensors; ``mask`` is 1 on real completion tokens.

    ``reference_logprobs`` may be None only when ``kl_beta`` is 0: there is no KL term then, and ``kl`` is 0.

    Works in the dtype of ``policy_logprobs`` (float64 for the parity check); gradients flow only into
    ``policy_logprobs``.
    """
    if policy_logprobs.dim() != 2:
        raise ValueError(f"policy_logprobs: expected [B, L], got shape {tuple(policy_logprobs.shape)}")
    b = policy_logprobs.shape[0]
    if b == 0:
        raise ValueError("batch must not be empty")
    dtype = policy_logprobs.dtype
    m = mask.to(dtype)
    behaviour = behaviour_logprobs.to(dtype).detach()
    if reference_logprobs is None:
        if kl_beta != 0:
            raise ValueError(f"reference_logprobs: needed when kl_beta is {kl_beta} (not 0)")
        ref = policy_logprobs.detach()  # the reference stands at the policy: no KL term
    else:
        ref = reference_logprobs.to(dtype).detach()
    adv = advantages.to(dtype).detach().reshape(b, 1)
    logp = torch.where(m > 0, policy_logprobs, torch.zeros_like(policy_logprobs))

    ratio = torch.exp(logp - torch.where(m > 0, behaviour, torch.zeros_like(behaviour)))
    unclipped = ratio * adv
    clipped_term = torch.clamp(ratio, 1 - clip_epsilon, 1 + clip_epsilon) * adv
    is_clipped = (clipped_term < unclipped) & (m > 0)
    surrogate = torch.where(is_clipped, clipped_term, unclipped)
    delta = torch.where(m > 0, ref, torch.zeros_like(ref)) - logp
    d = torch.exp(delta) - delta - 1

    lengths = m.sum(dim=1)
    safe = lengths.clamp(min=1)
    seq_objective = ((surrogate - kl_beta * d) * m).sum(dim=1) / safe
    loss = -seq_objective.sum() / b
    with torch.no_grad():
        tokens = int(lengths.sum().item())
        kl = float(((d * m).sum(dim=1) / safe).sum().item() / b)
        clip_fraction = float(is_clipped.sum().item() / tokens) if tokens else 0.0
        mean_ratio = float((ratio * m).sum().item() / tokens) if tokens else 0.0
    return LossResult(loss=loss, kl=kl, clip_fraction=clip_fraction, mean_ratio=mean_ratio, tokens=tokens,
                      sequences=b)


def pad(rows: Sequence[Sequence[float]], dtype: torch.dtype = torch.float64,
        device: torch.device | str = "cpu") -> tuple[torch.Tensor, torch.Tensor]:
    """Right-padded ``[B, max len]`` values and their 0/1 mask."""
    width = max((len(r) for r in rows), default=0)
    values = torch.zeros((len(rows), width), dtype=dtype, device=device)
    mask = torch.zeros((len(rows), width), dtype=dtype, device=device)
    for i, r in enumerate(rows):
        if len(r):
            values[i, :len(r)] = torch.tensor(list(r), dtype=dtype, device=device)
            mask[i, :len(r)] = 1
    return values, mask


def completion_logprobs(model: torch.nn.Module, prompts: Sequence[Sequence[int]],
                        completions: Sequence[Sequence[int]], temperature: float,
                        device: torch.device | str) -> tuple[torch.Tensor, torch.Tensor]:
    """``log softmax(logits / T)[token]`` of every completion token (T = 0 counting as 1), ``[B, L]``, and its mask.

    Sequences are prompt + completion, right-padded (causal attention: padding after a sequence never
    changes its earlier positions). Runs with the model's gradient mode: wrap in ``torch.no_grad()`` when
    no gradient is wanted.
    """
    t = 1.0 if temperature == 0 else float(temperature)
    b = len(prompts)
    seqs = [list(p) + list(c) for p, c in zip(prompts, completions, strict=False)]
    width = max(len(s) for s in seqs)
    lmax = max((len(c) for c in completions), default=0)
    ids = torch.zeros((b, width), dtype=torch.long)
    attention = torch.zeros((b, width), dtype=torch.long)
    for i, s in enumerate(seqs):
        ids[i, :len(s)] = torch.tensor(s, dtype=torch.long)
        attention[i, :len(s)] = 1
    # position of the logits that predict completion token j of row i: len(prompt_i) - 1 + j
    gather = torch.zeros((b, max(lmax, 1)), dtype=torch.long)
    tokens = torch.zeros((b, max(lmax, 1)), dtype=torch.long)
    mask = torch.zeros((b, max(lmax, 1)), dtype=torch.float32)
    for i, (p, c) in enumerate(zip(prompts, completions, strict=False)):
        n = len(c)
        if n:
            gather[i, :n] = torch.arange(len(p) - 1, len(p) - 1 + n)
            tokens[i, :n] = torch.tensor(list(c), dtype=torch.long)
            mask[i, :n] = 1
    ids, attention, gather, tokens = (x.to(device) for x in (ids, attention, gather, tokens))
    logits = model(input_ids=ids, attention_mask=attention, use_cache=False).logits  # [B, W, V]
    picked = torch.gather(logits, 1, gather.unsqueeze(-1).expand(-1, -1, logits.shape[-1]))  # [B, L, V]
    logp = torch.log_softmax(picked.float() / t, dim=-1)
    out = torch.gather(logp, 2, tokens.unsqueeze(-1)).squeeze(-1)
    mask = mask.to(out.device)
    return out * mask, mask
