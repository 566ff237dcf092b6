"""Advantages and the GRPO loss: hand-computed cases (each formula written out), the Java loop, grpo_check."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch

from ravel_checks.grpo_check import check
from ravel_workers.grpo import (
    advantages,
    group_advantages,
    grpo_loss,
    kl_estimate,
    loss_scales,
    lr_factor,
    pad,
)
from ravel_workers.wire import GrpoSettings

PACKAGE_ROOT = Path(__file__).resolve().parents[1]
F64 = torch.float64


def settings(**kw: Any) -> GrpoSettings:
    return GrpoSettings.from_wire(kw)


def one(xs: list[float]) -> torch.Tensor:
    return torch.tensor([xs], dtype=F64)


def test_advantages_population_std_and_flat_groups():
    a = group_advantages([1, 0, 0, 0, 0.5, 0.5, 0.5, 0.5], 4, 1e-6)
    # mean 0.25, population std sqrt(0.1875) = 0.4330127
    std = math.sqrt(0.1875)
    assert a[:4] == pytest.approx([0.75 / (std + 1e-6), -0.25 / (std + 1e-6)] + [-0.25 / (std + 1e-6)] * 2, abs=1e-15)
    assert a[4:] == [0.0, 0.0, 0.0, 0.0]
    assert group_advantages([1.0, 0.0], 1, 0.0) == [0.0, 0.0]
    with pytest.raises(ValueError, match="multiple"):
        group_advantages([1, 0, 1], 2, 1e-6)
    with pytest.raises(ValueError, match="not finite"):
        group_advantages([float("nan"), 0], 2, 1e-6)


def test_scale_rewards_batch_and_none():
    rewards = [1.0, 0.0, 3.0, 1.0]  # groups (1, 0) and (3, 1): group means 0.5 and 2
    # batch: population std of all four: mean 1.25, var (0.0625 + 1.5625 + 3.0625 + 0.0625) / 4 = 1.1875
    batch_std = math.sqrt(1.1875)
    assert group_advantages(rewards, 2, 1e-6, "batch") == pytest.approx(
        [0.5 / (batch_std + 1e-6), -0.5 / (batch_std + 1e-6), 1 / (batch_std + 1e-6), -1 / (batch_std + 1e-6)],
        abs=1e-15)
    assert group_advantages(rewards, 2, 1e-6, "none") == [0.5, -0.5, 1.0, -1.0]  # Dr. GRPO: no division, no eps


def test_filter_zero_advantage_drops_flat_groups_from_the_normaliser():
    s = settings(group_size=2, filter_zero_advantage=True, loss_type="grpo")
    adv = advantages([1.0, 0.0, 1.0, 1.0], 2, None, None, s)
    assert adv.zero_advantage_groups == 1 and adv.kept == [True, True, False, False] and adv.kept_count == 2
    # grpo: 1 / (|o_i| B) with B the kept sequences (2)
    assert loss_scales([2, 1, 3, 3], adv.kept, s) == [1 / (2 * 2), 1 / (1 * 2), 0.0, 0.0]
    unfiltered = advantages([1.0, 0.0, 1.0, 1.0], 2, None, None, settings(group_size=2))
    assert unfiltered.zero_advantage_groups == 1 and unfiltered.kept == [True] * 4


@pytest.mark.parametrize(("loss_type", "micro", "expected"), [
    ("grpo", 0, [1 / (2 * 4), 1 / (1 * 4), 1 / (3 * 4), 1 / (2 * 4)]),  # 1 / (|o_i| B)
    ("dapo", 0, [1 / 8] * 4),  # 1 / T, T = 2 + 1 + 3 + 2
    ("dapo", 2, [1 / 8] * 4),  # the whole batch's tokens whatever the micro-batching
    ("bnpo", 0, [1 / 8] * 4),  # one micro-batch: as dapo
    ("bnpo", 2, [1 / (3 * 2), 1 / (3 * 2), 1 / (5 * 2), 1 / (5 * 2)]),  # 1 / (T_mb M), M = 2
    ("dr_grpo", 0, [1 / (4 * 16)] * 4),  # 1 / (B max_new_tokens)
])
def test_loss_scales_by_loss_type(loss_type, micro, expected):
    s = settings(loss_type=loss_type, max_new_tokens=16)
    assert loss_scales([2, 1, 3, 2], [True] * 4, s, micro) == pytest.approx(expected, abs=1e-15)


def test_loss_by_hand():
    # one sequence of two tokens, A = 1, eps = 0.2, beta = 0.1, scale 1/2 (grpo: 1 / (|o| B))
    # token 0: logp -1.0, behaviour -1.0 -> r = 1, surrogate 1; ref -1.5: delta -0.5, D = e^-0.5 + 0.5 - 1
    # token 1: logp -0.5, behaviour -1.0 -> r = e^0.5 = 1.6487 > 1.2: clipped, surrogate 1.2; ref -0.5: D = 0
    d0 = math.exp(-0.5) + 0.5 - 1
    expected = -((1.0 - 0.1 * d0) + (1.2 - 0.0)) / 2
    logp = torch.tensor([[-1.0, -0.5]], dtype=F64, requires_grad=True)
    r = grpo_loss(logp, one([-1.0, -1.0]), None, one([-1.5, -0.5]), torch.ones(1, 2, dtype=F64),
                  torch.tensor([1.0], dtype=F64), torch.tensor([0.5], dtype=F64), settings(kl_beta=0.1))
    assert r.loss.item() == pytest.approx(expected, abs=1e-15)
    assert r.measures.kl == pytest.approx(d0 / 2, abs=1e-15)
    assert r.measures.clip_fraction == 0.5 and r.measures.clip_high == 0.5 and r.measures.clip_low == 0.0
    assert r.measures.mean_ratio == pytest.approx((1 + math.exp(0.5)) / 2, abs=1e-15)
    assert r.measures.ratio_max == pytest.approx(math.exp(0.5), abs=1e-15)
    r.loss.backward()
    # dLoss/dlogp_t = -(unclipped-if-not-clipped - beta (1 - e^delta)) / (len B)
    assert logp.grad[0, 0].item() == pytest.approx(-(1.0 - 0.1 * (1 - math.exp(-0.5))) / 2, abs=1e-15)
    assert logp.grad[0, 1].item() == pytest.approx(-(0.0 - 0.1 * (1 - math.exp(0.0))) / 2, abs=1e-15)


def test_clip_higher_keeps_the_gradient_of_a_ratio_between_the_two_bounds():
    # r = 1.25, A = 1: symmetric eps 0.2 clips it (1.2 < 1.25); clip_epsilon_high 0.28 does not (1.25 < 1.28)
    logp, beh = one([math.log(1.25 * 0.2)]), one([math.log(0.2)])
    for high, loss, clipped in ((0.2, -1.2, 1.0), (0.28, -1.25, 0.0)):
        x = logp.clone().requires_grad_(True)
        r = grpo_loss(x, beh, None, None, torch.ones(1, 1, dtype=F64), torch.tensor([1.0], dtype=F64),
                      torch.tensor([1.0], dtype=F64),
                      settings(kl_beta=0.0, clip_epsilon_low=0.2, clip_epsilon_high=high))
        r.loss.backward()
        assert r.loss.item() == pytest.approx(loss, abs=1e-12) and r.measures.clip_high == clipped
        assert x.grad is not None and x.grad.item() == pytest.approx(0.0 if clipped else -1.25, abs=1e-12)


def test_dual_clip_bounds_a_negative_advantage():
    # r = 3, A = -1, c = 2: min(r A, clip(r) A) = min(-3, -1.2) = -3; max(-3, c A = -2) = -2, no gradient
    x = one([math.log(0.3)]).requires_grad_(True)
    r = grpo_loss(x, one([math.log(0.1)]), None, None, torch.ones(1, 1, dtype=F64), torch.tensor([-1.0], dtype=F64),
                  torch.tensor([1.0], dtype=F64), settings(kl_beta=0.0, clip_ratio_c=2.0))
    r.loss.backward()
    assert r.loss.item() == pytest.approx(2.0, abs=1e-12)
    assert r.measures.clip_dual == 1.0 and r.measures.clip_low == 0.0
    assert x.grad is not None and x.grad.item() == 0.0


@pytest.mark.parametrize(("estimator", "value", "derivative"), [
    # delta = ref - logp = ln 2 (the reference twice as likely)
    ("k1", -math.log(2), 1.0),
    ("k2", 0.5 * math.log(2) ** 2, -math.log(2)),
    ("k3", 2 - math.log(2) - 1, 1 - 2.0),
    ("low_var_kl", 2 - math.log(2) - 1, 1 - 2.0),
])
def test_kl_estimators_by_hand(estimator, value, derivative):
    logp = torch.tensor(math.log(0.25), dtype=F64, requires_grad=True)
    v = kl_estimate(logp, torch.tensor(math.log(0.5), dtype=F64), estimator)
    v.backward()
    assert v.item() == pytest.approx(value, abs=1e-15)
    assert logp.grad is not None and logp.grad.item() == pytest.approx(derivative, abs=1e-15)


def test_low_var_kl_is_clamped_to_ten_without_gradient():
    logp = torch.tensor(-20.0, dtype=F64, requires_grad=True)  # delta = 19.9: k3 = e^19.9 - 20.9 >> 10
    v = kl_estimate(logp, torch.tensor(-0.1, dtype=F64), "low_var_kl")
    v.backward()
    assert v.item() == 10.0 and logp.grad is not None and logp.grad.item() == 0.0


def test_kl_in_reward_takes_the_penalty_from_the_rewards():
    # k3 of behaviour vs reference per token, summed over the completion, times beta, off the reward
    beh, ref = [[-1.0, -2.0], [-0.5]], [[-1.5, -2.0], [-0.1]]
    k3 = [(math.exp(-0.5) + 0.5 - 1) + 0.0, math.exp(0.4) - 0.4 - 1]
    adv = advantages([1.0, 0.0], 2, beh, ref, settings(group_size=2, kl_in_reward=True, kl_beta=0.5,
                                                        scale_rewards="none"))
    assert adv.rewards == pytest.approx([1.0 - 0.5 * k3[0], 0.0 - 0.5 * k3[1]], abs=1e-15)
    mean = (adv.rewards[0] + adv.rewards[1]) / 2
    assert adv.advantages == pytest.approx([adv.rewards[0] - mean, adv.rewards[1] - mean], abs=1e-15)


def test_kl_in_reward_leaves_the_kl_term_out_of_the_loss():
    logp = one([-1.0]).requires_grad_(True)
    r = grpo_loss(logp, one([-1.0]), None, one([-3.0]), torch.ones(1, 1, dtype=F64), torch.tensor([0.0], dtype=F64),
                  torch.tensor([1.0], dtype=F64), settings(kl_beta=1.0, kl_in_reward=True))
    r.loss.backward()
    assert r.loss.item() == 0.0 and r.measures.kl > 0  # measured, not penalised
    assert logp.grad is not None and logp.grad.item() == 0.0


def test_truncated_importance_sampling_weights_by_the_capped_ratio_to_the_behaviour():
    # old/behaviour = e^0.5 = 1.65 > cap 1.2: weight 1.2 (truncated); ratio to old = 1; A = 1: objective 1.2
    x = one([-1.0]).requires_grad_(True)
    r = grpo_loss(x, one([-1.5]), one([-1.0]), None, torch.ones(1, 1, dtype=F64), torch.tensor([1.0], dtype=F64),
                  torch.tensor([1.0], dtype=F64), settings(kl_beta=0.0, tis_cap=1.2))
    r.loss.backward()
    assert r.loss.item() == pytest.approx(-1.2, abs=1e-12)
    assert r.measures.tis_truncated == 1.0 and r.measures.mean_ratio == 1.0
    assert x.grad is not None and x.grad.item() == pytest.approx(-1.2, abs=1e-12)  # -w r A
    with pytest.raises(ValueError, match="old_logprobs"):
        grpo_loss(x, one([-1.5]), None, None, torch.ones(1, 1, dtype=F64), torch.tensor([1.0], dtype=F64),
                  torch.tensor([1.0], dtype=F64), settings(kl_beta=0.0, tis_cap=1.2))


def test_loss_without_a_reference_needs_no_kl_in_the_loss():
    logp = torch.tensor([[-1.0, -0.5]], dtype=F64, requires_grad=True)
    beh, mask = one([-1.0, -1.0]), torch.ones(1, 2, dtype=F64)
    adv, scale = torch.tensor([1.0], dtype=F64), torch.tensor([0.5], dtype=F64)
    r = grpo_loss(logp, beh, None, None, mask, adv, scale, settings(kl_beta=0.0))
    # as test_loss_by_hand with no KL term: surrogates 1 and 1.2 (clipped)
    assert r.loss.item() == pytest.approx(-(1.0 + 1.2) / 2, abs=1e-15) and r.measures.kl == 0.0
    with pytest.raises(ValueError, match="kl_beta is 0.1"):
        grpo_loss(logp, beh, None, None, mask, adv, scale, settings(kl_beta=0.1))


@pytest.mark.parametrize(("schedule", "factors"), [
    # warmup 2 of 6 steps: k / W while k < W, then the schedule over the remaining 4
    ("constant", [0.0, 0.5, 1.0, 1.0, 1.0, 1.0]),
    ("linear", [0.0, 0.5, 1.0, 0.75, 0.5, 0.25]),
    ("cosine", [0.0, 0.5, 1.0, (1 + math.cos(math.pi / 4)) / 2, 0.5, (1 + math.cos(3 * math.pi / 4)) / 2]),
])
def test_lr_schedules_by_hand(schedule, factors):
    assert [lr_factor(k, 2, 6, schedule) for k in range(6)] == pytest.approx(factors, abs=1e-15)


def test_settings_are_checked_naming_the_setting():
    with pytest.raises(ValueError, match="grpo.loss_type: unknown value 'ppo'"):
        settings(loss_type="ppo")
    with pytest.raises(ValueError, match="clip_epsilon_high"):
        settings(clip_epsilon_low=0.3, clip_epsilon_high=0.2)
    with pytest.raises(ValueError, match="unknown setting.*clip_epsilon"):
        settings(clip_epsilon=0.2)
    with pytest.raises(ValueError, match="grpo.ppo_epochs: expected an int"):
        settings(ppo_epochs=1.5)


def java_reference(pol, beh, ref, adv, eps, beta):
    """GrpoLoss's loop for the default settings, in plain Python: loss, kl, clip fraction, mean ratio, dLoss/dlogp."""
    b = len(pol)
    loss = kl = ratio_sum = 0.0
    clipped = tokens = 0
    grads = []
    for i in range(b):
        n = len(pol[i])
        seq_obj = seq_kl = 0.0
        g = []
        for t in range(n):
            ratio = math.exp(pol[i][t] - beh[i][t])
            unclipped = ratio * adv[i]
            clipped_term = max(1 - eps, min(1 + eps, ratio)) * adv[i]
            is_clipped = clipped_term < unclipped
            surrogate = clipped_term if is_clipped else unclipped
            delta = ref[i][t] - pol[i][t]
            d = math.exp(delta) - delta - 1
            seq_obj += surrogate - beta * d
            seq_kl += d
            ratio_sum += ratio
            clipped += is_clipped
            g.append(-((0 if is_clipped else unclipped) - beta * (1 - math.exp(delta))) / (n * b))
        loss -= seq_obj / n
        kl += seq_kl / n
        tokens += n
        grads.append(g)
    return loss / b, kl / b, clipped / tokens, ratio_sum / tokens, grads


def test_matches_the_java_loop_on_random_ragged_batches():
    gen = torch.Generator().manual_seed(3)
    lengths = [1, 4, 2, 3, 4, 1, 2, 2]
    pol = [(-torch.rand(n, generator=gen, dtype=F64) * 3).tolist() for n in lengths]
    beh = [[x + float(torch.randn((), generator=gen)) * 0.3 for x in row] for row in pol]
    ref = [[x + float(torch.randn((), generator=gen)) * 0.5 for x in row] for row in pol]
    rewards = [1, 0, 0, 1, 0, 0, 0, 1]
    inputs = {"policy_logprobs": pol, "behaviour_logprobs": beh, "reference_logprobs": ref, "rewards": rewards,
              "settings": {"group_size": 4, "kl_beta": 0.04, "advantage_eps": 1e-6}}
    out = check(inputs)
    loss, kl, clip, ratio, grads = java_reference(pol, beh, ref, out["advantages"], 0.2, 0.04)
    assert out["advantages"] == group_advantages(rewards, 4, 1e-6)
    assert out["loss"] == pytest.approx(loss, abs=1e-12)
    assert out["kl"] == pytest.approx(kl, abs=1e-12)
    assert out["clip_fraction"] == pytest.approx(clip, abs=1e-12) and 0 < clip < 1
    assert out["mean_ratio"] == pytest.approx(ratio, abs=1e-12)
    for got, want in zip(out["grad_logprobs"], grads, strict=True):
        assert got == pytest.approx(want, abs=1e-12)


@pytest.mark.parametrize("loss_type", ["grpo", "dr_grpo", "dapo"])
def test_micro_batches_give_the_full_batch_gradient(loss_type):
    gen = torch.Generator().manual_seed(5)
    lengths = [1, 4, 2, 3, 4, 1, 2, 2]
    pol = [(-torch.rand(n, generator=gen, dtype=F64) * 3).tolist() for n in lengths]
    beh = [[x + float(torch.randn((), generator=gen)) * 0.3 for x in row] for row in pol]
    base = {"policy_logprobs": pol, "behaviour_logprobs": beh, "rewards": [1, 0, 0, 1, 0, 1, 0, 0]}
    whole = check({**base, "settings": {"group_size": 4, "kl_beta": 0.0, "loss_type": loss_type}})
    parts = check({**base, "settings": {"group_size": 4, "kl_beta": 0.0, "loss_type": loss_type,
                                        "micro_batch_size": 2}})
    assert parts["loss"] == pytest.approx(whole["loss"], abs=1e-12)
    for a, b in zip(parts["grad_logprobs"], whole["grad_logprobs"], strict=True):
        assert a == pytest.approx(b, abs=1e-12)


def test_padding_does_not_change_the_loss():
    pol, mask = pad([[-1.0], [-0.5, -2.0]])
    assert mask.tolist() == [[1, 0], [1, 1]]
    r = grpo_loss(pol, pol, None, pol, mask, torch.tensor([1.0, -1.0], dtype=F64), torch.tensor([1.0, 0.5], dtype=F64),
                  settings(kl_beta=0.04))
    assert r.loss.item() == pytest.approx(0.0, abs=1e-15) and r.measures.tokens == 3
    assert r.measures.mean_ratio == 1.0


def test_grpo_check_module_reads_stdin_and_prints_json():
    inputs = {"policy_logprobs": [[-1.0, -0.5], [-2.0]], "behaviour_logprobs": [[-1.0, -1.0], [-2.0]],
              "reference_logprobs": [[-1.5, -0.5], [-1.0]], "rewards": [1.0, 0.0],
              "settings": {"group_size": 2, "kl_beta": 0.1, "advantage_eps": 1e-6}}
    proc = subprocess.run([sys.executable, "-m", "ravel_checks.grpo_check"], input=json.dumps({"cases": [inputs]}),
                          capture_output=True, text=True, cwd=PACKAGE_ROOT, timeout=120, check=True)
    out = json.loads(proc.stdout)
    assert len(out) == 1
    assert {"loss", "kl", "clip_fraction", "clip_low", "clip_high", "mean_ratio", "advantages",
            "grad_logprobs"} <= set(out[0])
    assert [len(g) for g in out[0]["grad_logprobs"]] == [2, 1]
    assert out[0] == check(inputs)
