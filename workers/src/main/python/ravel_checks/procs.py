"""Processes a check starts, told apart from later ones that got their PID (pid_max is small; PIDs come back)."""

from __future__ import annotations

import socket
from pathlib import Path


def free_port() -> int:
    """A free TCP port on the loopback address."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_time(pid: int) -> str | None:
    """Field 22 of /proc/PID/stat (start time): tells a process from a later one that got its recycled PID."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


def descendants(pid: int) -> list[tuple[int, str]]:
    """Every process below ``pid`` with its start time, children first."""
    out: list[tuple[int, str]] = []
    try:
        kids = [int(k) for t in Path(f"/proc/{pid}/task").iterdir() for k in (t / "children").read_text().split()]
    except OSError:
        return out
    for k in kids:
        st = start_time(k)
        if st is not None:
            out.append((k, st))
            out.extend(descendants(k))
    return out
