"""The ``tensorboard`` tracker's writer: a process of its own that the Java driver starts for a run with
``telemetry.trackers: [tensorboard]`` (``python -m ravel_workers.trackers LOGDIR``) and feeds one JSON line per step
on standard input (the names are the Java driver's, its ``TrackerMetrics``; this writer takes any)::

    {"step": 3, "wall_time": 1733390000.5, "scalars": {"<metric name>": 0.25, ...}}

Each step's scalars go to TensorBoard event files under ``LOGDIR`` through TensorBoard's own writer
(``EventFileWriter``), as float64 scalar tensors of the scalars plugin (the values of ``steps.jsonl``, not rounded to
float32), flushed before the step is acknowledged with one line ``{"step": 3}`` on standard output. A line that is
not a step fails the process (exit 2, the reason on standard error); end of input closes the file (exit 0).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Mapping
from typing import IO, Any

PLUGIN = "scalars"


def _number(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError(f"scalar {name!r}: expected a number, got {value!r}")
    if isinstance(value, str):  # only "NaN", "Infinity" and "-Infinity", as the driver's JSON writes them
        if value not in ("NaN", "Infinity", "-Infinity"):
            raise ValueError(f"scalar {name!r}: expected a number, got {value!r}")
        return float(value)
    return float(value)


def parse_step(line: str) -> tuple[int, float, dict[str, float]]:
    """One input line: the step number, its wall time in seconds and its scalars by tag."""
    try:
        doc = json.loads(line)
    except json.JSONDecodeError as e:
        raise ValueError(f"not a JSON line: {e.msg}") from None
    if not isinstance(doc, Mapping):
        raise ValueError("not a step: expected a JSON object")
    step, wall, scalars = doc.get("step"), doc.get("wall_time"), doc.get("scalars")
    if isinstance(step, bool) or not isinstance(step, int):
        raise ValueError(f"step: expected an integer, got {step!r}")
    if isinstance(wall, bool) or not isinstance(wall, int | float):
        raise ValueError(f"wall_time: expected seconds, got {wall!r}")
    if not isinstance(scalars, Mapping):
        raise ValueError("scalars: expected an object of tag to number")
    return step, float(wall), {str(k): _number(str(k), v) for k, v in scalars.items()}


def _event(step: int, wall_time: float, scalars: Mapping[str, float]) -> Any:
    from tensorboard.compat.proto import event_pb2, summary_pb2, tensor_pb2, tensor_shape_pb2, types_pb2

    metadata = summary_pb2.SummaryMetadata(plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name=PLUGIN))
    values = [
        summary_pb2.Summary.Value(
            tag=tag, metadata=metadata,
            tensor=tensor_pb2.TensorProto(dtype=types_pb2.DT_DOUBLE, tensor_shape=tensor_shape_pb2.TensorShapeProto(),
                                          double_val=[v]))
        for tag, v in scalars.items()
    ]
    return event_pb2.Event(wall_time=wall_time, step=step, summary=summary_pb2.Summary(value=values))


def write(logdir: str, lines: Iterable[str], out: IO[str]) -> int:
    """Writes each step of ``lines`` under ``logdir``, acknowledging each on ``out``; returns the steps written."""
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    writer = EventFileWriter(logdir)
    written = 0
    try:
        for line in lines:
            if not line.strip():
                continue
            step, wall_time, scalars = parse_step(line)
            writer.add_event(_event(step, wall_time, scalars))
            writer.flush()
            written += 1
            out.write(json.dumps({"step": step}) + "\n")
            out.flush()
    finally:
        writer.close()
    return written


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m ravel_workers.trackers LOGDIR (steps as JSON lines on standard input)",
              file=sys.stderr)
        return 2
    try:
        write(argv[0], sys.stdin, sys.stdout)
    except ValueError as e:
        print(f"ravel_workers.trackers: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
