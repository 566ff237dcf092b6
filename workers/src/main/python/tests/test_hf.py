"""Your model: a local Hugging Face checkpoint, loaded offline by every worker; what it trains loads back."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from ravel_workers import hf
from ravel_workers.actors import PolicyTrainerImpl, RewardEnvironmentImpl
from ravel_workers.telemetry import ProcessTelemetry
from ravel_workers.wire import Problem

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
    assert RewardEnvironmentImpl.score.typed(env, problems, [seven, eight]) == [1.0, 0.0]  # type: ignore[attr-defined]


def test_prepare_cli_writes_the_rows_and_names_the_key_of_a_problem(hf_checkpoint: dict[str, str],
                                                                    tmp_path: Path) -> None:
    def run(**spec: object) -> subprocess.CompletedProcess[str]:
        full = {"model_path": hf_checkpoint["model"], "train": [hf_checkpoint["train"]], "max_prompt_tokens": 64,
                "reward_function": "exact_match", "out": str(tmp_path / "prepared.jsonl"), **spec}
        (tmp_path / "spec.json").write_text(json.dumps(full), encoding="utf-8")
        return subprocess.run([sys.executable, "-m", "ravel_checks.prepare", str(tmp_path / "spec.json")],
                              cwd=PACKAGE, capture_output=True, text=True, timeout=300, check=False)

    ok = run()
    assert ok.returncode == 0, ok.stderr
    summary = json.loads(ok.stdout.strip().splitlines()[-1])
    assert summary["rows"] == 25 and summary["vocab_size"] == 16 and summary["eos_token"] == 1
    rows = [json.loads(x) for x in (tmp_path / "prepared.jsonl").read_text(encoding="utf-8").splitlines()]
    assert rows[0]["prompt"] == "0+0=" and rows[0]["answer"] == "0" and rows[0]["tokens"]
    assert summary["eval_rows"] == 0

    with_eval = run(eval=[hf_checkpoint["eval"]], eval_out=str(tmp_path / "eval.jsonl"))
    assert with_eval.returncode == 0, with_eval.stderr
    assert json.loads(with_eval.stdout.strip().splitlines()[-1])["eval_rows"] == 5
    assert len((tmp_path / "eval.jsonl").read_text(encoding="utf-8").splitlines()) == 5

    for spec, line in [({"model_path": "Qwen/Qwen2.5-0.5B"}, "model.path: 'Qwen/Qwen2.5-0.5B' is not a folder here"),
                       ({"prompt_key": "question"}, "data.train: "),
                       ({"eval": [str(tmp_path / "nope.jsonl")], "eval_out": str(tmp_path / "e.jsonl")},
                        "data.eval: "),
                       ({"reward_function": "nowhere:f"}, "reward.function: nowhere:f: cannot import nowhere")]:
        bad = run(**spec)
        assert bad.returncode == 2, bad.stderr
        assert bad.stderr.strip().startswith(line), bad.stderr
        assert len(bad.stderr.strip().splitlines()) == 1
