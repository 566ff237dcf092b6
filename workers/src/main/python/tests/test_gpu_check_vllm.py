"""gpu_check_vllm without a server: the vllm serve command it composes, its plugin check, its reward and tolerance.
Its steps against a real vllm serve run in the vLLM plugin's tests (workers/src/main/vllm-plugin/tests)."""

from __future__ import annotations

import json
import stat
from pathlib import Path

from ravel_checks import gpu_check_vllm as g


def fake_vllm_env(folder: Path, entry_points: list[str]) -> Path:
    """A ``bin/vllm`` with a ``bin/python`` beside it that lists these ``vllm.general_plugins`` entry points."""
    bin_dir = folder / "bin"
    bin_dir.mkdir(parents=True)
    for name, body in (("vllm", "exit 1"), ("python", f"echo '{json.dumps(entry_points)}'")):
        f = bin_dir / name
        f.write_text(f"#!/bin/sh\n{body}\n")
        f.chmod(f.stat().st_mode | stat.S_IXUSR)
    return bin_dir / "vllm"


def test_serveCommand_cpu_asRavelLaunchesIt(tmp_path):
    cmd, env = g.serve_command(["/v/bin/vllm"], tmp_path, 8000, "cpu", "float32", 9, 64)
    assert cmd[:3] == ["/v/bin/vllm", "serve", str(tmp_path)]
    line = " ".join(cmd)
    for part in ("--host 127.0.0.1 --port 8000", "--dtype float32", "--seed 9", "--logprobs-mode processed_logprobs",
                 "--generation-config vllm", "--enforce-eager"):
        assert part in line
    assert json.loads(cmd[cmd.index("--weight-transfer-config") + 1]) == {"backend": "ravel-file"}
    assert env["VLLM_SERVER_DEV_MODE"] == "1" and env["VLLM_TARGET_DEVICE"] == "cpu"
    assert env["VLLM_CPU_KVCACHE_SPACE"] == "1"


def test_serveCommand_cudaN_thatGpuAndAShareOfIt(tmp_path):
    cmd, env = g.serve_command(["vllm"], tmp_path, 8000, "cuda:1", "bfloat16", 7, 64, ["--max-num-seqs", "8"])
    assert env["CUDA_VISIBLE_DEVICES"] == "1" and "VLLM_TARGET_DEVICE" not in env
    assert cmd[cmd.index("--gpu-memory-utilization") + 1] == "0.3"
    assert cmd[-2:] == ["--max-num-seqs", "8"]


def test_pluginInstalled_asksThePythonBesideVllm(tmp_path):
    assert g.plugin_installed([str(fake_vllm_env(tmp_path / "a", [g.PLUGIN_ENTRY_POINT]))])[0] is True
    assert g.plugin_installed([str(fake_vllm_env(tmp_path / "b", ["other:register"]))])[0] is False


def test_main_pluginMissing_exits2SayingHowToInstallIt(tmp_path, capsys):
    vllm = fake_vllm_env(tmp_path, [])
    assert g.main(["--vllm", str(vllm), "--device", "cpu", "--work-dir", str(tmp_path / "w")]) == 2
    err = capsys.readouterr().err
    assert "plugin" in err and "pip install workers/src/main/vllm-plugin" in err
    assert not (tmp_path / "w").exists()  # nothing made or started


def test_reward_answerThenPrefix():
    assert g.reward("7", "7") == 1.0 and g.reward("7+1", "7") == 0.5 and g.reward("6", "7") == 0.0


def test_tolerance_byDeviceAndDtype():
    assert g.tolerance("cpu", "float32") == 1e-4
    assert g.tolerance("cuda", "float32") == 5e-3
    assert g.tolerance("cuda", "bfloat16") == 5e-2
