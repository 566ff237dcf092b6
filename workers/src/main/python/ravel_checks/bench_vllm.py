"""``python -m ravel_checks.bench_vllm``: Ravel against plain clients and plain PyTorch, on real ``vllm serve``.

Issue 46's benchmarks over real vLLM (the suite's ``vllm`` part, docs/benchmarks.md), run with the Python of an
environment that has vLLM and Ravel's plugin (``scripts/setup-vllm-cpu.sh`` prints one), this folder on
``PYTHONPATH``. Two servers of one checkpoint (``--model``; a folder without ``config.json`` gets the test fixture of
``tests/hf_fixture.py`` built there at ``--hidden``/``--layers``/``--heads``) run at once, each started from a launch
command Ravel composes for ``generation.launch: vllm`` (``--launch-off``, ``--launch-traced``: the Java suite passes
``RunConfig``'s own, with ``{host}``, ``{port}``, ``{model}`` and ``{otlp_traces_endpoint}`` left for this module to
fill in, as a worker does): one without tracing (``off``), one with ``--otlp-traces-endpoint`` naming an OTLP/HTTP
receiver of this process on loopback (``traced``), which answers every export and counts the spans by name. Both are
stopped by their PIDs (checked against their start times) when the benchmark ends, whatever happens.

* **Client** (``client``): Ravel's Java client, ``OpenAiBackend`` as a run's generation worker has it (driven in a
  JVM of its own, ``--java-client``: the ``BenchVllmClient`` command line, one JSON command a line), against the
  official ``openai`` client (``AsyncOpenAI``, every request at once) on the ``off`` server, on the same requests:
  ``--prompts`` prompts ``"a+b="`` as token ids, each one request of ``n = --group-size`` choices with the same seed,
  ``--max-tokens`` tokens each (``ignore_eos``), temperature 1, top-p 1, ``logprobs: 0``, token ids as tokens and the
  weight versions asked for (the body Ravel sends). tokens/s: completion tokens over the seconds of the batch, each
  side timing its own call (the JVM's ``generate``, this process's ``gather``).
* **Refit** (``refit``): the trainer's ``publish_file`` (``PolicyTrainerImpl``'s wire method: the weights as one
  safetensors file, its SHA-256) then ``OpenAiBackend.updateWeights`` with that reference (vLLM's ``pause``,
  ``start_weight_update``, ``update_weights``, ``finish_weight_update``, ``resume`` on the ``off`` server, which reads
  and checks the file through Ravel's ``ravel-file`` backend), against a plain ``torch.save`` of the same state dict
  into a file in the same folder, ``torch.load`` and ``load_state_dict`` into a second model. GB/s: the state dict's
  bytes over a round's seconds on both sides. Each round is a new version (the trainer's version counter moved on;
  the weights moved once, before the rounds). After the rounds the server must serve the trainer's weights: its
  greedy log-prob of a prompt equals transformers' on the trainer's model to 1e-4 and ``/weight_info`` names the
  last version, and the plain receiver's digest equals the trainer's; else the benchmark fails.
* **Tracing** (``tracing``): vLLM's tokens/s on the ``traced`` server with requests whose W3C ``traceparent`` is
  sampled for a share of 0.01 (every 100th request) and of 1.0 (all), against the ``off`` server, the requests of
  the client benchmark sent by the ``openai`` client, each with a ``traceparent`` (sampled flag 0 on the ``off``
  server, as a run with engine tracing off sends it). Tracing off is a server started without an endpoint, as Ravel
  starts one when engine tracing is off; the two servers are two processes of the same command but that flag, both
  up for the whole benchmark, so every round runs all three sides back to back. The receiver must count one
  ``llm_request`` span per choice of every sampled request (vLLM exports them a few seconds later), or the benchmark
  fails.

After one unrecorded warm-up of each side, the rounds go through every order of the sides in turn (each side
first, last and after each other side equally often), each generation side after a pause of ``--settle-s``: vLLM's
CPU engine binds its threads to a core, the same core for both servers, and what one side leaves spinning there
must fall on every side alike. The report (``--json``) has every round's figures of every side; the Java suite
pairs them into ratios. Timings of a shared machine are noisy: read the ratios of one invocation, not the seconds.
"""

from __future__ import annotations

import argparse
import asyncio
import http.server
import importlib
import itertools
import json
import os
import secrets
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import IO, Any

import torch

from ravel_checks.bench_hf import build_fixture, model_config, prompt_ids, wire
from ravel_checks.procs import descendants, free_port, start_time

#: The carrier of a trainer call with no trace context (telemetry off on the trainer side).
CARRIER = json.dumps({"traceparent": "", "tracestate": "", "baggage": ""})
#: The served model's name (``{model}`` of a launch command).
MODEL_NAME = "bench"
#: The tracing shares measured: the target's and every request's.
SHARES = (0.01, 1.0)
#: What starts an answer line of the Java client (``BenchVllmClient.ANSWER``).
JAVA_ANSWER = "bench-vllm-client: "


# ---------------------------------------------------------------------------------------------- processes





def stop(proc: subprocess.Popen[bytes], started: str | None, grace_s: float = 60) -> None:
    """SIGTERM to ``proc`` if its PID is still the process started (its start time), then SIGKILL to it and to any
    process of its tree that outlived it, each by its PID checked against its start time."""
    kids = descendants(proc.pid)
    if proc.poll() is None and start_time(proc.pid) == started:
        proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        if start_time(proc.pid) == started:
            proc.kill()
        proc.wait(timeout=60)
    for pid, st in kids:
        if start_time(pid) == st:
            os.kill(pid, signal.SIGKILL)


def fill(template: str, port: int, otlp_endpoint: str) -> list[str]:
    """A launch command of ``RunConfig`` as a worker fills it in: split on spaces (no shell), ``{host}``, ``{port}``,
    ``{model}`` and ``{otlp_traces_endpoint}`` replaced."""
    return [p.replace("{port}", str(port)).replace("{host}", "127.0.0.1").replace("{model}", MODEL_NAME)
            .replace("{otlp_traces_endpoint}", otlp_endpoint) for p in template.split()]


class Server:
    """One ``vllm serve`` from a launch command, its output in ``log``."""

    def __init__(self, name: str, template: str, log: Path, otlp_endpoint: str = "") -> None:
        if "{otlp_traces_endpoint}" in template and not otlp_endpoint:
            raise ValueError(f"the {name} server's launch command asks for an OTLP endpoint: {template}")
        self.name = name
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = log
        self.cmd = fill(template, self.port, otlp_endpoint)
        # the environment this process has, less any OTLP setting it inherited (vLLM would read those) and the
        # path this benchmark's package is imported from
        env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_") and k != "PYTHONPATH"}
        env.update({"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "VLLM_NO_USAGE_STATS": "1",
                    "DO_NOT_TRACK": "1"})
        self._out: IO[bytes] = log.open("wb")
        self.proc = subprocess.Popen(self.cmd, stdout=self._out, stderr=subprocess.STDOUT, env=env,
                                     start_new_session=True)
        self.started = start_time(self.proc.pid)

    def wait_healthy(self, deadline: float) -> None:
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the {self.name} vllm serve exited with {self.proc.returncode}; log {self.log}:\n"
                                   f"{self.tail()}")
            try:
                with urllib.request.urlopen(self.url + "/health", timeout=5) as r:
                    if r.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(1)
        raise RuntimeError(f"the {self.name} vllm serve was not healthy in time; log {self.log}:\n{self.tail()}")

    def tail(self, n: int = 40) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-n:])

    def post(self, path: str, body: Any = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + path, data=data, method="POST" if data is not None else "GET",
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=600) as r:
            return json.loads(r.read() or b"null")

    def stop(self) -> None:
        try:
            stop(self.proc, self.started)
        finally:
            self._out.close()


class OtlpSink(http.server.ThreadingHTTPServer):
    """An OTLP/HTTP traces receiver on loopback: answers every ``POST /v1/traces`` (protobuf) with an empty
    ``ExportTraceServiceResponse`` and counts the spans it received by name."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _OtlpHandler)
        self.daemon_threads = True
        self.spans: Counter[str] = Counter()
        self.requests = 0
        self.lock = threading.Lock()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1/traces"


class _OtlpHandler(http.server.BaseHTTPRequestHandler):
    server: OtlpSink

    def do_POST(self) -> None:  # noqa: N802 (the standard library's name)
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceRequest,
            ExportTraceServiceResponse,
        )

        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path != "/v1/traces":
            self.send_error(404)
            return
        req = ExportTraceServiceRequest()
        req.ParseFromString(body)
        names = [s.name for rs in req.resource_spans for ss in rs.scope_spans for s in ss.spans]
        with self.server.lock:
            self.server.requests += 1
            self.server.spans.update(names)
        answer = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the standard library's name)
        pass


class JavaClient:
    """``BenchVllmClient`` in a JVM of its own: one JSON command a line in, one answer line out."""

    def __init__(self, argv: list[str], log: Path) -> None:
        self._err: IO[bytes] = log.open("wb")
        self.log = log
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._err,
                                     start_new_session=True)
        self.started = start_time(self.proc.pid)

    def ask(self, command: dict[str, Any]) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write((json.dumps(command) + "\n").encode())
        self.proc.stdin.flush()
        while True:
            line = self.proc.stdout.readline().decode()
            if not line:
                raise RuntimeError(f"the Java client ended (exit {self.proc.poll()}); log {self.log}")
            if line.startswith(JAVA_ANSWER):
                answer: dict[str, Any] = json.loads(line[len(JAVA_ANSWER):])
                if "error" in answer:
                    raise RuntimeError(f"the Java client failed {command['op']}: {answer['error']}; log {self.log}")
                return answer

    def close(self) -> None:
        try:
            if self.proc.poll() is None and self.proc.stdin is not None:
                try:
                    self.proc.stdin.write(b'{"op": "quit"}\n')
                    self.proc.stdin.close()
                except OSError:
                    pass
            stop(self.proc, self.started, grace_s=30)
        finally:
            self._err.close()


# ---------------------------------------------------------------------------------------------- requests


def traceparent(sampled: bool) -> str:
    return f"00-{secrets.token_hex(16)}-{secrets.token_hex(8)}-{'01' if sampled else '00'}"


def sampled_by_share(index: int, share: float) -> bool:
    """Whether the ``index``-th request (from 0) is sampled at ``share``: exactly ``share`` of any run of requests
    from the first, evenly spread (every 100th at 0.01)."""
    return int((index + 1) * share) > int(index * share)


class Workload:
    """The requests of one batch: the same on every side (prompts, ``n``, tokens, seeds, sampling, body)."""

    def __init__(self, prompts: list[list[int]], n: int, max_tokens: int, seed: int) -> None:
        self.prompts = prompts
        self.n = n
        self.max_tokens = max_tokens
        self.seed = seed

    def seed_of(self, prompt: int) -> int:
        # a group's choice k is seeded seed + k by the server: groups apart by n
        return self.seed + prompt * self.n

    def java(self, url: str, request_id: str) -> dict[str, Any]:
        return {"op": "generate", "url": url, "model": MODEL_NAME, "prompts": self.prompts, "n": self.n,
                "max_tokens": self.max_tokens, "seed": self.seed, "temperature": 1.0, "top_p": 1.0,
                "ignore_eos": True, "id": request_id}


class OpenAiSide:
    """The official ``openai`` client (``AsyncOpenAI``) on one event loop, one client per server."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.clients: dict[str, Any] = {}

    def client(self, url: str) -> Any:
        if url not in self.clients:
            # the official client, installed beside vLLM (not in the Ray virtualenv this package is checked in)
            openai = importlib.import_module("openai")

            async def make() -> Any:
                return openai.AsyncOpenAI(base_url=url + "/v1", api_key="unused", max_retries=0, timeout=600.0)

            self.clients[url] = self.loop.run_until_complete(make())
        return self.clients[url]

    def generate(self, url: str, w: Workload, request_id: str, sampled: Callable[[int], bool]) -> tuple[int, float]:
        """Every request of ``w`` at once; the completion tokens and the seconds of the whole batch. Request ``i``
        carries a ``traceparent`` sampled when ``sampled(i)``."""
        client = self.client(url)

        async def batch() -> tuple[int, float]:
            calls = [client.completions.create(
                model=MODEL_NAME, prompt=p, n=w.n, max_tokens=w.max_tokens, temperature=1.0, top_p=1.0,
                seed=w.seed_of(i), logprobs=0, stream=False,
                extra_body={"ignore_eos": True, "return_tokens_as_token_ids": True, "return_weight_versions": True},
                extra_headers={"X-Request-Id": f"{request_id}-p{i}", "traceparent": traceparent(sampled(i))})
                for i, p in enumerate(w.prompts)]
            t0 = time.perf_counter()
            answers = await asyncio.gather(*calls)
            seconds = time.perf_counter() - t0
            return sum(int(a.usage.completion_tokens) for a in answers), seconds

        return self.loop.run_until_complete(batch())

    def close(self) -> None:
        for c in self.clients.values():
            self.loop.run_until_complete(c.close())
        self.loop.close()


def rotations(sides: list[str], rounds: int) -> Iterator[tuple[int, list[str]]]:
    """Round -1 (the unrecorded warm-up, in ``sides``' order) then ``rounds`` rounds going through every order of
    ``sides`` in turn, so that each side comes first, last and after each other side equally often (A, B then B, A
    for two sides): what the side before leaves behind (a server's threads still spinning on a shared core, a cache)
    falls on each side alike."""
    orders = [list(o) for o in itertools.permutations(sides)]
    for r in range(-1, rounds):
        yield r, list(sides) if r < 0 else orders[r % len(orders)]


def settle(seconds: float) -> None:
    """Lets the machine go quiet before a side starts (the last side's server threads stop spinning)."""
    if seconds > 0:
        time.sleep(seconds)


# ---------------------------------------------------------------------------------------------- the benchmarks


def client_rounds(java: JavaClient, openai: OpenAiSide, off: Server, w: Workload, rounds: int,
                  settle_s: float) -> dict[str, Any]:
    rows = []
    for r, order in rotations(["ravel", "openai"], rounds):
        got: dict[str, tuple[int, float]] = {}
        for side in order:
            settle(settle_s)
            if side == "ravel":
                a = java.ask(w.java(off.url, f"java-r{r}"))
                if a["errors"]:
                    raise RuntimeError(f"Ravel's client: {a['errors']} requests failed: {a['first_error']}")
                got[side] = (int(a["tokens"]), float(a["seconds"]))
            else:
                got[side] = openai.generate(off.url, w, f"openai-r{r}", lambda _: False)
        if got["ravel"][0] != got["openai"][0]:
            raise RuntimeError(f"round {r}: Ravel's client got {got['ravel'][0]} tokens, the openai client"
                               f" {got['openai'][0]}, for the same requests")
        if r >= 0:
            rows.append({"tokens": got["ravel"][0], "ravel_s": got["ravel"][1], "openai_s": got["openai"][1],
                         "ravel_tokens_per_s": got["ravel"][0] / got["ravel"][1],
                         "openai_tokens_per_s": got["openai"][0] / got["openai"][1], "order": order})
    return {"rounds": rows}


def tracing_rounds(openai: OpenAiSide, off: Server, traced: Server, sink: OtlpSink, w: Workload,
                   rounds: int, wait_s: float, settle_s: float) -> dict[str, Any]:
    sides = ["off"] + [f"share_{s}" for s in SHARES]
    counters = {s: 0 for s in SHARES}  # requests sent at each share, warm-up included
    sampled = {s: 0 for s in SHARES}  # of which sampled
    with sink.lock:
        before = sink.spans["llm_request"]
    rows = []
    for r, order in rotations(sides, rounds):
        row: dict[str, Any] = {"order": order}
        for side in order:
            settle(settle_s)
            if side == "off":
                tokens, seconds = openai.generate(off.url, w, f"off-r{r}", lambda _: False)
            else:
                share = float(side.removeprefix("share_"))
                base = counters[share]
                picked = [sampled_by_share(base + i, share) for i in range(len(w.prompts))]
                counters[share] += len(w.prompts)
                sampled[share] += sum(picked)
                tokens, seconds = openai.generate(traced.url, w, f"{side}-r{r}", picked.__getitem__)
            row[f"{side}_tokens"] = tokens
            row[f"{side}_s"] = seconds
            row[f"{side}_tokens_per_s"] = tokens / seconds
        if r >= 0:
            rows.append(row)
    # vLLM's span processor exports in batches every few seconds: wait for one span per sampled choice
    sampled_requests = sum(sampled.values())
    expected = sampled_requests * w.n
    deadline = time.monotonic() + wait_s
    while True:
        with sink.lock:
            received = sink.spans["llm_request"] - before
        if received >= expected or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    if received != expected:
        raise RuntimeError(f"the traced server exported {received} llm_request spans for {sampled_requests} sampled"
                           f" requests of {w.n} choices ({expected} expected) in {wait_s:.0f} s")
    with sink.lock:
        by_name = dict(sink.spans)
        exports = sink.requests
    return {"rounds": rows, "requests_sent": {str(s): counters[s] for s in SHARES},
            "sampled_requests": {str(s): sampled[s] for s in SHARES}, "llm_request_spans": received,
            "spans_received": by_name, "export_requests": exports}


def refit_rounds(java: JavaClient, off: Server, trainer: Any, receiver: torch.nn.Module, folder: Path,
                 rounds: int) -> dict[str, Any]:
    publish = wire(trainer.publish_file)
    state = trainer.model.state_dict()
    nbytes = sum(t.numel() * t.element_size() for t in state.values())
    plain_file = folder / "plain-state-dict.pt"
    version = trainer.version
    rows = []

    def ravel() -> tuple[float, float]:
        nonlocal version
        version += 1
        trainer.version = version  # a new version: publish_file writes the file again, as after a training step
        t0 = time.perf_counter()
        # the wire answer is the JSON of the method's answer, itself the reference's JSON (what Java parses)
        ref = json.loads(json.loads(publish(CARRIER, json.dumps([str(folder)]))))
        published = time.perf_counter() - t0
        a = java.ask({"op": "refit", "url": off.url, "model": MODEL_NAME, **ref})
        return published, float(a["seconds"])

    def plain() -> float:
        t0 = time.perf_counter()
        torch.save(trainer.model.state_dict(), plain_file)
        loaded = torch.load(plain_file, map_location="cpu", weights_only=True)
        receiver.load_state_dict(loaded, strict=True)
        return time.perf_counter() - t0

    for r, order in rotations(["ravel", "plain"], rounds):
        published = load = plain_s = 0.0
        for side in order:
            if side == "ravel":
                published, load = ravel()
            else:
                plain_s = plain()
        if r >= 0:
            ravel_s = published + load
            rows.append({"ravel_s": ravel_s, "publish_s": published, "load_s": load, "plain_s": plain_s,
                         "ravel_gb_per_s": nbytes / ravel_s / 1e9, "plain_gb_per_s": nbytes / plain_s / 1e9,
                         "order": order})
    plain_file.unlink(missing_ok=True)
    return {"rounds": rows, "bytes": nbytes, "last_version": version}


def check_refit(off: Server, trainer: Any, receiver: torch.nn.Module, prompt: list[int],
                version: int) -> dict[str, Any]:
    """The weights both sides sent arrived: the server's greedy log-prob of ``prompt`` is transformers' on the
    trainer's model, ``/weight_info`` names ``version``, the plain receiver's digest is the trainer's."""
    from ravel_workers import policy

    with torch.no_grad():
        logits = trainer.model(torch.tensor([prompt])).logits[0, -1].double()
    logp = torch.log_softmax(logits, dim=-1)
    token = int(torch.argmax(logp))
    answer = off.post("/v1/completions", {"model": MODEL_NAME, "prompt": prompt, "max_tokens": 1, "temperature": 0,
                                          "logprobs": 0, "return_tokens_as_token_ids": True})
    lp = answer["choices"][0]["logprobs"]
    served_token = int(lp["tokens"][0].removeprefix("token_id:"))
    served = float(lp["token_logprobs"][0])
    info = off.post("/weight_info")
    out = {"trainer_logprob": float(logp[token]), "served_logprob": served, "token": token,
           "served_token": served_token, "weight_version": info.get("weight_version"),
           "trainer_sha256": policy.weights_sha256(trainer.model), "plain_sha256": policy.weights_sha256(receiver)}
    if served_token != token or abs(served - float(logp[token])) > 1e-4:
        raise RuntimeError(f"after the refits the server does not serve the trainer's weights: {out}")
    if str(out["weight_version"]) != str(version):
        raise RuntimeError(f"after the refits the server's weight version is {out['weight_version']}, not {version}")
    if out["trainer_sha256"] != out["plain_sha256"]:
        raise RuntimeError(f"the plain receiver does not hold the trainer's weights: {out}")
    return out


def run(a: argparse.Namespace) -> dict[str, Any]:
    import transformers

    from ravel_workers import hf
    from ravel_workers.actors import PolicyTrainerImpl
    from ravel_workers.telemetry import ProcessTelemetry
    from ravel_workers.wire import GrpoSettings

    transformers.utils.logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    torch.set_num_threads(a.threads)
    model_dir = Path(a.model).absolute()
    if not (model_dir / "config.json").is_file():
        build_fixture(model_dir, a.hidden, a.layers, a.heads)
    work = Path(a.work_dir or tempfile.mkdtemp(prefix="ravel-bench-vllm-")).absolute()
    work.mkdir(parents=True, exist_ok=True)
    tokenizer = hf.load_tokenizer(str(model_dir))
    w = Workload(prompt_ids(tokenizer, a.prompts), a.group_size, a.max_tokens, a.seed)
    t_start = time.monotonic()
    with ExitStack() as stack:
        sink = OtlpSink()
        threading.Thread(target=sink.serve_forever, name="otlp-sink", daemon=True).start()
        stack.callback(sink.server_close)
        stack.callback(sink.shutdown)
        off = Server("off", a.launch_off, work / "vllm-off.log")
        stack.callback(off.stop)
        traced = Server("traced", a.launch_traced, work / "vllm-traced.log", sink.endpoint)
        stack.callback(traced.stop)
        # while the servers start: the trainer (the checkpoint's policy) and the plain receiver
        model = model_config(str(model_dir), "float32")
        trainer = PolicyTrainerImpl({"model": model, "seed": a.seed, "device": "cpu",
                                     "grpo": GrpoSettings(group_size=a.group_size).to_wire()},
                                    telemetry=ProcessTelemetry.disabled("policy_trainer"))
        receiver = transformers.AutoModelForCausalLM.from_pretrained(str(model_dir), dtype=torch.float32)
        deadline = time.monotonic() + a.launch_timeout_s
        off.wait_healthy(deadline)
        traced.wait_healthy(deadline)
        started_s = time.monotonic() - t_start
        java = JavaClient(json.loads(Path(a.java_client).read_text()), work / "java-client.log")
        stack.callback(java.close)
        openai = OpenAiSide()
        stack.callback(openai.close)
        print(f"servers healthy after {started_s:.0f} s; tracing rounds", file=sys.stderr, flush=True)
        tracing = tracing_rounds(openai, off, traced, sink, w, a.rounds, a.span_wait_s, a.settle_s)
        print("client rounds", file=sys.stderr, flush=True)
        client = client_rounds(java, openai, off, w, a.rounds, a.settle_s)
        # new weights, once: every parameter moved (the tied embedding, so the head, included)
        g = torch.Generator().manual_seed(a.seed + 4)
        with torch.no_grad():
            for p in trainer.model.parameters():
                p.add_(torch.randn(p.shape, generator=g) * 0.05)
        print("refit rounds", file=sys.stderr, flush=True)
        refit = refit_rounds(java, off, trainer, receiver, work / "weights", a.refit_rounds)
        refit["check"] = check_refit(off, trainer, receiver, w.prompts[0], refit["last_version"])
        params = sum(p.numel() for p in trainer.model.parameters())
    return {
        "client": client, "refit": refit, "tracing": tracing,
        "settings": {"model": str(model_dir), "parameters": params, "prompts": a.prompts, "group_size": a.group_size,
                     "max_tokens": a.max_tokens, "rounds": a.rounds, "refit_rounds": a.refit_rounds,
                     "seed": a.seed, "settle_s": a.settle_s, "launch_off": fill(a.launch_off, 0, ""),
                     "launch_traced": fill(a.launch_traced, 0, "{otlp_traces_endpoint}"),
                     "servers_healthy_s": started_s},
        "versions": {"python": sys.version.split()[0], "torch": torch.__version__,
                     "transformers": transformers.__version__, "vllm": _version("vllm"),
                     "openai": _version("openai")},
    }


def _version(dist: str) -> str:
    import importlib.metadata as md

    try:
        return md.version(dist)
    except md.PackageNotFoundError:
        return ""


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m ravel_checks.bench_vllm", description=__doc__.splitlines()[0])
    p.add_argument("--model", required=True, help="a Hugging Face checkpoint folder; one without config.json gets"
                   " the test fixture built there (--hidden, --layers, --heads)")
    p.add_argument("--hidden", type=int, default=512, help="the built fixture's width (default 512)")
    p.add_argument("--layers", type=int, default=4, help="the built fixture's layers (default 4)")
    p.add_argument("--heads", type=int, default=8, help="the built fixture's heads (default 8: heads of 64, a size"
                   " vLLM's CPU attention takes)")
    p.add_argument("--launch-off", required=True, help="RunConfig's vLLM launch command with engine tracing off")
    p.add_argument("--launch-traced", required=True, help="RunConfig's vLLM launch command with engine tracing on"
                   " ({otlp_traces_endpoint} in it)")
    p.add_argument("--java-client", required=True, help="a JSON file holding the BenchVllmClient command line")
    p.add_argument("--prompts", type=int, default=16, help="prompts per batch (default 16)")
    p.add_argument("--group-size", type=int, default=8, help="choices per prompt, n (default 8)")
    p.add_argument("--max-tokens", type=int, default=16, help="tokens per choice, all of them (default 16)")
    p.add_argument("--rounds", type=int, default=5, help="measured rounds of client and tracing (default 5)")
    p.add_argument("--refit-rounds", type=int, default=6, help="measured rounds of the refit (default 6)")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--threads", type=int, default=2, help="torch.set_num_threads of this process (default 2)")
    p.add_argument("--launch-timeout-s", type=float, default=900, help="for both servers to answer /health")
    p.add_argument("--settle-s", type=float, default=0.5, help="a pause before each generation side (default 0.5)")
    p.add_argument("--span-wait-s", type=float, default=30, help="for vLLM's spans to arrive after the rounds")
    p.add_argument("--work-dir", default="", help="where the servers' logs and the weight files go (default: a"
                   " temporary folder)")
    p.add_argument("--json", default="", help="also write the report to this file")
    a = p.parse_args(argv)
    if a.rounds < 1 or a.refit_rounds < 1 or a.prompts < 1 or a.group_size < 1 or a.max_tokens < 1:
        p.error("--rounds, --refit-rounds, --prompts, --group-size and --max-tokens must be at least 1")
    if not Path(a.java_client).is_file():
        p.error(f"--java-client: no such file {a.java_client}")
    report = run(a)
    text = json.dumps(report, indent=2)
    if a.json:
        Path(a.json).write_text(text + "\n", encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
