"""A trainer group of two ranks (gloo, two real processes) takes the same update as one trainer, with either
strategy; an fsdp2 group's checkpoint goes on in a group of two or in one trainer."""

from __future__ import annotations

import json
import multiprocessing as mp
import queue
from pathlib import Path
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


def _group_of_two(spec: dict[str, Any], batches: list[list[dict[str, Any]]], tmp_path: Any,
                  checkpoint_after: int = 0) -> list[Any]:
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    address = group.rendezvous_address("127.0.0.1")
    procs = [ctx.Process(target=run_rank, args=({**spec, "rank": r, "world_size": 2}, address, batches,
                                                 str(tmp_path / f"runs-{r}"), out, checkpoint_after))
             for r in range(2)]
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


def _distance(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> float:
    assert set(a) == set(b)
    return sum(float((a[k] - v).pow(2).sum()) for k, v in b.items()) ** 0.5


def _bytes(tensors: Any) -> int:
    return sum(t.numel() * t.element_size() for t in tensors)


@pytest.mark.parametrize(("strategy", "grpo"), [
    ("fsdp2", {}),
    ("fsdp2", {"loss_type": "bnpo", "micro_batch_size": 4, "ppo_epochs": 2, "tis_cap": 2.0}),
    ("ddp", {"loss_type": "bnpo", "micro_batch_size": 4, "ppo_epochs": 2, "tis_cap": 2.0}),
], ids=["fsdp2-whole-batch", "fsdp2-micro-batches-epochs-tis", "ddp-micro-batches-epochs-tis"])
def test_two_ranks_train_to_the_weights_of_one_trainer(strategy, grpo, make_telemetry, tmp_path):
    grpo = {**grpo, "filter_zero_advantage": True}  # a group with no signal is left out of the update
    worker = GenerationWorkerImpl(json.dumps(worker_spec()), telemetry=make_telemetry("generation_worker"))
    try:
        # 12 sequences, 6 a rank (micro-batches of 4: 4 + 2 each)
        prompts = [[3, 10, 4, 12], [2, 10, 2, 12], [1, 10, 5, 12]]
        batches = [_batch(worker, prompts, salt) for salt in range(2)]
        # a step with no learning signal (every reward equal): no backward pass, no optimizer step, on any rank; the
        # steps after it must still run (DDP refuses a forward pass after one it synced without a backward pass)
        batches.insert(1, [{**t, "reward": 1.0} for t in batches[0]])
        # a batch of 5 groups, 20 sequences: 10 a rank, micro-batches 4 + 4 + 2 each
        batches.append(_batch(worker, prompts + [[4, 10, 1, 12], [2, 10, 3, 12]], 2))
    finally:
        worker.close()
    spec = {**trainer_spec(**grpo), "strategy": strategy}
    alone = PolicyTrainerImpl(json.dumps(trainer_spec(**grpo)), telemetry=make_telemetry("policy_trainer"))
    initial = policy.state_dict_cpu(alone.model)
    want = []
    want_moments: dict[str, list[float]] = {}
    for b in batches:
        call(alone.logprobs, b)
        want.append(call(alone.train, b))
        want_moments = want_moments or first_moment(alone)
    want_state = policy.state_dict_cpu(alone.model)
    whole_params = _bytes(alone.model.parameters())
    whole_optimizer = _bytes(group.optimizer_tensors(alone.optimizer))

    ranks = _group_of_two(spec, batches, tmp_path)
    assert [r[1] for r in ranks] == [2, 2], ranks  # both joined a group of two (else: the rank's error)
    assert ranks[0][2] == ranks[1][2]  # the ranks report the same update
    # the first step's gradient (AdamW's first moment) is one trainer's on the whole batch
    assert set(ranks[0][5]) == set(want_moments)
    for name, want_m in want_moments.items():
        g, w = torch.tensor(ranks[0][5][name]), torch.tensor(want_m)
        assert torch.allclose(g, w, rtol=1e-3, atol=1e-4 * float(w.abs().max()) + 1e-12), name
    # after the steps the weights moved as one trainer's did: the difference is a sliver of the change (Adam
    # divides each gradient by its own size, so a gradient near 0 carries float noise into its weight)
    got_state = {k: torch.tensor(v) for k, v in ranks[0][3].items()}
    diff = _distance(got_state, want_state)
    moved = _distance(want_state, initial)
    assert moved > 0 and diff / moved < 0.01, (diff, moved)
    for got, exp in zip(ranks[0][2], want, strict=True):
        assert got["version"] == exp["version"]
        assert got["tokens"] == exp["tokens"] and got["sequences"] == exp["sequences"]
        assert got["epochs"] == exp["epochs"] and got["kept_sequences"] == exp["kept_sequences"]
        for key in ("loss", "kl", "entropy", "clip_fraction", "mean_ratio", "max_ratio", "grad_norm",
                    "learning_rate", "mean_reward"):
            assert got[key] == pytest.approx(exp[key], rel=1e-3, abs=1e-6), key
    assert want[0]["grad_norm"] > 0  # the update moved the weights: the comparison means something
    assert want[1]["epochs"] == 0 and ranks[0][2][1]["epochs"] == 0  # the flat step took no optimizer step
    params, optimizer = [r[6] for r in ranks], [r[7] for r in ranks]
    if strategy == "fsdp2":
        # each rank holds its half of the parameters and of AdamW's moments (dim-0 shards: within 10% of half; the
        # optimizer's per-parameter step counts are whole on every rank, a few bytes)
        assert sum(params) == whole_params
        assert all(abs(p - whole_params / 2) < 0.1 * whole_params / 2 for p in params), (params, whole_params)
        assert all(abs(o - whole_optimizer / 2) < 0.1 * whole_optimizer / 2 for o in optimizer), (optimizer,
                                                                                                   whole_optimizer)
        assert ranks[1][3] == {}  # the whole weights are gathered onto rank 0 only
    else:
        assert params == [whole_params, whole_params] and optimizer == [whole_optimizer, whole_optimizer]
        assert ranks[0][4] == policy.state_sha256(got_state)


def test_an_fsdp2_checkpoint_goes_on_in_one_trainer_or_two(make_telemetry, tmp_path):
    worker = GenerationWorkerImpl(json.dumps(worker_spec()), telemetry=make_telemetry("generation_worker"))
    try:
        prompts = [[3, 10, 4, 12], [2, 10, 2, 12], [1, 10, 5, 12]]
        batches = [_batch(worker, prompts, salt) for salt in range(3)]
    finally:
        worker.close()
    spec = {**trainer_spec(), "strategy": "fsdp2"}
    # two ranks, three steps, a checkpoint after the first (rank 0 writes the whole state; both are called)
    uninterrupted = _group_of_two(spec, batches, tmp_path / "a", checkpoint_after=1)
    assert [r[1] for r in uninterrupted] == [2, 2], uninterrupted
    checkpoint = uninterrupted[0][8]
    assert checkpoint and uninterrupted[1][8] == checkpoint
    # go on with two ranks from it: the same weights as the run that was not stopped, to float noise
    again = _group_of_two({**spec, "resume_from": checkpoint}, batches[1:], tmp_path / "b")
    assert [r[1] for r in again] == [2, 2], again
    want = {k: torch.tensor(v) for k, v in uninterrupted[0][3].items()}
    got = {k: torch.tensor(v) for k, v in again[0][3].items()}
    assert [o["version"] for o in again[0][2]] == [2, 3]
    assert _distance(got, want) <= 1e-6 * max(1.0, _distance(want, {k: torch.zeros_like(v) for k, v in want.items()}))
    # or with one trainer (the shards put together on load): the same update, to the group's float noise
    alone = PolicyTrainerImpl(json.dumps({**trainer_spec(), "resume_from": checkpoint}),
                              telemetry=make_telemetry("policy_trainer"))
    start = policy.state_dict_cpu(alone.model)
    for b in batches[1:]:
        call(alone.logprobs, b)
        call(alone.train, b)
    assert alone.version == 3
    diff = _distance(policy.state_dict_cpu(alone.model), want)
    moved = _distance(want, start)
    assert moved > 0 and diff / moved < 0.01, (diff, moved)


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


def test_an_fsdp2_group_of_your_model_writes_its_gathered_weights_as_a_folder_from_pretrained_loads(
        hf_checkpoint, make_telemetry, tmp_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    worker = GenerationWorkerImpl(json.dumps(worker_spec()), telemetry=make_telemetry("generation_worker"))
    try:
        batches = [_batch(worker, [[3, 10, 4, 12], [2, 10, 2, 12]], 0)]
    finally:
        worker.close()
    spec = {"model": {"family": "qwen2", "vocab_size": 16, "layers": 1, "hidden": 8, "heads": 1,
                      "max_positions": 64, "path": hf_checkpoint["model"], "dtype": "float32"},
            "seed": 7, "device": "cpu", "grpo": trainer_spec()["grpo"], "strategy": "fsdp2"}
    ranks = _group_of_two(spec, batches, tmp_path, checkpoint_after=1)
    assert [r[1] for r in ranks] == [2, 2], ranks
    folder = Path(ranks[0][8]).parent / "hf"
    loaded = AutoModelForCausalLM.from_pretrained(str(folder)).state_dict()
    whole = {k: torch.tensor(v) for k, v in ranks[0][3].items()}
    # the update's weights (version 1), every tensor as gathered, the tied head included
    assert [o["version"] for o in ranks[0][2]] == [1]
    assert set(loaded) == set(whole)
    assert all(torch.equal(loaded[k], whole[k]) for k in whole)
    assert AutoTokenizer.from_pretrained(str(folder)).eos_token == "</s>"
