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
    assert len(report["ravel_over_ray"]["rounds"]) == 2 and report["ravel_over_ray"]["median"] > 0
