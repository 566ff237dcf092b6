"""The actor classes through their wire methods, as Java calls them (no Ray), and once under a local Ray."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import torch

from ravel_workers import actors, names, policy
from ravel_workers.actors import GenerationWorkerImpl, PolicyTrainerImpl
from ravel_workers.weights import Weights
from ravel_workers.wire import ModelConfig

import ray_child
from support import TINY_MODEL, TRACEPARENT, call, carrier, request, spans_of, trainer_spec, worker_spec


@pytest.fixture
def worker(make_telemetry):
    w = GenerationWorkerImpl(json.dumps(worker_spec()), telemetry=make_telemetry("generation_worker"))
    yield w
    w.close()


@pytest.fixture
def trainer(make_telemetry):
    return PolicyTrainerImpl(json.dumps(trainer_spec()), telemetry=make_telemetry("policy_trainer"))


def batch_of(worker, prompts, group=4, reward=lambda k, r: float(k % 2)):
    """Generates ``group`` completions per prompt and scores them (by default: every other one rewarded)."""
    reqs = [request(f"p{i}-g{j}", p, 4, 1.0, seed=i * group + j) for i, p in enumerate(prompts) for j in range(group)]
    results = call(worker.generate, reqs)
    return [{"request_id": r["request_id"], "prompt": r["prompt_tokens"], "completion": r["completion_tokens"],
             "logprobs": r["logprobs"], "reward": reward(k, r), "weight_version": r["weight_version"],
             "group_index": k // group} for k, r in enumerate(results)]


def test_generate_and_generate_async(worker):
    reqs = [request("a", [3, 10, 4, 12], seed=1), request("b", [1, 10, 1, 12], seed=2)]
    results = call(worker.generate, reqs, carrier=carrier())
    assert [r["request_id"] for r in results] == ["a", "b"]
    chunk = call(worker.generate_async, [reqs[0]], carrier=carrier())
    assert [r["request_id"] for r in chunk] == ["a"]
    assert chunk[0]["completion_tokens"] == results[0]["completion_tokens"]
    stats = call(worker.engine_stats)
    assert sum(stats["finished"].values()) == 3 and stats["prompt_tokens"] == 12
    names = sorted(s["name"] for s in spans_of(worker.telemetry))
    assert names == ["rl.worker.generate", "rl.worker.generate_async"]
    exported = call(worker.flush_telemetry, 2000)
    assert exported == call(worker.telemetry_stats) and exported["ended"] == 2 and exported["exported"] == 2


def test_llm_request_spans_are_children_of_the_worker_span(make_telemetry):
    t = make_telemetry("generation_worker", engine_tracing="true")
    w = GenerationWorkerImpl(worker_spec(), telemetry=t)
    try:
        call(w.generate, [request("a", [1, 10, 2, 12])], carrier=carrier())
        spans = {s["name"]: s for s in spans_of(t)}
        assert spans["llm_request"]["parentSpanId"] == spans["rl.worker.generate"]["spanId"]
    finally:
        w.close()


def test_update_weights_from_a_trainers_weights(worker, trainer):
    batch = batch_of(worker, [[3, 10, 4, 12], [1, 10, 1, 12]])
    outcome = call(trainer.train, batch)
    assert outcome["version"] == 1 and outcome["tokens"] == sum(len(t["completion"]) for t in batch)
    wire = trainer.weights(carrier(), "[]")
    assert wire["format"] == names.WEIGHTS_FORMAT and Weights.from_wire(wire).version == 1
    assert call(worker.update_weights, {"$ref": 0}, refs=(wire,)) == 1
    trained = trainer.model.state_dict()
    assert all(torch.equal(v, trained[k]) for k, v in worker.engine.model.state_dict().items())
    r = call(worker.generate, [request("x", [1, 10, 1, 12])])[0]
    assert r["weight_version"] == 1


def test_refit_stages_gather_and_load_are_spans_with_the_weights_bytes(worker, trainer):
    call(trainer.train, batch_of(worker, [[3, 10, 4, 12]]))
    wire = trainer.weights(carrier(), "[]")
    again = trainer.weights(carrier(), "[]")["data"]
    assert again.ctypes.data == wire["data"].ctypes.data  # gathered once per version: one gather span
    nbytes = wire["data"].nbytes
    assert nbytes >= sum(t.numel() * t.element_size() for t in {t.data_ptr(): t for t in
                                                                trainer.model.state_dict().values()}.values())
    call(worker.update_weights, {"$ref": 0}, refs=(wire,), carrier=carrier())
    gathers = [s for s in spans_of(trainer.telemetry) if s["name"] == names.REFIT_GATHER]
    assert [int(g["_attributes"][names.REFIT_BYTES]) for g in gathers] == [nbytes]
    assert gathers[0]["parentSpanId"] == TRACEPARENT.split("-")[2]  # under the caller's refit
    spans = {s["name"]: s for s in spans_of(worker.telemetry)}
    load = spans[names.REFIT_LOAD]
    assert int(load["_attributes"][names.REFIT_BYTES]) == nbytes
    assert load["parentSpanId"] == spans["rl.worker.update_weights"]["spanId"]


def test_refit_stages_are_not_opened_when_the_refit_group_is_off(make_telemetry):
    t = make_telemetry("generation_worker", preset="default")
    w = GenerationWorkerImpl(worker_spec(), telemetry=t)
    tr = PolicyTrainerImpl(json.dumps(trainer_spec()), telemetry=make_telemetry("policy_trainer", preset="default"))
    try:
        call(w.update_weights, {"$ref": 0}, refs=(tr.weights(carrier(), "[]"),), carrier=carrier())
        assert not [s for s in spans_of(t) + spans_of(tr.telemetry) if s["name"].startswith("rl.refit.")]
    finally:
        w.close()


def test_trainer_starts_from_the_workers_weights_and_logprobs_agree(worker, trainer):
    batch = batch_of(worker, [[3, 10, 4, 12]])
    summary = call(trainer.logprobs, batch)
    tokens = sum(len(t["completion"]) for t in batch)
    behaviour = sum(sum(t["logprobs"]) for t in batch) / tokens
    assert summary["tokens"] == tokens
    assert summary["policy"] == pytest.approx(behaviour, abs=1e-4)
    assert summary["reference"] == pytest.approx(summary["policy"], abs=1e-6)
    assert summary["kl"] == pytest.approx(0, abs=1e-9)


def test_logprobs_cache_is_reused_by_the_following_train(worker, trainer):
    batch = batch_of(worker, [[3, 10, 4, 12], [2, 10, 2, 12]])
    call(trainer.logprobs, batch)
    assert trainer.reference_passes == 1
    first = call(trainer.train, batch)
    assert trainer.reference_passes == 1  # reused
    assert first["mean_ratio"] == pytest.approx(1.0, abs=1e-4) and first["grad_norm"] > 0
    second = call(trainer.train, batch)  # no logprobs call in between: computed afresh
    assert trainer.reference_passes == 2 and second["version"] == 2
    call(trainer.logprobs, batch)
    call(trainer.train, list(reversed(batch[:4])) + batch[4:])  # other ids: not reused
    assert trainer.reference_passes == 4
    names = [s["name"] for s in spans_of(trainer.telemetry)]
    assert names.count("rl.trainer.train") == 3 and names.count("rl.trainer.logprobs") == 2


def test_train_with_kl_beta_zero_runs_no_reference_pass(worker, make_telemetry):
    t = PolicyTrainerImpl(json.dumps(trainer_spec(kl_beta=0.0)), telemetry=make_telemetry("policy_trainer"))
    batch = batch_of(worker, [[3, 10, 4, 12], [2, 10, 2, 12]])
    out = call(t.train, batch)
    assert t.reference_passes == 0
    assert out["version"] == 1 and out["grad_norm"] > 0 and out["kl"] == 0.0


def test_train_rejects_a_batch_that_is_not_groups(trainer, worker):
    batch = batch_of(worker, [[3, 10, 4, 12], [2, 10, 2, 12]])
    with pytest.raises(ValueError, match="multiple of group_size"):
        call(trainer.train, batch[:3])
    with pytest.raises(ValueError, match="does not share the prompt"):
        call(trainer.train, batch[1:5] + batch[:1] + batch[5:])
    assert trainer.version == 0
    (span,) = [s for s in spans_of(trainer.telemetry) if s["name"] == "rl.trainer.train"][:1]
    assert span["status"]["code"] == 2


def test_frozen_reference_and_adamw(trainer, worker):
    before = policy.state_dict_cpu(trainer.reference)
    batch = batch_of(worker, [[3, 10, 4, 12]])
    call(trainer.train, batch)
    after = policy.state_dict_cpu(trainer.reference)
    assert all(torch.equal(before[k], after[k]) for k in before)
    assert not all(torch.equal(before[k], v) for k, v in policy.state_dict_cpu(trainer.model).items())
    group = trainer.optimizer.param_groups[0]
    assert group["betas"] == (0.9, 0.99) and group["eps"] == 1e-8 and group["lr"] == 0.01


def test_checkpoint_is_written_atomically(trainer, tmp_path):
    path = call(trainer.checkpoint, str(tmp_path / "ckpt"))
    assert path == str((tmp_path / "ckpt" / "weights-v0.pt").absolute())
    assert sorted(os.listdir(tmp_path / "ckpt")) == ["weights-v0.pt", "weights-v0.pt.sha256"]
    version, state = policy.read_blob(Path(path).read_bytes())
    model = policy.build_model(ModelConfig(**TINY_MODEL), 7)
    assert version == 0 and all(torch.equal(state[k], v) for k, v in policy.state_dict_cpu(model).items())
    assert Path(path + ".sha256").read_text().strip() == policy.weights_sha256(model)


def test_publish_file_writes_every_tensor_once_per_version_and_keeps_the_one_before(trainer, tmp_path):
    import hashlib

    from safetensors.torch import load_file

    folder = tmp_path / "weights"
    ref = json.loads(call(trainer.publish_file, str(folder)))
    path = Path(ref["path"])
    assert path == (folder / "weights-v0.safetensors").absolute() and ref["version"] == 0
    data = path.read_bytes()
    assert ref["bytes"] == len(data) and ref["sha256"] == hashlib.sha256(data).hexdigest()
    state = policy.state_dict_cpu(trainer.model)
    loaded = load_file(str(path))
    # every tensor of the state dict, tied ones included (a server's head would go stale without lm_head.weight)
    assert set(loaded) == set(state) and all(torch.equal(loaded[k], v) for k, v in state.items())
    assert "lm_head.weight" in loaded
    # the same version again: the same file, not written again
    mtime = path.stat().st_mtime_ns
    assert json.loads(call(trainer.publish_file, str(folder))) == ref and path.stat().st_mtime_ns == mtime
    # later versions: the file of the version before stays (a server may still read it), older ones go
    for v in (1, 2, 3):
        trainer.version = v
        call(trainer.publish_file, str(folder))
    assert sorted(os.listdir(folder)) == ["weights-v2.safetensors", "weights-v3.safetensors"]


def test_a_trainer_resumed_from_a_checkpoint_goes_on_bit_for_bit(worker, make_telemetry, tmp_path):
    # two steps, a checkpoint, two more: a trainer resumed from the checkpoint takes the same two steps
    spec = trainer_spec(lr_scheduler="cosine", warmup_steps=1, total_steps=4)
    batches = [batch_of(worker, [[3, 10, 4, 12], [2, 10, 1, 12]]) for _ in range(2)]
    straight = PolicyTrainerImpl(json.dumps(spec), telemetry=make_telemetry("policy_trainer"))
    call(straight.train, batches[0])
    call(straight.train, batches[1])
    path = call(straight.checkpoint, str(tmp_path / "step-2"))
    want = [call(straight.train, b) for b in batches]
    resumed = PolicyTrainerImpl(json.dumps({**spec, "resume_from": path}), telemetry=make_telemetry("p2"))
    assert resumed.version == 2 and resumed.optimizer_steps == 2
    got = [call(resumed.train, b) for b in batches]
    assert got == want  # every measure, the learning rate of the schedule included, equal to the bit
    assert policy.weights_sha256(resumed.model) == policy.weights_sha256(straight.model)
    with pytest.raises(FileNotFoundError, match="resume_from"):
        PolicyTrainerImpl(json.dumps({**spec, "resume_from": str(tmp_path / "nothing.pt")}),
                          telemetry=make_telemetry("p3"))


def test_process_id_is_this_process(worker, trainer):
    # what the Java driver tells a restarted actor by: a new process answers with a new id
    assert call(worker.process_id) == os.getpid()
    assert call(trainer.process_id) == os.getpid()


def test_remote_classes_exist():
    assert actors.GenerationWorker.__ray_metadata__.modified_class.__name__ == "GenerationWorkerImpl"
    assert actors.PolicyTrainer.__ray_metadata__.modified_class.__name__ == "PolicyTrainerImpl"


@pytest.mark.ray
def test_under_a_local_ray_cluster(tmp_path):
    # Ray runs in a child process (tests/local_ray_actors.py): a Ray that cannot start, or whose GCS is stopped,
    # fails this test with Ray's own log instead of ending the pytest process; it is never a skip
    ray_dir = Path(tempfile.mkdtemp(prefix="rv-", dir="/tmp"))  # Ray's socket paths must stay under 108 bytes
    out = tmp_path / "answers.json"
    try:
        ray_child.run(["tests/local_ray_actors.py", str(ray_dir), str(tmp_path / "runs"), str(out)], ray_dir=ray_dir,
                      env=ray_child.child_env(tmp_path), cwd=Path(__file__).resolve().parents[1], timeout_s=1800)
        answers = json.loads(out.read_text(encoding="utf-8"))
        assert answers["request_ids"] == [f"r{i}" for i in range(8)]
        assert answers["version"] == 0
        # 8 generate_async, update_weights and its refit stage rl.refit.load
        assert answers["stats"]["ended"] == 10 and answers["stats"]["exported"] == 10
        files = list((tmp_path / "runs" / "ray-test").glob("traces-generation_worker-*.jsonl"))
        resource = json.loads(files[0].read_text().splitlines()[0])["resourceSpans"][0]["resource"]["attributes"]
        values = {a["key"]: a["value"].get("stringValue") for a in resource}
        assert {"ray.job.id", "ray.actor.id", "ray.node.id", "rl.process.role", "host.name"} <= values.keys()
        assert values["ray.node.ip"] == answers["node_ip"]  # the node the actor ran on
    finally:
        shutil.rmtree(ray_dir, ignore_errors=True)


def test_a_failing_ray_child_fails_the_test_with_its_output_and_rays_log(tmp_path):
    ray_dir = tmp_path / "ray"
    logs = ray_dir / "session_latest" / "logs"
    logs.mkdir(parents=True)
    (logs / "gcs_server.err").write_text("early line\nGCS: could not bind its port\n", encoding="utf-8")
    script = tmp_path / "child.py"
    script.write_text("import sys\nprint('starting Ray')\nsys.exit(3)\n", encoding="utf-8")
    with pytest.raises(pytest.fail.Exception) as failed:
        ray_child.run([str(script)], ray_dir=ray_dir, env=ray_child.child_env(tmp_path), cwd=tmp_path, timeout_s=600)
    text = str(failed.value)
    assert "exited with status 3" in text and "starting Ray" in text
    assert "gcs_server.err" in text and "GCS: could not bind its port" in text


def test_a_hung_ray_child_is_killed_by_its_pid_and_fails_the_test(tmp_path):
    script = tmp_path / "child.py"
    script.write_text("import time\nprint('hanging', flush=True)\ntime.sleep(3600)\n", encoding="utf-8")
    with pytest.raises(pytest.fail.Exception) as failed:
        ray_child.run([str(script)], ray_dir=tmp_path / "ray", env=ray_child.child_env(tmp_path), cwd=tmp_path,
                      timeout_s=1)
    assert "still running after 1 s" in str(failed.value) and "no Ray log under" in str(failed.value)


def test_a_recorded_process_is_signalled_only_while_its_pid_still_names_it(tmp_path):
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
    try:
        started = ray_child.start_time(proc.pid)
        assert started is not None
        assert not ray_child.signal_if_same(proc.pid, str(int(started) + 1), signal.SIGKILL)  # another process
        assert proc.poll() is None
        (tmp_path / ray_child.PIDS).write_text(json.dumps([[proc.pid, started]]), encoding="utf-8")
        assert ray_child.stop_leftovers(tmp_path) == [proc.pid]
        assert proc.wait(timeout=60) == -signal.SIGTERM
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_vllm_engine_needs_vllm(make_telemetry):
    pytest.importorskip("torch")
    try:
        import vllm  # noqa: F401
        pytest.skip("vLLM is installed here")
    except ImportError:
        pass
    with pytest.raises(RuntimeError, match="vLLM is not importable"):
        GenerationWorkerImpl(worker_spec(engine="vllm"), telemetry=make_telemetry())


def _trained(worker, make_telemetry, batch, **grpo):
    t = PolicyTrainerImpl(json.dumps(trainer_spec(**grpo)), telemetry=make_telemetry("policy_trainer"))
    out = call(t.train, batch)
    return t, out


@pytest.mark.parametrize("loss_type", ["grpo", "dr_grpo", "dapo"])
def test_four_micro_batches_give_the_update_of_one(worker, make_telemetry, loss_type):
    # the accumulated gradient is the full batch's (to float32 rounding), so the step is the same step; the weights
    # are compared where Adam's first step is well conditioned (|g| well above its eps 1e-8: m / sqrt(v) = sign(g)
    # there, while a gradient within rounding of 0 may land on either side of it)
    batch = batch_of(worker, [[3, 10, 4, 12], [2, 10, 2, 12]])  # 8 sequences, micro-batches of 2
    whole, a = _trained(worker, make_telemetry, batch, loss_type=loss_type)
    parts, b = _trained(worker, make_telemetry, batch, loss_type=loss_type, micro_batch_size=2)
    assert b["loss"] == pytest.approx(a["loss"], abs=1e-6) and b["grad_norm"] == pytest.approx(a["grad_norm"], rel=1e-5)
    compared = 0
    for (name, x), (_, y) in zip(whole.model.named_parameters(), parts.model.named_parameters(), strict=True):
        assert x.grad is not None and y.grad is not None, name
        assert torch.allclose(x.grad, y.grad, atol=1e-6, rtol=1e-4), name
        firm = x.grad.abs() > 1e-5
        assert torch.allclose(x.detach()[firm], y.detach()[firm], atol=1e-6, rtol=0), name
        compared += int(firm.sum().item())
    assert compared > 1000, "most weights were compared"


def test_ppo_epochs_take_an_optimizer_step_per_pass_with_ratios_away_from_one(worker, make_telemetry):
    batch = batch_of(worker, [[3, 10, 4, 12], [2, 10, 2, 12]])
    one_pass, a = _trained(worker, make_telemetry, batch, learning_rate=0.05)
    two_passes, b = _trained(worker, make_telemetry, batch, learning_rate=0.05, ppo_epochs=2)
    assert a["epochs"] == 1 and b["epochs"] == 2 and two_passes.optimizer_steps == 2 and b["version"] == 1
    assert a["max_ratio"] == pytest.approx(1.0, abs=1e-4)  # on-policy: the first pass's ratios are 1
    assert abs(b["max_ratio"] - 1.0) > 1e-3  # the second pass sees the weights the first one moved


def test_filter_zero_advantage_with_only_flat_groups_updates_nothing(worker, make_telemetry):
    batch = batch_of(worker, [[3, 10, 4, 12], [2, 10, 2, 12]], reward=lambda k, r: 1.0)
    t = PolicyTrainerImpl(json.dumps(trainer_spec(filter_zero_advantage=True)), telemetry=make_telemetry("p"))
    before = {k: v.clone() for k, v in t.model.state_dict().items()}
    out = call(t.train, batch)
    assert out["zero_advantage_groups"] == 2 and out["kept_sequences"] == 0 and out["epochs"] == 0
    assert out["version"] == 1 and t.optimizer_steps == 0
    assert all(torch.equal(before[k], v) for k, v in t.model.state_dict().items())


def test_learning_rate_follows_the_schedule(worker, make_telemetry):
    batch = batch_of(worker, [[3, 10, 4, 12]])
    t = PolicyTrainerImpl(json.dumps(trainer_spec(learning_rate=0.01, lr_scheduler="linear", warmup_steps=2,
                                                  total_steps=4)), telemetry=make_telemetry("p"))
    rates = [call(t.train, batch)["learning_rate"] for _ in range(4)]
    # k / W while warming up (k = 0, 1), then (T - k) / (T - W) for k = 2, 3
    assert rates == pytest.approx([0.0, 0.005, 0.01, 0.005], abs=1e-12)
