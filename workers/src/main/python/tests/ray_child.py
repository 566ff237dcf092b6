"""Tests that start a local Ray run it in a child process of this interpreter (:func:`run`).

A Ray start-up failure, or a GCS that something stops, ends the driver's process (Ray's core worker exits it): in
a child, that is a failed test with the child's output and the tail of Ray's own logs, not a pytest run that ends
with no report. A Ray that cannot start is a failure, never a skip.

Processes are stopped only by their own PID, after checking that the PID still names the process that was started
(its start time, field 22 of ``/proc/PID/stat``): the child itself when it outlives its bound, and the Ray node's
processes that it recorded (:func:`record_node`) if any is still there once the child has ended (Ray's own
``ray.shutdown`` in the child stops them in the normal case).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

#: The file under the Ray temp folder where a child records its node's processes (:func:`record_node`).
PIDS = "ravel-test-pids.json"
#: Ray's own logs whose tails a failure shows, in this order.
LOGS = ("gcs_server.err", "gcs_server.out", "raylet.err", "raylet.out")


def start_time(pid: int) -> str | None:
    """The start time of process ``pid`` (field 22 of ``/proc/PID/stat``, clock ticks since boot); None if gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    # the fields after the command name (which may hold spaces) start at field 3
    return stat[stat.rindex(")") + 2:].split()[19]


def signal_if_same(pid: int, started: str | None, sig: int) -> bool:
    """Sends ``sig`` to ``pid`` only while it is still the process that started at ``started``."""
    if started is None or start_time(pid) != started:
        return False
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        return False
    return True


def record_node(ray_dir: Path) -> None:
    """In the child, after ``ray.init``: writes the PIDs and start times of this driver's Ray node processes."""
    import ray._private.worker as ray_worker

    node = ray_worker._global_node
    pids = [p.process.pid for infos in (node.all_processes if node else {}).values() for p in infos]
    (ray_dir / PIDS).write_text(json.dumps([[pid, start_time(pid)] for pid in pids]), encoding="utf-8")


def stop_leftovers(ray_dir: Path, grace_s: float = 10.0) -> list[int]:
    """Stops the recorded node processes still running (SIGTERM, then SIGKILL after ``grace_s``); their PIDs."""
    file = ray_dir / PIDS
    if not file.is_file():
        return []
    recorded = [(int(pid), started) for pid, started in json.loads(file.read_text(encoding="utf-8"))]
    left = [(pid, s) for pid, s in recorded if _running(pid, s) and signal_if_same(pid, s, signal.SIGTERM)]
    deadline = time.monotonic() + grace_s
    while any(_running(pid, s) for pid, s in left) and time.monotonic() < deadline:
        time.sleep(0.1)
    for pid, s in left:
        if _running(pid, s):
            signal_if_same(pid, s, signal.SIGKILL)
    return [pid for pid, _ in left]


def _running(pid: int, started: str | None) -> bool:
    """``pid`` is still the recorded process and not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return start_time(pid) == started and stat[stat.rindex(")") + 2] != "Z"


def ray_logs(ray_dir: Path, lines: int = 40) -> str:
    """The last ``lines`` of each of Ray's GCS and raylet logs under ``ray_dir`` (and the driver's core log)."""
    logs = ray_dir / "session_latest" / "logs"
    files = [logs / name for name in LOGS] + sorted(logs.glob("python-core-driver-*.log"))[-1:]
    parts = []
    for f in files:
        if f.is_file():
            tail = f.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:]
            parts.append(f"--- {f} (last {len(tail)} lines)\n" + "\n".join(tail))
    return "\n".join(parts) if parts else f"(no Ray log under {logs})"


def run(args: Sequence[str], *, ray_dir: Path, env: dict[str, str], cwd: Path, timeout_s: float) -> str:
    """Runs ``python args...`` (this interpreter) whose Ray uses ``ray_dir``; its output. Fails the test, with the
    child's output and Ray's logs, when the child exits non-zero or is still running after ``timeout_s``."""
    proc = subprocess.Popen([sys.executable, *args], cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    started = start_time(proc.pid)
    why: str | None = None
    try:
        out, _ = proc.communicate(timeout=timeout_s)
        if proc.returncode != 0:
            why = f"exited with status {proc.returncode}"
    except subprocess.TimeoutExpired:
        # not reaped yet, so its PID is still its own; checked against its start time all the same
        signal_if_same(proc.pid, started, signal.SIGKILL)
        out, _ = proc.communicate()
        why = f"was still running after {timeout_s:.0f} s (a hang guard) and was killed"
    finally:
        left = stop_leftovers(ray_dir)
    if why is not None:
        pytest.fail(f"the Ray child process ({' '.join(args)}) {why}.\n--- its output (last 60 lines)\n"
                    + "\n".join(out.splitlines()[-60:]) + "\n" + ray_logs(ray_dir)
                    + (f"\n(stopped its leftover Ray processes {left})" if left else ""), pytrace=False)
    assert not left, f"Ray processes {left} outlived the child's ray.shutdown()"
    return out


def child_env(home: Path, **extra: str) -> dict[str, Any]:
    """The child's environment: this one, HOME in the test's folder (whatever Ray writes under ~ stays there),
    token auth off (a local ``ray.init`` would otherwise write ~/.ray/auth_token), this folder importable."""
    env = dict(os.environ)
    tests = Path(__file__).resolve().parent
    env.update({"HOME": str(home), "RAY_AUTH_MODE": "disabled",
                "PYTHONPATH": os.pathsep.join([str(tests.parent), str(tests)] + (
                    [env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))})
    env.update(extra)
    return env
