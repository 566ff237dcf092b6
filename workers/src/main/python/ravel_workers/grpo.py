"""The GRPO maths in PyTorch: the Java ``Advantages``/``GrpoLoss``/``LrSchedule``, step for step.

A batch's loss is computed in three steps, as in Java (``GrpoLossParityIT`` holds the two equal for every
setting; names and defaults are the contract's ``grpo_defaults`` and ``grpo_choices``):

1. :func:`advantages`: rewards (less ``kl_beta * sum_t KL_t`` over the behaviour log-probs with ``kl_in_reward``)
   become ``A_i = (r_i - mean(r_group)) / (scale + eps)``, ``scale`` the group's population std (``group``), the
   batch's (``batch``) or none (``none``: no eps either); a group of equal rewards has advantages of exactly 0
   and, with ``filter_zero_advantage``, is left out of the update.
2. :func:`loss_scales`: each sequence's normaliser ``s_i`` by ``loss_type``: ``grpo`` ``1 / (|o_i| B)``, ``bnpo``
   ``1 / (T_mb M)`` per micro-batch, ``dr_grpo`` ``1 / (B max_new_tokens)``, ``dapo`` ``1 / T`` (kept sequences
   and tokens only).
3. :func:`grpo_loss`, per completion token::

    r_it = exp(logp_it - base_it)           base: behaviour, or with TIS (tis_cap > 0) the trainer's at the step's start
    w_it = min(exp(old_it - behaviour_it), tis_cap) with TIS, else 1 (no gradient)
    p_it = min(r_it A_i, clip(r_it, 1 - eps_low, 1 + eps_high) A_i); for A_i < 0 with c > 0: max(p_it, c A_i)
    l_it = w_it p_it - beta KL_est(logp_it, ref_it)        (no KL term with kl_in_reward)
    loss = -sum_i s_i sum_t l_it

Log-probs are taken at the sampling temperature (0 counting as 1). A token whose clipped or dual-clipped term is
taken gives no policy gradient.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from .wire import GrpoSettings

#: low_var_kl's clamp of ``delta = ref - logp``, and of the estimate (verl's)
LOW_VAR_DELTA = 20.0
LOW_VAR_MAX = 10.0


def _std(x: Sequence[float]) -> float:
    mean = 0.0
    for v in x:
        mean += v
    mean /= len(x)
    var = 0.0
    for v in x:
        var += (v - mean) * (v - mean)
    return math.sqrt(var / len(x))


def group_advantages(rewards: Sequence[float], group_size: int, eps: float, scale: str = "group") -> list[float]:
    """``(r - mean(group)) / (scale + eps)`` within each run of ``group_size`` rewards (population std).

    ``scale``: ``group`` (the group's std), ``batch`` (the batch's std) or ``none`` (no division). A group whose
    rewards are all equal gets advantages of exactly 0. Computed in double precision in the same order as the Java
    ``Advantages.of``.
    """
    if group_size < 1:
        raise ValueError(f"group_size must be >= 1, got {group_size}")
    if len(rewards) % group_size != 0:
        raise ValueError(f"rewards: length {len(rewards)} is not a multiple of group_size {group_size}")
    if not (eps >= 0) or math.isinf(eps):
        raise ValueError(f"eps must be finite and >= 0, got {eps}")
    if scale not in ("group", "batch", "none"):
        raise ValueError(f"scale: unknown value {scale!r} (valid: group, batch, none)")
    r = [float(x) for x in rewards]
    for i, x in enumerate(r):
        if not math.isfinite(x):
            raise ValueError(f"rewards[{i}] is not finite: {x}")
    batch_std = _std(r) if scale == "batch" and r else 0.0
    a = [0.0] * len(r)
    for start in range(0, len(r), group_size):
        group = r[start:start + group_size]
        if all(x == group[0] for x in group):
            continue
        mean = 0.0
        for x in group:
            mean += x
        mean /= group_size
        divisor = _std(group) + eps if scale == "group" else batch_std + eps if scale == "batch" else 1.0
        for j, x in enumerate(group):
            a[start + j] = (x - mean) / divisor
    return a


def kl_estimate(logp: torch.Tensor, ref: torch.Tensor, estimator: str) -> torch.Tensor:
    """The per-token estimate of KL(policy || reference) (``k1``, ``k2``, ``k3``, ``low_var_kl``), differentiable in
    ``logp``; see the Java ``KlEstimator``."""
    delta = ref - logp
    if estimator == "k1":
        return -delta
    if estimator == "k2":
        return 0.5 * delta * delta
    if estimator == "k3":
        return torch.exp(delta) - delta - 1
    if estimator == "low_var_kl":
        d = torch.clamp(delta, -LOW_VAR_DELTA, LOW_VAR_DELTA)
        return torch.clamp(torch.exp(d) - d - 1, -LOW_VAR_MAX, LOW_VAR_MAX)
    raise ValueError(f"kl_estimator: unknown value {estimator!r} (valid: k1, k2, k3, low_var_kl)")


def _kl_value(logp: float, ref: float, estimator: str) -> float:
    return float(kl_estimate(torch.tensor(logp, dtype=torch.float64), torch.tensor(ref, dtype=torch.float64),
                             estimator).item())


@dataclass(frozen=True)
class Advantaged:
    """A batch's advantages: the rewards they came from (less the KL penalty with ``kl_in_reward``), whether each
    sequence is in the update, and how many groups had equal rewards."""

    rewards: list[float]
    advantages: list[float]
    kept: list[bool]
    zero_advantage_groups: int

    @property
    def kept_count(self) -> int:
        return sum(1 for k in self.kept if k)


def advantages(rewards: Sequence[float], group_size: int, behaviour: Sequence[Sequence[float]] | None,
               reference: Sequence[Sequence[float]] | None, settings: GrpoSettings) -> Advantaged:
    """Step 1 (module docstring): ``behaviour`` and ``reference`` are read with the KL in the reward only."""
    r = [float(x) for x in rewards]
    if settings.kl_in_reward and settings.kl_beta != 0:
        if reference is None or behaviour is None:
            raise ValueError(f"reference: needed when the KL (kl_beta {settings.kl_beta}) is in the reward")
        for i in range(len(r)):
            kl = 0.0
            for b, ref in zip(behaviour[i], reference[i], strict=True):
                kl += _kl_value(float(b), float(ref), settings.kl_estimator)
            r[i] -= settings.kl_beta * kl
    a = group_advantages(r, group_size, settings.advantage_eps, settings.scale_rewards)
    kept = [True] * len(r)
    zero = 0
    for start in range(0, len(r), group_size):
        group = r[start:start + group_size]
        if all(x == group[0] for x in group):
            zero += 1
            if settings.filter_zero_advantage:
                kept[start:start + group_size] = [False] * group_size
    return Advantaged(r, a, kept, zero)


def loss_scales(lengths: Sequence[int], kept: Sequence[bool], settings: GrpoSettings,
                micro_batch_size: int = 0) -> list[float]:
    """Step 2 (module docstring): each sequence's normaliser, 0 for one not kept; ``bnpo`` reads the micro-batches."""
    n = len(lengths)
    kept_seqs = sum(1 for k in kept if k)
    kept_tokens = sum(length for length, k in zip(lengths, kept, strict=True) if k)
    out = [0.0] * n
    if kept_seqs == 0:
        return out
    mb = micro_batch_size if micro_batch_size > 0 else n
    micro = (n + mb - 1) // mb
    for start in range(0, n, mb):
        end = min(n, start + mb)
        mb_tokens = sum(lengths[i] for i in range(start, end) if kept[i])
        for i in range(start, end):
            if not kept[i]:
                continue
            if settings.loss_type == "grpo":
                out[i] = 1.0 / (float(lengths[i]) * kept_seqs)
            elif settings.loss_type == "bnpo":
                out[i] = 1.0 / (float(mb_tokens) * micro)
            elif settings.loss_type == "dr_grpo":
                out[i] = 1.0 / (float(kept_seqs) * settings.max_new_tokens)
            elif settings.loss_type == "dapo":
                out[i] = 1.0 / float(kept_tokens)
            else:
                raise ValueError(f"loss_type: unknown value {settings.loss_type!r}")
    return out


@dataclass(frozen=True)
class Measures:
    """What a loss evaluation measured, as sums (micro-batches and passes add up): the Java ``GrpoLoss.Measures``."""

    tokens: int = 0
    sequences: int = 0
    kl_sum: float = 0.0
    clipped_low: int = 0
    clipped_high: int = 0
    clipped_dual: int = 0
    ratio_sum: float = 0.0
    ratio_max: float = 0.0
    truncated: int = 0
    entropy_sum: float = 0.0

    def plus(self, o: Measures) -> Measures:
        return Measures(self.tokens + o.tokens, self.sequences + o.sequences, self.kl_sum + o.kl_sum,
                        self.clipped_low + o.clipped_low, self.clipped_high + o.clipped_high,
                        self.clipped_dual + o.clipped_dual, self.ratio_sum + o.ratio_sum,
                        max(self.ratio_max, o.ratio_max), self.truncated + o.truncated,
                        self.entropy_sum + o.entropy_sum)

    def _share(self, n: int) -> float:
        return n / self.tokens if self.tokens else 0.0

    @property
    def kl(self) -> float:
        return self.kl_sum / self.sequences if self.sequences else 0.0

    @property
    def clip_fraction(self) -> float:
        return self._share(self.clipped_low + self.clipped_high + self.clipped_dual)

    @property
    def clip_low(self) -> float:
        return self._share(self.clipped_low)

    @property
    def clip_high(self) -> float:
        return self._share(self.clipped_high)

    @property
    def clip_dual(self) -> float:
        return self._share(self.clipped_dual)

    @property
    def mean_ratio(self) -> float:
        return self.ratio_sum / self.tokens if self.tokens else 0.0

    @property
    def tis_truncated(self) -> float:
        return self._share(self.truncated)

    @property
    def entropy(self) -> float:
        return self.entropy_sum / self.tokens if self.tokens else 0.0


@dataclass
class LossResult:
    """The loss (a scalar tensor with its graph) and what it measured."""

    loss: torch.Tensor
    measures: Measures


def grpo_loss(policy_logprobs: torch.Tensor, behaviour_logprobs: torch.Tensor, old_logprobs: torch.Tensor | None,
              reference_logprobs: torch.Tensor | None, mask: torch.Tensor, advantages: torch.Tensor,
              scales: torch.Tensor, settings: GrpoSettings) -> LossResult:
    """Step 3 (module docstring) over padded ``[B, L]`` log-prob tensors; ``mask`` is 1 on real completion tokens.

    ``old_logprobs`` is read with TIS only; ``reference_logprobs`` may be None unless the loss has a KL term (the
    measured KL is 0 then). Works in the dtype of ``policy_logprobs`` (float64 for the parity check); gradients
    flow only into ``policy_logprobs``.
    """
    if policy_logprobs.dim() != 2:
        raise ValueError(f"policy_logprobs: expected [B, L], got shape {tuple(policy_logprobs.shape)}")
    b = policy_logprobs.shape[0]
    if b == 0:
        raise ValueError("batch must not be empty")
    if reference_logprobs is None and settings.kl_in_loss:
        raise ValueError(f"reference_logprobs: needed when kl_beta is {settings.kl_beta} (not 0)")
    if old_logprobs is None and settings.tis:
        raise ValueError(f"old_logprobs: needed with truncated importance sampling (tis_cap {settings.tis_cap})")
    dtype = policy_logprobs.dtype
    m = mask.to(dtype)
    on = m > 0
    zero = torch.zeros_like(policy_logprobs)

    def masked(x: torch.Tensor) -> torch.Tensor:
        return torch.where(on, x.to(dtype).detach(), zero)

    logp = torch.where(on, policy_logprobs, zero)
    behaviour = masked(behaviour_logprobs)
    adv = advantages.to(dtype).detach().reshape(b, 1)
    if settings.tis:
        old = masked(old_logprobs) if old_logprobs is not None else behaviour
        ratio = torch.exp(logp - old)
        raw_weight = torch.exp(old - behaviour)
        truncated = (raw_weight > settings.tis_cap) & on
        weight = torch.clamp(raw_weight, max=settings.tis_cap)
    else:
        ratio = torch.exp(logp - behaviour)
        truncated = torch.zeros_like(on)
        weight = torch.ones_like(logp)
    unclipped = ratio * adv
    clipped_term = torch.clamp(ratio, 1 - settings.clip_epsilon_low, 1 + settings.clip_epsilon_high) * adv
    is_clipped = (clipped_term < unclipped) & on
    surrogate = torch.where(is_clipped, clipped_term, unclipped)
    if settings.clip_ratio_c > 0:
        floor = (settings.clip_ratio_c * adv).expand_as(surrogate)
        is_dual = (adv < 0) & (floor > surrogate) & on
        surrogate = torch.where(is_dual, floor, surrogate)
    else:
        is_dual = torch.zeros_like(on)
    if reference_logprobs is not None:
        kl = torch.where(on, kl_estimate(logp, masked(reference_logprobs), settings.kl_estimator), zero)
    else:
        kl = zero
    per_token = weight * surrogate - (settings.kl_beta * kl if settings.kl_in_loss else zero)
    loss = -(per_token * m * scales.to(dtype).detach().reshape(b, 1)).sum()
    with torch.no_grad():
        lengths = m.sum(dim=1)
        measures = Measures(
            tokens=int(lengths.sum().item()), sequences=b,
            kl_sum=float(((kl * m).sum(dim=1) / lengths.clamp(min=1)).sum().item()),
            clipped_low=int((is_clipped & (adv < 0)).sum().item()),
            clipped_high=int((is_clipped & (adv > 0)).sum().item()),
            clipped_dual=int(is_dual.sum().item()), ratio_sum=float((ratio * m).sum().item()),
            ratio_max=float(torch.where(on, ratio, zero).max().item()), truncated=int(truncated.sum().item()))
    return LossResult(loss=loss, measures=measures)


def lr_factor(taken: int, warmup: int, total: int, schedule: str) -> float:
    """The factor of the base learning rate for the optimizer step after ``taken`` steps (the Java ``LrSchedule``,
    transformers' ``get_*_schedule_with_warmup``)."""
    if taken < warmup:
        return taken / max(1, warmup)
    span = float(max(1, total - warmup))
    if schedule == "constant":
        return 1.0
    if schedule == "linear":
        return max(0.0, (total - taken) / span)
    if schedule == "cosine":
        return max(0.0, 0.5 * (1 + math.cos(math.pi * min(1.0, (taken - warmup) / span))))
    raise ValueError(f"lr_scheduler: unknown value {schedule!r} (valid: constant, linear, cosine)")


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
    logp, mask, _ = completion_logprobs_entropy(model, prompts, completions, temperature, device, entropy=False)
    return logp, mask


def completion_logprobs_entropy(model: torch.nn.Module, prompts: Sequence[Sequence[int]],
                                completions: Sequence[Sequence[int]], temperature: float,
                                device: torch.device | str,
                                entropy: bool = True) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """As :func:`completion_logprobs`, with the entropy (no gradient) of the distribution each completion token
    was sampled from, ``[B, L]`` (zeros when ``entropy`` is false)."""
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
    if entropy:
        with torch.no_grad():
            ent = -(torch.exp(logp) * logp).sum(dim=-1) * mask
    else:
        ent = torch.zeros_like(mask)
    return out * mask, mask, ent
