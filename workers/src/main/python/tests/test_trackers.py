"""The ``tensorboard`` tracker's writer, read back with TensorBoard's own ``EventAccumulator``."""

from __future__ import annotations

import io
import json
import math
from pathlib import Path

import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from tensorboard.util import tensor_util

from ravel_workers import trackers


def _read(logdir: Path) -> dict[str, list[tuple[int, float]]]:
    acc = EventAccumulator(str(logdir), size_guidance={"tensors": 0})
    acc.Reload()
    return {tag: [(e.step, float(tensor_util.make_ndarray(e.tensor_proto).item())) for e in acc.Tensors(tag)]
            for tag in acc.Tags()["tensors"]}


def _line(step: int, scalars: dict[str, object]) -> str:
    return json.dumps({"step": step, "wall_time": 1_700_000_000.0 + step, "scalars": scalars})


def test_write_eachStepsScalars_readBackExactlyByTensorBoard(tmp_path: Path) -> None:
    out = io.StringIO()
    lines = [_line(1, {"rl.step.reward.mean": 0.1, "rl.step.loss": -0.123456789012345}),
             _line(2, {"rl.step.reward.mean": 0.30000000000000004, "rl.step.loss": 1e-300})]

    written = trackers.write(str(tmp_path), lines, out)

    assert written == 2
    assert [json.loads(x) for x in out.getvalue().splitlines()] == [{"step": 1}, {"step": 2}]
    assert _read(tmp_path) == {"rl.step.reward.mean": [(1, 0.1), (2, 0.30000000000000004)],
                               "rl.step.loss": [(1, -0.123456789012345), (2, 1e-300)]}


def test_write_nonFiniteValuesAsTheDriverSpellsThem_areKept(tmp_path: Path) -> None:
    trackers.write(str(tmp_path), [_line(1, {"a": "NaN", "b": "Infinity", "c": "-Infinity"})], io.StringIO())

    read = _read(tmp_path)
    assert math.isnan(read["a"][0][1])
    assert read["b"] == [(1, math.inf)]
    assert read["c"] == [(1, -math.inf)]


@pytest.mark.parametrize("line, reason", [
    ("{", "not a JSON line"),
    ("[1]", "expected a JSON object"),
    (json.dumps({"step": "1", "wall_time": 1.0, "scalars": {}}), "step: expected an integer"),
    (json.dumps({"step": 1, "wall_time": None, "scalars": {}}), "wall_time: expected seconds"),
    (json.dumps({"step": 1, "wall_time": 1.0, "scalars": []}), "scalars: expected an object"),
    (json.dumps({"step": 1, "wall_time": 1.0, "scalars": {"x": "high"}}), "scalar 'x': expected a number"),
    (json.dumps({"step": 1, "wall_time": 1.0, "scalars": {"x": True}}), "scalar 'x': expected a number"),
])
def test_parseStep_badLine_namesTheField(line: str, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        trackers.parse_step(line)


def test_main_badLine_exitsWith2AfterTheStepsBefore(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(_line(1, {"a": 1.5}) + "\nnot json\n"))

    code = trackers.main([str(tmp_path)])

    assert code == 2
    assert "not a JSON line" in capsys.readouterr().err
    assert _read(tmp_path) == {"a": [(1, 1.5)]}


def test_main_noLogdir_isAUsageError(capsys: pytest.CaptureFixture[str]) -> None:
    assert trackers.main([]) == 2
    assert "usage" in capsys.readouterr().err
