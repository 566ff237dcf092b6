"""Your model: a local Hugging Face checkpoint, loaded offline by every worker; what it trains loads back."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from ravel_checks import prepare
from ravel_workers import hf
from ravel_workers.actors import PolicyTrainerImpl, RewardEnvironmentImpl
from ravel_workers.rewards import RewardError
from ravel_workers.telemetry import ProcessTelemetry
from ravel_workers.wire import Problem, RewardScores, RewardSpec

PACKAGE = Path(__file__).parent.parent


def test_check_folder_refuses_a_hub_id_and_what_is_not_a_checkpoint(tmp_path: Path) -> None:
    with pytest.raises(hf.CheckpointError, match="looks like a Hugging Face hub id, and Ravel downloads nothing"):
        hf.check_folder("Qwen/Qwen2.5-0.5B")
    with pytest.raises(hf.CheckpointError, match="does not exist"):
        hf.check_folder(str(tmp_path / "nope"))
    with pytest.raises(hf.CheckpointError, match="has no config.json"):
        hf.check_folder(str(tmp_path))
    (tmp_path / "config.json").write_text("{}", encoding="utf-8")
    with pytest.raises(hf.CheckpointError, match="has no tokenizer"):
        hf.check_folder(str(tmp_path))


def test_trainer_loads_the_checkpoint_and_writes_one_from_pretrained_loads(
        hf_checkpoint: dict[str, str], tmp_path: Path, make_telemetry: Callable[..., ProcessTelemetry]) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    spec = {"model": {"family": "qwen2", "vocab_size": 16, "layers": 1, "hidden": 8, "heads": 1,
                      "max_positions": 64, "path": hf_checkpoint["model"], "dtype": "float32"},
            "seed": 7, "device": "cpu", "grpo": {"group_size": 2}}
    trainer = PolicyTrainerImpl(spec, telemetry=make_telemetry("policy_trainer"))
    original = AutoModelForCausalLM.from_pretrained(hf_checkpoint["model"])
    assert all(torch.equal(a, b) for a, b in zip(trainer.model.state_dict().values(),
                                                 original.state_dict().values(), strict=True))
    path = PolicyTrainerImpl.checkpoint.typed(trainer, str(tmp_path / "step-1"))  # type: ignore[attr-defined]
    assert Path(path).name == "weights-v0.pt"
    folder = tmp_path / "step-1" / "hf"
    loaded = AutoModelForCausalLM.from_pretrained(str(folder))
    tok = AutoTokenizer.from_pretrained(str(folder))
    ids = tok("3+4=", return_tensors="pt").input_ids
    out = loaded.generate(ids, max_new_tokens=2, do_sample=False, pad_token_id=tok.pad_token_id)
    assert out.shape[1] > ids.shape[1]


def test_reward_environment_decodes_completions_and_calls_the_function(
        hf_checkpoint: dict[str, str], make_telemetry: Callable[..., ProcessTelemetry]) -> None:
    env = RewardEnvironmentImpl({"model_path": hf_checkpoint["model"], "function": "exact_match"},
                                telemetry=make_telemetry("reward_environment"))
    tok = env.tokenizer
    seven = tok("7", add_special_tokens=False).input_ids + [tok.eos_token_id]
    eight = tok("8", add_special_tokens=False).input_ids
    problems = [Problem("3+4=", "7"), Problem("3+4=", "7")]
    scores = RewardEnvironmentImpl.score.typed(env, problems, [seven, eight], 1)  # type: ignore[attr-defined]
    assert scores == RewardScores([1.0, 0.0], ["7", "8"], {}, 0)


def _env(hf_checkpoint: dict[str, str], make_telemetry: Callable[..., ProcessTelemetry], tmp_path: Path,
         function: str, **spec: object) -> RewardEnvironmentImpl:
    code = tmp_path / "code"
    code.mkdir(exist_ok=True)
    (code / "env_rewards.py").write_text(
        "import time\n"
        "def parts(completions, answers):\n"
        "    return {'exact': [float(c == a) for c, a in zip(completions, answers)], 'short': [0.5] * len(answers)}\n"
        "def broken(completions):\n"
        "    raise KeyError('no answer here')\n"
        "def by_step(completions, step):\n"
        "    return [float(step)] * len(completions)\n"
        "def slow(completions):\n"
        "    time.sleep(30)\n"
        "    return [0.0] * len(completions)\n", encoding="utf-8")
    return RewardEnvironmentImpl({"model_path": hf_checkpoint["model"], "function": function,
                                  "code_path": [str(code)], **spec}, telemetry=make_telemetry("reward_environment"))


def _two(env: RewardEnvironmentImpl) -> tuple[list[Problem], list[list[int]]]:
    tok = env.tokenizer
    return ([Problem("3+4=", "7"), Problem("3+4=", "7")],
            [tok("7", add_special_tokens=False).input_ids, tok("8", add_special_tokens=False).input_ids])


def test_reward_environment_returns_each_component_beside_their_sum(
        hf_checkpoint: dict[str, str], make_telemetry: Callable[..., ProcessTelemetry], tmp_path: Path) -> None:
    env = _env(hf_checkpoint, make_telemetry, tmp_path, "env_rewards:parts")
    scores = RewardEnvironmentImpl.score.typed(env, *_two(env), 1)  # type: ignore[attr-defined]
    assert scores.rewards == [1.5, 0.5]
    assert scores.components == {"exact": [1.0, 0.0], "short": [0.5, 0.5]} and scores.failed == 0


def test_reward_environment_gives_the_function_the_training_step(
        hf_checkpoint: dict[str, str], make_telemetry: Callable[..., ProcessTelemetry], tmp_path: Path) -> None:
    env = _env(hf_checkpoint, make_telemetry, tmp_path, "env_rewards:by_step")
    assert RewardEnvironmentImpl.score.typed(env, *_two(env), 7).rewards == [7.0, 7.0]  # type: ignore[attr-defined]
    assert RewardEnvironmentImpl.score.typed(env, *_two(env), 3).rewards == [3.0, 3.0]  # type: ignore[attr-defined]


def test_reward_environment_fails_on_a_raising_function_unless_told_to_score_zero(
        hf_checkpoint: dict[str, str], make_telemetry: Callable[..., ProcessTelemetry], tmp_path: Path) -> None:
    failing = _env(hf_checkpoint, make_telemetry, tmp_path, "env_rewards:broken")
    with pytest.raises(RewardError, match=r"reward.function env_rewards:broken: raised KeyError: 'no answer here'"):
        RewardEnvironmentImpl.score.typed(failing, *_two(failing), 1)  # type: ignore[attr-defined]
    zero = _env(hf_checkpoint, make_telemetry, tmp_path, "env_rewards:broken", on_error="zero")
    scores = RewardEnvironmentImpl.score.typed(zero, *_two(zero), 1)  # type: ignore[attr-defined]
    assert scores == RewardScores([0.0, 0.0], ["7", "8"], {}, 2)


def test_reward_environment_fails_a_call_slower_than_its_timeout_naming_the_function(
        hf_checkpoint: dict[str, str], make_telemetry: Callable[..., ProcessTelemetry], tmp_path: Path) -> None:
    env = _env(hf_checkpoint, make_telemetry, tmp_path, "env_rewards:slow", timeout_s=0.5, on_error="zero")
    with pytest.raises(RewardError, match=r"reward.function env_rewards:slow: a call took more than "
                                          r"reward.timeout_s = 0.5 s \(2 completions\)"):
        RewardEnvironmentImpl.score.typed(env, *_two(env), 1)  # type: ignore[attr-defined]
    with pytest.raises(RewardError, match="took more than"):  # its thread still runs: every later call fails too
        RewardEnvironmentImpl.score.typed(env, *_two(env), 1)  # type: ignore[attr-defined]


def test_reward_spec_refuses_an_unknown_on_error_and_a_negative_timeout() -> None:
    with pytest.raises(ValueError, match="RewardSpec.on_error: 'skip' is not one of fail, zero"):
        RewardSpec("m", "exact_match", on_error="skip")
    with pytest.raises(ValueError, match="RewardSpec.timeout_s: -1"):
        RewardSpec("m", "exact_match", timeout_s=-1)


def test_prepare_cli_writes_the_rows_and_names_the_key_of_a_problem(hf_checkpoint: dict[str, str], tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    def spec_file(**spec: object) -> Path:
        full = {"model_path": hf_checkpoint["model"], "train": [hf_checkpoint["train"]], "max_prompt_tokens": 64,
                "reward_function": "exact_match", "out": str(tmp_path / "prepared.jsonl"), **spec}
        (tmp_path / "spec.json").write_text(json.dumps(full), encoding="utf-8")
        return tmp_path / "spec.json"

    # the command as the driver runs it, a process of its own
    ok = subprocess.run([sys.executable, "-m", "ravel_checks.prepare", str(spec_file())], cwd=PACKAGE,
                        capture_output=True, text=True, timeout=300, check=False)
    assert ok.returncode == 0, ok.stderr
    summary = json.loads(ok.stdout.strip().splitlines()[-1])
    assert summary["rows"] == 25 and summary["vocab_size"] == 16 and summary["eos_token"] == 1
    rows = [json.loads(x) for x in (tmp_path / "prepared.jsonl").read_text(encoding="utf-8").splitlines()]
    assert rows[0]["prompt"] == "0+0=" and rows[0]["answer"] == "0" and rows[0]["tokens"]
    assert summary["eval_rows"] == 0

    # the rest through the same entry point in this process (each a process of its own cost 7 s of imports)
    def run(**spec: object) -> tuple[int, str, str]:
        code = prepare.main([str(spec_file(**spec))])
        out, err = capsys.readouterr()
        return code, out, err

    code, out, err = run(eval=[hf_checkpoint["eval"]], eval_out=str(tmp_path / "eval.jsonl"))
    assert code == 0, err
    assert json.loads(out.strip().splitlines()[-1])["eval_rows"] == 5
    assert len((tmp_path / "eval.jsonl").read_text(encoding="utf-8").splitlines()) == 5

    for spec, line in [({"model_path": "Qwen/Qwen2.5-0.5B"}, "model.path: 'Qwen/Qwen2.5-0.5B' is not a folder here"),
                       ({"prompt_key": "question"}, "data.train: "),
                       ({"eval": [str(tmp_path / "nope.jsonl")], "eval_out": str(tmp_path / "e.jsonl")},
                        "data.eval: "),
                       ({"reward_function": "nowhere:f"}, "reward.function: nowhere:f: cannot import nowhere")]:
        code, out, err = run(**spec)
        assert code == 2, err
        assert err.strip().startswith(line), err
        assert len(err.strip().splitlines()) == 1
