"""gpu_check on the CPU with a tiny config: steps run, spans land in the JSONL files, the summary is printed."""

from __future__ import annotations

import json

from ravel_checks import gpu_check

from support import read_spans


def test_gpu_check_on_cpu(tmp_path, capsys):
    code = gpu_check.main(["--device", "cpu", "--hidden", "32", "--layers", "1", "--heads", "2", "--prompts", "4",
                           "--steps", "2", "--runs-dir", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0, out
    summary = json.loads(out.strip().splitlines()[-1])
    assert summary["steps"] == 2 and summary["tokens_per_s"] > 0 and summary["spans"] > 0
    assert "tokens/s" in out
    names = {s["name"] for f in tmp_path.rglob("traces-*.jsonl") for s in read_spans(f)}
    assert {"rl.worker.generate", "rl.worker.update_weights", "rl.trainer.logprobs", "rl.trainer.train"} <= names


def test_task_tokens():
    assert gpu_check.encode("3+4=") == [3, 10, 4, 12]
    assert gpu_check.decode([7, gpu_check.EOS]) == "7" and gpu_check.VOCAB == 14
