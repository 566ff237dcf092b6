"""A trainer group of two ranks (gloo, two real processes) takes the same update as one trainer."""

from __future__ import annotations

import json
import multiprocessing as mp
import queue
from typing import Any

import pytest
import torch

from ravel_workers import group, policy
from ravel_workers.actors import GenerationWorkerImpl, PolicyTrainerImpl

from group_rank import first_moment, run_rank
from support import call, request, trainer_spec, worker_spec

RESULT_TIMEOUT_S = 600  # generous: the ranks import PyTorch and build the model first


def _batch(worker: GenerationWorkerImpl, prompts: list[list[int]], salt: int) -> list[dict[str, Any]]:
    reqs = [request(f"s{salt}-p{i}-g{j}", p, 4, 1.0, seed=salt * 100 + i * 4 + j)
            for i, p in enumerate(prompts) for j in range(4)]
    results = call(worker.generate, reqs)
    return [{"request_id": r["request_id"], "prompt": r["prompt_tokens"], "completion": r["completion_tokens"],
             "logprobs": r["logprobs"], "reward": float((k * 7 + salt) % 3 == 0), "weight_version": 0,
             "group_index": k // 4} for k, r in enumerate(results)]


def _group_of_two(spec: dict[str, Any], batches: list[list[dict[str, Any]]], tmp_path: Any) -> list[Any]:
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    address = group.rendezvous_address("127.0.0.1")
    procs = [ctx.Process(target=run_rank, args=({**spec, "rank": r, "world_size": 2}, address, batches,
                                                 str(tmp_path / f"runs-{r}"), out)) for r in range(2)]
    for p in procs:
        p.start()
    try:
        results = []
        for _ in procs:
            try:
                results.append(out.get(timeout=RESULT_TIMEOUT_S))
            except queue.Empty:
                pytest.fail(f"a rank gave no result within {RESULT_TIMEOUT_S} s")
        for p in procs:
            p.join(timeout=60)
        return sorted(results, key=lambda r: r[0])
    finally:
        for p in procs:
            if p.is_alive():
                p.kill()  # this test's own child, by its handle
                p.join(timeout=30)


@pytest.mark.parametrize("grpo", [
    {},
    {"loss_type": "bnpo", "micro_batch_size": 4, "ppo_epochs": 2, "tis_cap": 2.0},
], ids=["whole-batch", "micro-batches-epochs-tis"])
def test_two_ranks_train_to_the_weights_of_one_trainer(grpo, make_telemetry, tmp_path):
    worker = GenerationWorkerImpl(json.dumps(worker_spec()), telemetry=make_telemetry("generation_worker"))
    try:
        prompts = [[3, 10, 4, 12], [2, 10, 2, 12], [1, 10, 5, 12]]  # 12 sequences: 6 a rank
        batches = [_batch(worker, prompts, salt) for salt in range(2)]
    finally:
        worker.close()
    spec = trainer_spec(**grpo)
    alone = PolicyTrainerImpl(json.dumps(spec), telemetry=make_telemetry("policy_trainer"))
    initial = policy.state_dict_cpu(alone.model)
    want = []
    want_moments: list[list[float]] = []
    for b in batches:
        call(alone.logprobs, b)
        want.append(call(alone.train, b))
        want_moments = want_moments or first_moment(alone)
    want_state = policy.state_dict_cpu(alone.model)

    ranks = _group_of_two(spec, batches, tmp_path)
    assert [r[1] for r in ranks] == [2, 2], ranks  # both joined a group of two (else: the rank's error)
    # the ranks hold the same weights, to the bit: they step one all-reduced gradient from one state
    assert ranks[0][4] == ranks[1][4]
    assert ranks[0][2] == ranks[1][2]  # and report the same update
    # the first step's gradient (AdamW's first moment) is one trainer's on the whole batch
    for got_m, want_m in zip(ranks[0][5], want_moments, strict=True):
        g, w = torch.tensor(got_m), torch.tensor(want_m)
        assert torch.allclose(g, w, rtol=1e-3, atol=1e-4 * float(w.abs().max()) + 1e-12)
    # after both steps the weights moved as one trainer's did: the difference is a sliver of the change (Adam
    # divides each gradient by its own size, so a gradient near 0 carries float noise into its weight)
    got_state = {k: torch.tensor(v) for k, v in ranks[0][3].items()}
    assert set(got_state) == set(want_state)
    diff = sum(float((got_state[k] - v).pow(2).sum()) for k, v in want_state.items()) ** 0.5
    moved = sum(float((v - initial[k]).pow(2).sum()) for k, v in want_state.items()) ** 0.5
    assert moved > 0 and diff / moved < 0.01, (diff, moved)
    for got, exp in zip(ranks[0][2], want, strict=True):
        assert got["version"] == exp["version"]
        assert got["tokens"] == exp["tokens"] and got["sequences"] == exp["sequences"] == 12
        assert got["epochs"] == exp["epochs"] and got["kept_sequences"] == exp["kept_sequences"]
        for key in ("loss", "kl", "entropy", "clip_fraction", "mean_ratio", "max_ratio", "grad_norm",
                    "learning_rate", "mean_reward"):
            assert got[key] == pytest.approx(exp[key], rel=1e-3, abs=1e-6), key
    assert want[0]["grad_norm"] > 0  # the update moved the weights: the comparison means something


def test_rendezvous_is_rank_zeros_and_a_lone_trainer_needs_no_group(make_telemetry):
    zero = PolicyTrainerImpl(json.dumps({**trainer_spec(), "rank": 0, "world_size": 2}),
                             telemetry=make_telemetry("policy_trainer"))
    host, port = call(zero.rendezvous).rsplit(":", 1)
    assert host == "127.0.0.1" and 0 < int(port) < 65536
    one = PolicyTrainerImpl(json.dumps({**trainer_spec(), "rank": 1, "world_size": 2}),
                            telemetry=make_telemetry("p1"))
    with pytest.raises(ValueError, match="only rank 0"):
        call(one.rendezvous)
    alone = PolicyTrainerImpl(json.dumps(trainer_spec()), telemetry=make_telemetry("p2"))
    assert call(alone.join_group, "127.0.0.1:1") == 1  # no group to join: it returns at once


def test_a_spec_outside_its_group_is_refused(make_telemetry):
    with pytest.raises(ValueError, match="rank: 2 is not a rank of a group of world_size 2"):
        PolicyTrainerImpl(json.dumps({**trainer_spec(), "rank": 2, "world_size": 2}),
                          telemetry=make_telemetry("policy_trainer"))


def test_shards_cover_the_batch_once():
    for n in range(0, 9):
        for world in range(1, 4):
            covered = [i for r in range(world) for i in group.shard(n, r, world)]
            assert covered == list(range(n))
