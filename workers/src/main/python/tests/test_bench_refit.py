"""``python -m ravel_checks.bench_refit`` runs end to end on a tiny model and proves its transfers moved the
weights (the receivers' digests); no timing is asserted."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import pytest
import torch

from ravel_checks import bench_refit
from ravel_workers import policy
from ravel_workers.wire import ModelConfig

import ray_child


@pytest.mark.ray
def test_the_worker_ends_up_holding_the_trainers_weights_and_every_side_is_reported(tmp_path: Path) -> None:
    # the benchmark's Ray runs in a child process (tests/ray_child.py): a Ray that cannot start fails the test
    out = tmp_path / "report.json"
    ray_dir = Path(tempfile.mkdtemp(prefix="rv-", dir="/tmp"))  # Ray's socket paths must stay under 108 bytes
    try:
        ray_child.run(["-m", "ravel_checks.bench_refit", "--hidden", "32", "--layers", "1", "--heads", "2", "--rounds",
                       "2", "--temp-dir", str(ray_dir), "--json", str(out)], ray_dir=ray_dir,
                      env=ray_child.child_env(tmp_path), cwd=Path(__file__).resolve().parents[1], timeout_s=1800)
    finally:
        shutil.rmtree(ray_dir, ignore_errors=True)
    report = json.loads(out.read_text(encoding="utf-8"))
    d = report["digests"]
    # asked of the actors themselves after the rounds: the worker started from other weights and now holds the
    # trainer's, and each plain receiver holds the state dict it was sent
    assert d["worker"] == d["trainer"] and d["worker_before"] != d["trainer"]
    assert d["ray_numpy"] == d["ray"] == d["sent"]
    assert all(len(v) == 64 for v in d.values())
    model = {"family": "gpt2", "vocab_size": 16, "layers": 1, "hidden": 32, "heads": 2, "max_positions": 16}
    built = policy.build_model(ModelConfig.from_wire(model), 7)
    assert report["bytes"] == bench_refit.state_bytes(policy.state_dict_cpu(built))
    for side in ("ravel", "ray_numpy", "ray", "torch", "memcpy"):
        assert len(report["gb_per_s"][side]) == 2 and all(x > 0 for x in report["gb_per_s"][side])
    for key in ("ravel_over_ray_numpy", "ravel_over_memcpy", "ravel_over_ray"):
        r = report[key]
        assert set(r) == {"value", "ci95", "per_round", "median", "fastest"}
        assert len(r["per_round"]) == 2 and r["median"] > 0 and r["fastest"] > 0
        assert r["value"] == pytest.approx(sum(r["per_round"]) / 2)
        low, high = r["ci95"]
        assert low <= r["value"] <= high


def test_digests_that_do_not_match_are_an_error() -> None:
    good = {"sent": "a", "trainer": "b", "worker_before": "c", "worker": "b", "ray_numpy": "a", "ray": "a"}
    bench_refit.check_digests(good)
    with pytest.raises(RuntimeError, match="worker holds c.*expected b"):
        bench_refit.check_digests({**good, "worker": "c"})
    with pytest.raises(RuntimeError, match="ray_numpy holds"):
        bench_refit.check_digests({**good, "ray_numpy": "x"})
    with pytest.raises(RuntimeError, match="before any refit"):
        bench_refit.check_digests({**good, "worker_before": "b"})


def test_tied_tensors_are_one_array_so_their_bytes_are_sent_once() -> None:
    shared, other = torch.arange(6, dtype=torch.float32).view(2, 3), torch.ones(4)
    state = {"wte.weight": shared, "lm_head.weight": shared, "ln.bias": other}
    arrays = bench_refit.as_arrays(state)
    assert list(arrays) == list(state)
    assert all(torch.equal(torch.from_numpy(arrays[k]), v) for k, v in state.items())
    assert arrays["lm_head.weight"] is arrays["wte.weight"] and arrays["ln.bias"] is not arrays["wte.weight"]
    assert arrays["wte.weight"].ctypes.data == shared.data_ptr()  # the tensor's memory, not a copy


def test_the_ratios_summary_is_a_mean_with_a_student_t_interval() -> None:
    s = bench_refit.summary([1.0, 2.0, 3.0])
    assert s["value"] == 2.0 and s["median"] == 2.0 and s["per_round"] == [1.0, 2.0, 3.0]
    assert s["ci95"] == pytest.approx([2.0 - 4.303 / 3 ** 0.5, 2.0 + 4.303 / 3 ** 0.5])
    assert bench_refit.summary([0.7])["ci95"] == [None, None]
    assert bench_refit.t975(1) == 12.706 and bench_refit.t975(30) == 2.042
    assert 1.96 < bench_refit.t975(31) < 2.042 and bench_refit.t975(1000) == pytest.approx(1.962, abs=1e-3)
