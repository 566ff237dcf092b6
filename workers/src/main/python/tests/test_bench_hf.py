"""``python -m ravel_checks.bench_hf`` runs end to end on a tiny setting (no timing is asserted)."""

from __future__ import annotations

import json
from pathlib import Path

from ravel_checks import bench_hf


def test_the_benchmark_reports_equal_token_counts_on_both_sides(tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    code = bench_hf.main(["--hidden", "16", "--layers", "1", "--heads", "2", "--prompts", "2", "--group-size", "2",
                          "--max-new-tokens", "3", "--rounds", "1", "--json", str(out)])
    assert code == 0
    report = json.loads(out.read_text(encoding="utf-8"))
    for name in ("generation", "training"):
        (row,) = report[name]["rounds"]
        assert row["ravel_tokens"] == row["plain_tokens"] == 2 * 2 * 3
        assert row["ravel_s"] > 0 and row["plain_s"] > 0 and report[name]["ratio_median"] > 0
    assert report["settings"]["completions"] == 4 and report["threads"] >= 1
    # telemetry as a run has it: every wire call (a warm-up and a round, of generate and of train) opened its span
    assert report["settings"]["telemetry"].startswith("as a run") and report["settings"]["spans_exported"] >= 4


def test_telemetry_off_opens_no_span(tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    assert bench_hf.main(["--hidden", "16", "--layers", "1", "--heads", "2", "--prompts", "2", "--group-size", "2",
                          "--max-new-tokens", "2", "--rounds", "1", "--telemetry", "off", "--json", str(out)]) == 0
    report = json.loads(out.read_text(encoding="utf-8"))
    assert report["settings"]["telemetry"] == "disabled (no spans)" and report["settings"]["spans_exported"] == 0
