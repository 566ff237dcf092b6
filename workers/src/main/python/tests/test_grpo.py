"""Advantages and the GRPO loss: hand-computed cases, the Java gradient formula, the grpo_check entry point."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from ravel_checks.grpo_check import check
from ravel_workers.grpo import group_advantages, grpo_loss, pad

PACKAGE_ROOT = Path(__file__).resolve().parents[1]


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


def test_loss_by_hand():
    # one sequence of two tokens, A = 1, eps = 0.2, beta = 0.1
    # token 0: logp -1.0, behaviour -1.0 -> r = 1, surrogate 1; ref -1.5: delta -0.5, D = e^-0.5 + 0.5 - 1
    # token 1: logp -0.5, behaviour -1.0 -> r = e^0.5 = 1.6487 > 1.2: clipped, surrogate 1.2; ref -0.5: D = 0
    d0 = math.exp(-0.5) + 0.5 - 1
    expected = -((1.0 - 0.1 * d0) + (1.2 - 0.0)) / 2
    logp = torch.tensor([[-1.0, -0.5]], dtype=torch.float64, requires_grad=True)
    r = grpo_loss(logp, torch.tensor([[-1.0, -1.0]], dtype=torch.float64),
                  torch.tensor([[-1.5, -0.5]], dtype=torch.float64), torch.ones(1, 2, dtype=torch.float64),
                  torch.tensor([1.0], dtype=torch.float64), 0.2, 0.1)
    assert r.loss.item() == pytest.approx(expected, abs=1e-15)
    assert r.kl == pytest.approx(d0 / 2, abs=1e-15)
    assert r.clip_fraction == 0.5
    assert r.mean_ratio == pytest.approx((1 + math.exp(0.5)) / 2, abs=1e-15)
    r.loss.backward()
    # dLoss/dlogp_t = -(unclipped-if-not-clipped - beta (1 - e^delta)) / (len B)
    assert logp.grad[0, 0].item() == pytest.approx(-(1.0 - 0.1 * (1 - math.exp(-0.5))) / 2, abs=1e-15)
    assert logp.grad[0, 1].item() == pytest.approx(-(0.0 - 0.1 * (1 - math.exp(0.0))) / 2, abs=1e-15)


def test_loss_without_a_reference_needs_kl_beta_zero():
    logp = torch.tensor([[-1.0, -0.5]], dtype=torch.float64, requires_grad=True)
    beh = torch.tensor([[-1.0, -1.0]], dtype=torch.float64)
    mask = torch.ones(1, 2, dtype=torch.float64)
    adv = torch.tensor([1.0], dtype=torch.float64)
    r = grpo_loss(logp, beh, None, mask, adv, 0.2, 0.0)
    # as test_loss_by_hand with no KL term: surrogates 1 and 1.2 (clipped)
    assert r.loss.item() == pytest.approx(-(1.0 + 1.2) / 2, abs=1e-15) and r.kl == 0.0
    with pytest.raises(ValueError, match="kl_beta is 0.1"):
        grpo_loss(logp, beh, None, mask, adv, 0.2, 0.1)


def java_reference(pol, beh, ref, adv, eps, beta):
    """GrpoLoss.compute's loop, in plain Python: loss, kl, clip fraction, mean ratio, dLoss/dlogp."""
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
    pol = [(-torch.rand(n, generator=gen, dtype=torch.float64) * 3).tolist() for n in lengths]
    beh = [[x + float(torch.randn((), generator=gen)) * 0.3 for x in row] for row in pol]
    ref = [[x + float(torch.randn((), generator=gen)) * 0.5 for x in row] for row in pol]
    rewards = [1, 0, 0, 1, 0, 0, 0, 1]
    inputs = {"policy_logprobs": pol, "behaviour_logprobs": beh, "reference_logprobs": ref, "rewards": rewards,
              "group_size": 4, "clip_epsilon": 0.2, "kl_beta": 0.04, "advantage_eps": 1e-6}
    out = check(inputs)
    loss, kl, clip, ratio, grads = java_reference(pol, beh, ref, out["advantages"], 0.2, 0.04)
    assert out["advantages"] == group_advantages(rewards, 4, 1e-6)
    assert out["loss"] == pytest.approx(loss, abs=1e-12)
    assert out["kl"] == pytest.approx(kl, abs=1e-12)
    assert out["clip_fraction"] == pytest.approx(clip, abs=1e-12) and 0 < clip < 1
    assert out["mean_ratio"] == pytest.approx(ratio, abs=1e-12)
    for got, want in zip(out["grad_logprobs"], grads, strict=True):
        assert got == pytest.approx(want, abs=1e-12)


def test_padding_does_not_change_the_loss():
    pol, mask = pad([[-1.0], [-0.5, -2.0]])
    assert mask.tolist() == [[1, 0], [1, 1]]
    r = grpo_loss(pol, pol, pol, mask, torch.tensor([1.0, -1.0], dtype=torch.float64), 0.2, 0.04)
    assert r.loss.item() == pytest.approx(0.0, abs=1e-15) and r.tokens == 3 and r.mean_ratio == 1.0


def test_grpo_check_module_reads_stdin_and_prints_json():
    inputs = {"policy_logprobs": [[-1.0, -0.5], [-2.0]], "behaviour_logprobs": [[-1.0, -1.0], [-2.0]],
              "reference_logprobs": [[-1.5, -0.5], [-1.0]], "rewards": [1.0, 0.0], "group_size": 2,
              "clip_epsilon": 0.2, "kl_beta": 0.1, "advantage_eps": 1e-6}
    proc = subprocess.run([sys.executable, "-m", "ravel_checks.grpo_check"], input=json.dumps(inputs),
                          capture_output=True, text=True, cwd=PACKAGE_ROOT, timeout=120, check=True)
    out = json.loads(proc.stdout)
    assert set(out) == {"loss", "kl", "clip_fraction", "mean_ratio", "advantages", "grad_logprobs"}
    assert [len(g) for g in out["grad_logprobs"]] == [2, 1]
    assert out == check(inputs)
