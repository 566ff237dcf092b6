"""``python -m ravel_checks.bench_refit`` runs end to end on a tiny model (no timing is asserted)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ravel_checks import bench_refit
from ravel_workers import policy
from ravel_workers.wire import ModelConfig


@pytest.mark.ray
def test_the_benchmark_moves_the_state_dicts_bytes_every_way(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))  # whatever Ray writes under ~ stays in the test's folder
    out = tmp_path / "report.json"
    report = bench_refit.main(["--hidden", "32", "--layers", "1", "--heads", "2", "--rounds", "2", "--json", str(out)])
    model = {"family": "gpt2", "vocab_size": 16, "layers": 1, "hidden": 32, "heads": 2, "max_positions": 16}
    expected = bench_refit.state_bytes(policy.state_dict_cpu(policy.build_model(ModelConfig.from_wire(model), 7)))
    assert report["bytes"] == expected
    assert json.loads(out.read_text(encoding="utf-8"))["bytes"] == expected
    for side in ("ravel", "ray", "torch"):
        assert len(report["gb_per_s"][side]) == 2 and all(x > 0 for x in report["gb_per_s"][side])
    r = report["ravel_over_ray"]
    assert set(r) == {"value", "ci95", "per_round", "median", "fastest"}
    assert len(r["per_round"]) == 2 and r["median"] > 0 and r["fastest"] > 0
    assert r["value"] == pytest.approx(sum(r["per_round"]) / 2)
    low, high = r["ci95"]
    assert low <= r["value"] <= high
    assert json.loads(out.read_text(encoding="utf-8"))["ravel_over_ray"]["per_round"] == r["per_round"]


def test_the_ratios_summary_is_a_mean_with_a_student_t_interval() -> None:
    s = bench_refit.summary([1.0, 2.0, 3.0])
    assert s["value"] == 2.0 and s["median"] == 2.0 and s["per_round"] == [1.0, 2.0, 3.0]
    assert s["ci95"] == pytest.approx([2.0 - 4.303 / 3 ** 0.5, 2.0 + 4.303 / 3 ** 0.5])
    assert bench_refit.summary([0.7])["ci95"] == [None, None]
    assert bench_refit.t975(1) == 12.706 and bench_refit.t975(30) == 2.042
    assert 1.96 < bench_refit.t975(31) < 2.042 and bench_refit.t975(1000) == pytest.approx(1.962, abs=1e-3)
