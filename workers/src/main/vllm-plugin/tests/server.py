"""A real ``vllm serve`` for the tests: started with the venv's own CLI on a loopback port, stopped by its PID."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_time(pid: int) -> str | None:
    """Field 22 of /proc/PID/stat, to tell a process from a later one with its recycled PID."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


def descendants(pid: int) -> list[tuple[int, str]]:
    """Every process below ``pid`` with its start time, children first."""
    out: list[tuple[int, str]] = []
    try:
        kids = [int(k) for t in Path(f"/proc/{pid}/task").iterdir()
                for k in (t / "children").read_text().split()]
    except OSError:
        return out
    for k in kids:
        st = start_time(k)
        if st is not None:
            out.append((k, st))
            out.extend(descendants(k))
    return out


class VllmServer:
    """``vllm serve MODEL`` on 127.0.0.1 with Ravel's weight-transfer backend, its output in ``log``.

    The model runs in the engine core's process (``VLLM_ENABLE_V1_MULTIPROCESSING=0``, vLLM's layout on one GPU):
    on a CPU vLLM otherwise starts a worker process of its own for it, about a third of a start-up here. The backend
    is the same either way (vLLM's plugin system loads it in the process that holds the model); GrpoVllmIT runs it
    in that worker process, as ``generation.launch: vllm`` starts vLLM on a CPU."""

    def __init__(self, model: Path, log: Path, extra: list[str] | None = None,
                 env: dict[str, str] | None = None) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = log
        cli = Path(sys.executable).parent / "vllm"
        cmd = [str(cli), "serve", str(model), "--host", "127.0.0.1", "--port", str(self.port),
               "--served-model-name", "tiny", "--dtype", "float32", "--max-model-len", "64", "--enforce-eager",
               "--max-num-seqs", "8", *(extra or [])]
        e = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
        e.update({"VLLM_TARGET_DEVICE": "cpu", "VLLM_SERVER_DEV_MODE": "1", "VLLM_CPU_KVCACHE_SPACE": "1",
                  "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "VLLM_NO_USAGE_STATS": "1",
                  "DO_NOT_TRACK": "1", "VLLM_ENABLE_V1_MULTIPROCESSING": "0"})
        e.update(env or {})
        self._out = log.open("wb")
        self.proc = subprocess.Popen(cmd, stdout=self._out, stderr=subprocess.STDOUT, env=e,
                                     start_new_session=True)
        self.started = start_time(self.proc.pid)

    def wait_healthy(self, timeout_s: float = 900) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"vllm serve exited with {self.proc.returncode}:\n{self.tail()}")
            try:
                with urllib.request.urlopen(self.url + "/health", timeout=5) as r:
                    if r.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(1)
        raise AssertionError(f"vllm serve not healthy after {timeout_s} s:\n{self.tail()}")

    def tail(self, n: int = 60) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-n:])

    def call(self, method: str, path: str, body: Any = None, timeout_s: float = 600) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=timeout_s) as r:
                return r.status, json.loads(r.read() or b"null")
        except urllib.error.HTTPError as e:
            text = e.read().decode(errors="replace")
            try:
                return e.code, json.loads(text)
            except ValueError:
                return e.code, text

    def ok(self, method: str, path: str, body: Any = None) -> Any:
        status, answer = self.call(method, path, body)
        assert status == 200, f"{method} {path}: HTTP {status}: {answer}\n{self.tail(30)}"
        return answer

    def stop(self) -> None:
        """SIGTERM to the server by its PID (checked), then whatever of its processes outlived it, by theirs."""
        kids = descendants(self.proc.pid)
        if self.proc.poll() is None and start_time(self.proc.pid) == self.started:
            self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            if start_time(self.proc.pid) == self.started:
                self.proc.kill()
            self.proc.wait(timeout=60)
        for pid, st in kids:
            if start_time(pid) == st:
                os.kill(pid, signal.SIGKILL)
        self._out.close()
