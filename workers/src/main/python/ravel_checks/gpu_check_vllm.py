"""``python -m ravel_checks.gpu_check_vllm``: GRPO steps against one real ``vllm serve`` with Ravel's weight transfer.

The body of ``scripts/gpu-check.sh --vllm VLLM``. In vLLM's own Python environment (torch, transformers,
OpenTelemetry and vLLM; Ravel's plugin installed into it: ``pip install workers/src/main/vllm-plugin``) with this
folder on the path, it

1. writes the tied-embedding Hugging Face fixture (``tests/hf_fixture.py``: a character tokenizer and a random
   Qwen2) to disk, or takes ``--model DIR``;
2. starts ONE ``vllm serve`` of it on 127.0.0.1 as Ravel's ``launch: vllm`` composes it
   (``VLLM_SERVER_DEV_MODE=1``, ``--weight-transfer-config '{"backend":"ravel-file"}'``,
   ``--logprobs-mode processed_logprobs``, ``--generation-config vllm``, the seed and dtype; on a CPU
   ``VLLM_TARGET_DEVICE=cpu``, ``VLLM_CPU_KVCACHE_SPACE`` and ``--enforce-eager``);
3. runs ``--steps`` GRPO steps: each prompt's group sampled by the server over HTTP (one ``/v1/completions``
   request of ``n`` samples per prompt, seeded, with the sampled tokens' log-probs, as Ravel's Java client sends
   it), rewarded, trained by Ravel's Python trainer (:class:`~ravel_workers.actors.PolicyTrainerImpl`, the GRPO
   loss of :mod:`ravel_workers.grpo`) on ``--device``, published with its ``publish_file``
   (``weights-v<N>.safetensors``) and loaded by the server through vLLM's routes in vLLM's order;
4. stops the server by its PID (its start time checked first) whatever happened.

What it checks, each a line ``FAIL ...`` and a non-zero exit when it does not hold:

- after every refit (and on the initial weights) the server's greedy token for a fixed prompt is transformers'
  greedy token on the trainer's weights (within the tolerance) and its log-prob equals transformers' within
  the tolerance;
- the sampled tokens' log-probs the server returned equal the trainer's on the same weights within the tolerance;
- every route answers 200 in order, ``/is_paused`` says so between ``/pause`` and ``/resume``, and
  ``/weight_info`` names the version just loaded;
- at least one refit moved the fixed prompt's log-prob by more than three times the tolerance (so a server that
  kept its old weights would have failed the first check).

Tolerance (absolute, on natural-log probabilities): 1e-4 in float32 on a CPU (the plugin test's), 5e-3 in
float32 on CUDA (vLLM's kernels may use TF32), 5e-2 in bfloat16/float16; ``--atol`` overrides it.

There is no NCCL transport: on CUDA too the weights move as a safetensors file on the server's node
(Ravel's ``ravel-file`` backend), which synchronises the GPU after loading.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import importlib.util
import json
import os
import random
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType, ModuleType
from typing import Any

import torch

from ravel_checks.procs import descendants, free_port, start_time

#: The weight-transfer backend of Ravel's plugin (``ravel_vllm.plugin.BACKEND``) and its entry point.
BACKEND = "ravel-file"
PLUGIN_ENTRY_POINT = "ravel_vllm.plugin:register"
PLUGIN_GROUP = "vllm.general_plugins"
INSTALL_HINT = "pip install workers/src/main/vllm-plugin (into the Python environment that runs vllm serve)"
#: One refit, in vLLM's order (the plugin's docstring; Ravel's Java client takes the same routes).
REFIT_ROUTES = ("/pause?mode=wait", "/start_weight_update", "/update_weights", "/finish_weight_update", "/resume")
INIT_ROUTE = "/init_weight_transfer_engine"
#: The prompt whose greedy log-prob is compared after every refit.
PROMPT = "3+4="
SERVED_NAME = "ravel-gpu-check"
FIXTURE = Path(__file__).resolve().parents[1] / "tests" / "hf_fixture.py"


class CheckError(Exception):
    """A check that cannot go on (a server that does not start, a route that fails); the message says why."""


def tolerance(device: str, dtype: str) -> float:
    """The absolute log-prob tolerance of the module docstring."""
    if dtype in ("bfloat16", "float16"):
        return 5e-2
    return 1e-4 if device == "cpu" else 5e-3


# ------------------------------------------------------------------------------------------------ the server




def serve_command(vllm: Sequence[str], model: Path, port: int, device: str, dtype: str, seed: int,
                  max_model_len: int, extra: Sequence[str] = ()) -> tuple[list[str], dict[str, str]]:
    """The ``vllm serve`` command and its added environment, as Ravel's ``launch: vllm`` composes them
    (``RunConfig.vllmLaunchCommand``), with a served name, a short context and, on CUDA, a share of the GPU the
    trainer leaves free."""
    env = {"VLLM_SERVER_DEV_MODE": "1", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1", "TOKENIZERS_PARALLELISM": "false"}
    cmd = [*vllm, "serve", str(model), "--host", "127.0.0.1", "--port", str(port), "--served-model-name",
           SERVED_NAME, "--dtype", dtype, "--seed", str(seed), "--weight-transfer-config",
           json.dumps({"backend": BACKEND}), "--logprobs-mode", "processed_logprobs", "--generation-config", "vllm",
           "--max-model-len", str(max_model_len), "--enforce-eager"]
    if device == "cpu":
        env.update({"VLLM_TARGET_DEVICE": "cpu", "VLLM_CPU_KVCACHE_SPACE": "1"})
    else:
        if ":" in device:
            env["CUDA_VISIBLE_DEVICES"] = device.split(":", 1)[1]
        cmd += ["--gpu-memory-utilization", "0.3"]  # the trainer shares the GPU
    return cmd + list(extra), env


def plugin_installed(vllm: Sequence[str]) -> tuple[bool | None, str]:
    """Whether Ravel's plugin is installed where ``vllm`` runs: asked of the Python beside the ``vllm`` executable
    (a virtualenv's ``bin/``), else of this interpreter when it has vLLM. ``None`` when neither can tell."""
    probe = ("import importlib.metadata as m, json; "
             f"print(json.dumps([e.value for e in m.entry_points(group={PLUGIN_GROUP!r})]))")
    exe = shutil.which(vllm[0]) if vllm else None
    pythons: list[str] = []
    if exe is not None:
        sibling = Path(exe).parent / "python"
        if sibling.is_file():
            pythons.append(str(sibling))
    if importlib.util.find_spec("vllm") is not None:
        pythons.append(sys.executable)
    for py in pythons:
        try:
            out = subprocess.run([py, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
            found = json.loads(out.stdout.strip().splitlines()[-1])
        except (OSError, subprocess.SubprocessError, ValueError, IndexError):
            continue
        return PLUGIN_ENTRY_POINT in found, py
    return None, ""


class Server:
    """An OpenAI-compatible vLLM server at ``url``; every route taken is recorded in ``routes``."""

    def __init__(self, url: str, model_name: str) -> None:
        self.url = url
        self.model_name = model_name
        self.routes: list[str] = []

    def call(self, method: str, path: str, body: Any = None, timeout_s: float = 300) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=timeout_s) as r:
                return int(r.status), json.loads(r.read() or b"null")
        except urllib.error.HTTPError as e:
            text = e.read().decode(errors="replace")
            try:
                return int(e.code), json.loads(text)
            except ValueError:
                return int(e.code), text

    def ok(self, method: str, path: str, body: Any = None) -> Any:
        status, answer = self.call(method, path, body)
        if method == "POST":
            self.routes.append(path)
        if status != 200:
            raise CheckError(f"{method} {path}: HTTP {status}: {str(answer)[:500]}")
        return answer

    def log_tail(self) -> str:
        return ""


class LaunchedServer(Server):
    """``vllm serve`` started here in a session of its own, its output in ``log``; :meth:`stop` ends it by PID."""

    def __init__(self, cmd: list[str], env: dict[str, str], port: int, log: Path) -> None:
        super().__init__(f"http://127.0.0.1:{port}", SERVED_NAME)
        self.log = log
        full = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
        full.update(env)
        self._out = log.open("wb")
        self.proc = subprocess.Popen(cmd, stdout=self._out, stderr=subprocess.STDOUT, env=full,
                                     start_new_session=True)
        self.started = start_time(self.proc.pid)

    def wait_healthy(self, timeout_s: float) -> float:
        """Seconds until ``/health`` answered 200; a :class:`CheckError` with the log's tail if the server exits
        or ``timeout_s`` passes first."""
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout_s:
            if self.proc.poll() is not None:
                raise CheckError(f"vllm serve exited with {self.proc.returncode} before it was healthy")
            try:
                with urllib.request.urlopen(self.url + "/health", timeout=5) as r:
                    if r.status == 200:
                        return time.monotonic() - t0
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(1)
        raise CheckError(f"vllm serve not healthy after {timeout_s:.0f} s")

    def log_tail(self, n: int = 40) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-n:])

    def stop(self, grace_s: float = 30) -> None:
        """SIGTERM to the server by its PID (its start time checked), SIGKILL after ``grace_s`` (vLLM ignores
        SIGTERM early in its start); then whatever of its processes outlived it (the engine core), each by its PID
        and start time, as seen before each signal."""
        kids = descendants(self.proc.pid)
        if self.proc.poll() is None and start_time(self.proc.pid) == self.started:
            self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            kids += [k for k in descendants(self.proc.pid) if k not in kids]  # started since the SIGTERM
            if start_time(self.proc.pid) == self.started:
                self.proc.kill()
            self.proc.wait(timeout=30)
        for pid, st in kids:
            if start_time(pid) == st:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:  # ended since its start time was read
                    pass
        self._out.close()


# ------------------------------------------------------------------------------------------------ the check


def load_fixture() -> ModuleType:
    """``tests/hf_fixture.py`` of this checkout: the tied-embedding checkpoint the plugin's tests serve."""
    if not FIXTURE.is_file():
        raise CheckError(f"{FIXTURE}: not found (run from a checkout of Ravel, or give --model DIR)")
    spec = importlib.util.spec_from_file_location("ravel_hf_fixture", FIXTURE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def make_model(folder: Path, hidden: int, layers: int, heads: int) -> Path:
    """The fixture's tokenizer and random tied-embedding Qwen2 written to ``folder``."""
    fixture = load_fixture()
    folder.mkdir(parents=True, exist_ok=True)
    fixture.make_model(folder, fixture.make_tokenizer(folder), hidden=hidden, layers=layers, heads=heads)
    return folder


def problems() -> list[tuple[str, str]]:
    """Sums of two numbers 0-4 as ``("a+b=", "answer")`` (the fixture's task)."""
    return [(f"{a}+{b}=", str(a + b)) for a in range(5) for b in range(5)]


def reward(text: str, answer: str) -> float:
    """1 for the answer alone, 0.5 for a completion that starts with it, else 0: partial credit, so that a random
    model's groups differ in reward and every step updates the weights."""
    text = text.strip()
    return 1.0 if text == answer else 0.5 if text.startswith(answer) else 0.0


def token_id(token: str) -> int:
    if not token.startswith("token_id:"):
        raise CheckError(f"logprobs token '{token}' is not token_id:<id> (return_tokens_as_token_ids ignored?)")
    return int(token.removeprefix("token_id:"))


@dataclass
class Sample:
    prompt: list[int]
    completion: list[int]
    logprobs: list[float]
    finish_reason: str


def sample_group(server: Server, prompt: list[int], n: int, seed: int, max_tokens: int,
                 temperature: float) -> list[Sample]:
    """``n`` samples of ``prompt`` (sample i seeded ``seed + i``) with their log-probs, in choice order."""
    answer = server.ok("POST", "/v1/completions", {
        "model": server.model_name, "prompt": prompt, "n": n, "max_tokens": max_tokens, "temperature": temperature,
        "top_p": 1.0, "seed": seed, "logprobs": 0, "return_tokens_as_token_ids": True, "stream": False})
    choices = sorted(answer["choices"], key=lambda c: int(c["index"]))
    if len(choices) != n:
        raise CheckError(f"/v1/completions: {len(choices)} choices for n = {n}")
    out = []
    for c in choices:
        lp = c["logprobs"]
        out.append(Sample(prompt, [token_id(t) for t in lp["tokens"]], [float(x) for x in lp["token_logprobs"]],
                          str(c["finish_reason"])))
    return out


def served_greedy(server: Server, ids: list[int]) -> tuple[int, float]:
    """The server's greedy next token after ``ids`` and its log-prob."""
    s = sample_group(server, ids, 1, 0, 1, 0.0)[0]
    return s.completion[0], s.logprobs[0]


def local_logprobs(model: torch.nn.Module, ids: list[int], device: torch.device) -> torch.Tensor:
    """transformers' next-token log-probs after ``ids`` (float64, on the CPU)."""
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([ids], device=device)).logits[0, -1]
    return torch.log_softmax(logits.double().cpu(), dim=-1)


@dataclass
class Probe:
    """The fixed prompt's greedy answer on one weight version: the server's and transformers'."""

    version: int
    server_token: int
    server_logprob: float
    local_token: int
    local_logprob: float  # transformers' log-prob of the server's token
    local_best: float  # transformers' greedy log-prob

    @property
    def error(self) -> float:
        return abs(self.server_logprob - self.local_logprob)

    def to_wire(self) -> dict[str, Any]:
        return {"version": self.version, "server_token": self.server_token, "server_logprob": self.server_logprob,
                "transformers_token": self.local_token, "transformers_logprob": self.local_logprob,
                "abs_error": self.error}


def probe(server: Server, model: torch.nn.Module, ids: list[int], device: torch.device, version: int) -> Probe:
    token, logprob = served_greedy(server, ids)
    local = local_logprobs(model, ids, device)
    return Probe(version, token, logprob, int(torch.argmax(local)), float(local[token]), float(local.max()))


def refit(server: Server, update_info: dict[str, Any], version: int) -> list[str]:
    """The weights file loaded through vLLM's routes in order; ``/is_paused`` checked between pause and resume and
    ``/weight_info`` after. Returns the routes taken."""
    taken = len(server.routes)
    server.ok("POST", REFIT_ROUTES[0])
    if server.ok("GET", "/is_paused").get("is_paused") is not True:
        raise CheckError("/is_paused: not paused after /pause")
    server.ok("POST", REFIT_ROUTES[1])
    server.ok("POST", REFIT_ROUTES[2], {"update_info": {k: update_info[k] for k in ("path", "sha256", "bytes")}})
    server.ok("POST", REFIT_ROUTES[3], {"weight_version": str(version)})
    server.ok("POST", REFIT_ROUTES[4])
    if server.ok("GET", "/is_paused").get("is_paused") is not False:
        raise CheckError("/is_paused: still paused after /resume")
    named = server.ok("GET", "/weight_info").get("weight_version")
    if named != str(version):
        raise CheckError(f"/weight_info: weight_version {named!r} after loading version {version}")
    return server.routes[taken:]


@dataclass
class StepRecord:
    step: int
    version: int
    reward: float
    completion_tokens: int
    generation_s: float
    tokens_per_s: float
    train_s: float
    refit_s: float
    loss: float
    kl: float
    grad_norm: float
    kept_sequences: int
    sampled_logprob_error: float
    probe: Probe

    def to_wire(self) -> dict[str, Any]:
        return {"step": self.step, "version": self.version, "reward": self.reward,
                "completion_tokens": self.completion_tokens, "generation_s": round(self.generation_s, 3),
                "tokens_per_s": round(self.tokens_per_s, 1), "train_s": round(self.train_s, 3),
                "refit_s": round(self.refit_s, 3), "loss": self.loss, "kl": self.kl, "grad_norm": self.grad_norm,
                "kept_sequences": self.kept_sequences, "sampled_logprob_abs_error": self.sampled_logprob_error,
                "probe": self.probe.to_wire()}


@dataclass
class Outcome:
    """What the steps measured and which checks failed."""

    atol: float
    initial: Probe | None = None
    steps: list[StepRecord] = field(default_factory=list)
    routes: list[list[str]] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    def check_probe(self, p: Probe) -> None:
        if p.local_best - p.local_logprob > self.atol:
            self.failures.append(f"version {p.version}: the server's greedy token {p.server_token} is not "
                                 f"transformers' ({p.local_token}: {p.local_best:.6f} vs {p.local_logprob:.6f})")
        if not p.error <= self.atol:
            self.failures.append(f"version {p.version}: the server's greedy log-prob {p.server_logprob:.6f} is not "
                                 f"transformers' {p.local_logprob:.6f} within {self.atol:g} (|d| = {p.error:.2e})")


def trainer_spec(model_dir: Path, device: str, dtype: str, seed: int, group_size: int, lr: float) -> dict[str, Any]:
    """The Python trainer's spec for the checkpoint ``model_dir`` (its sizes read from its ``config.json``)."""
    c = json.loads((model_dir / "config.json").read_text())
    model = {"family": "qwen2", "vocab_size": int(c["vocab_size"]), "layers": int(c["num_hidden_layers"]),
             "hidden": int(c["hidden_size"]), "heads": int(c["num_attention_heads"]),
             "max_positions": int(c.get("max_position_embeddings", 2048)), "path": str(model_dir), "dtype": dtype}
    return {"model": model, "seed": seed, "device": device,
            "grpo": {"group_size": group_size, "kl_beta": 0.04, "learning_rate": lr, "weight_decay": 0.0,
                     "max_grad_norm": 1.0, "temperature": 1.0, "advantage_eps": 1e-6}}


def run_steps(server: Server, trainer: Any, tokenizer: Any, weights_dir: Path, steps: int, prompts: int,
              group_size: int, max_tokens: int, seed: int, atol: float, deadline: float,
              log: Callable[[str], None]) -> Outcome:
    """The initial weights loaded and probed, then ``steps`` GRPO steps, each ending with a refit and a probe.
    ``trainer`` is a :class:`~ravel_workers.actors.PolicyTrainerImpl`; ``deadline`` (``time.monotonic()``) stops
    starting steps."""
    from ravel_checks.gpu_check import _call
    from ravel_workers.grpo import completion_logprobs

    out = Outcome(atol=atol)
    ids = list(tokenizer(PROMPT, add_special_tokens=False)["input_ids"])
    device = trainer.device

    def publish_and_refit() -> tuple[int, float]:
        t0 = time.perf_counter()
        raw = _call(trainer.publish_file, str(weights_dir))
        info = json.loads(raw) if isinstance(raw, str) else raw
        version = int(info["version"])
        routes = refit(server, info, version)
        out.routes.append(routes)
        if routes != list(REFIT_ROUTES):
            out.failures.append(f"version {version}: routes {routes}, expected {list(REFIT_ROUTES)}")
        return version, time.perf_counter() - t0

    server.ok("POST", INIT_ROUTE, {"init_info": {"transport": BACKEND}})
    # the trainer's initial weights first, as Ravel's workers do before step 1 (a server may hold others)
    version, _ = publish_and_refit()
    out.initial = probe(server, trainer.model, ids, device, version)
    out.check_probe(out.initial)
    log(f"version {version} (initial): server greedy log-prob {out.initial.server_logprob:.6f}, transformers "
        f"{out.initial.local_logprob:.6f} (|d| = {out.initial.error:.1e})")

    rng = random.Random(seed)
    table = problems()
    previous = out.initial
    for step in range(steps):
        if time.monotonic() > deadline:
            out.failures.append(f"stopped before step {step}: the time limit passed")
            break
        chosen = [table[rng.randrange(len(table))] for _ in range(prompts)]
        encoded = [list(tokenizer(p, add_special_tokens=False)["input_ids"]) for p, _ in chosen]
        t0 = time.perf_counter()
        with concurrent.futures.ThreadPoolExecutor(max_workers=min(prompts, 16)) as pool:
            futures = [pool.submit(sample_group, server, e, group_size, seed * 1_000_003 + step * 10_007 + i * 101,
                                   max_tokens, 1.0) for i, e in enumerate(encoded)]
            groups = [f.result() for f in futures]
        generation_s = time.perf_counter() - t0
        batch: list[dict[str, Any]] = []
        samples = [s for g in groups for s in g]
        for i, group in enumerate(groups):
            for j, s in enumerate(group):
                text = tokenizer.decode(s.completion, skip_special_tokens=True)
                batch.append({"request_id": f"s{step}-p{i}-g{j}", "prompt": s.prompt, "completion": s.completion,
                              "logprobs": s.logprobs, "reward": reward(text, chosen[i][1]),
                              "weight_version": previous.version, "group_index": i})
        # the server's sampled log-probs against the trainer's on the same weights (the behaviour policy's)
        with torch.no_grad():
            local, mask = completion_logprobs(trainer.model, [s.prompt for s in samples],
                                              [s.completion for s in samples], 1.0, device)
        served = torch.zeros_like(local)
        for r, s in enumerate(samples):
            served[r, :len(s.logprobs)] = torch.tensor(s.logprobs, dtype=served.dtype)
        sampled_error = float(((served.to(local.device) - local).abs() * mask).max().item()) if samples else 0.0
        if not sampled_error <= atol:
            out.failures.append(f"step {step}: the server's sampled log-probs differ from the trainer's by "
                                f"{sampled_error:.2e} > {atol:g}")
        t1 = time.perf_counter()
        _call(trainer.logprobs, batch)
        outcome = _call(trainer.train, batch)
        t2 = time.perf_counter()
        version, refit_s = publish_and_refit()
        p = probe(server, trainer.model, ids, device, version)
        out.check_probe(p)
        tokens = sum(len(s.completion) for s in samples)
        rec = StepRecord(step=step, version=version, reward=sum(t["reward"] for t in batch) / len(batch),
                         completion_tokens=tokens, generation_s=generation_s,
                         tokens_per_s=tokens / max(generation_s, 1e-9), train_s=t2 - t1, refit_s=refit_s,
                         loss=float(outcome["loss"]), kl=float(outcome["kl"]), grad_norm=float(outcome["grad_norm"]),
                         kept_sequences=int(outcome["kept_sequences"]), sampled_logprob_error=sampled_error, probe=p)
        out.steps.append(rec)
        log(f"step {step}: reward={rec.reward:.3f} generation={generation_s:.2f}s ({rec.tokens_per_s:.0f} tokens/s,"
            f" {tokens} tokens) train={rec.train_s:.2f}s refit={refit_s:.2f}s loss={rec.loss:.4f} kl={rec.kl:.5f}"
            f" grad_norm={rec.grad_norm:.3f} kept={rec.kept_sequences} | v{version}: server greedy log-prob"
            f" {p.server_logprob:.6f}, transformers {p.local_logprob:.6f} (|d| = {p.error:.1e}; moved"
            f" {abs(p.local_logprob - previous.local_logprob):.1e}) sampled |d| max {sampled_error:.1e}")
        previous = p
    moved = [abs(b.probe.local_logprob - a.local_logprob)
             for a, b in zip([out.initial] + [s.probe for s in out.steps], out.steps, strict=False)]
    if out.steps and not max(moved) > 3 * atol:
        out.failures.append(f"no refit moved the prompt's log-prob by more than {3 * atol:g} (largest "
                            f"{max(moved):.1e}): the comparison could not tell new weights from old")
    return out


# ------------------------------------------------------------------------------------------------ main


class Interrupted(Exception):
    """SIGTERM (``timeout``'s): raised where the check is, so that it stops the server and prints its summary."""


def _terminate(signum: int, frame: FrameType | None) -> None:
    raise Interrupted(f"stopped by signal {signum}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m ravel_checks.gpu_check_vllm", description=__doc__.splitlines()[0])
    p.add_argument("--vllm", required=True, help="the vllm command (a path, or a quoted command line)")
    p.add_argument("--device", default="cuda", help="cuda, cuda:N or cpu (default cuda): the trainer's and vLLM's")
    p.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"],
                   help="the served and trained dtype (default float32)")
    p.add_argument("--model", default=None, help="a Hugging Face checkpoint folder (default: the fixture, made)")
    p.add_argument("--hidden", type=int, default=128, help="the fixture's hidden size (default 128)")
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--heads", type=int, default=2, help="default 2: heads of 64, which vLLM's CPU attention takes")
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--prompts", type=int, default=8, help="prompts per step")
    p.add_argument("--group-size", type=int, default=8)
    p.add_argument("--max-tokens", type=int, default=4)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--atol", type=float, default=None, help="the log-prob tolerance (default: see the docstring)")
    p.add_argument("--max-model-len", type=int, default=64)
    p.add_argument("--serve-args", default="", help="more vllm serve arguments (one quoted string)")
    p.add_argument("--start-timeout", type=float, default=400.0, help="seconds for vllm serve to become healthy")
    p.add_argument("--max-seconds", type=float, default=540.0, help="no step starts after this long")
    p.add_argument("--work-dir", default=None, help="model, weights, spans and the server's log (default: temp)")
    a = p.parse_args(argv)
    t_start = time.monotonic()
    device = a.device
    if device != "cpu" and not device.startswith("cuda"):
        p.error(f"--device: cpu, cuda or cuda:N, got {device!r}")
    if device.startswith("cuda") and not torch.cuda.is_available():
        print("gpu_check_vllm: --device cuda but torch sees no CUDA device", file=sys.stderr)
        return 2
    vllm = shlex.split(a.vllm)
    if not vllm or shutil.which(vllm[0]) is None:
        print(f"gpu_check_vllm: --vllm {a.vllm!r}: not an executable", file=sys.stderr)
        return 2
    installed, asked = plugin_installed(vllm)
    if installed is False:
        print(f"gpu_check_vllm: Ravel's vLLM plugin ({PLUGIN_GROUP} entry point {PLUGIN_ENTRY_POINT}) is not "
              f"installed in {asked}'s environment: {INSTALL_HINT}", file=sys.stderr)
        return 2
    if installed is None:
        print(f"gpu_check_vllm: could not tell whether Ravel's vLLM plugin is installed where {vllm[0]} runs "
              f"(no python beside it); if vllm serve refuses backend '{BACKEND}': {INSTALL_HINT}", flush=True)
    atol = a.atol if a.atol is not None else tolerance("cpu" if device == "cpu" else "cuda", a.dtype)
    signal.signal(signal.SIGTERM, _terminate)

    from ravel_workers import hf
    from ravel_workers.actors import PolicyTrainerImpl
    from ravel_workers.telemetry import ProcessTelemetry

    work = Path(a.work_dir or tempfile.mkdtemp(prefix="ravel-gpu-check-vllm-")).absolute()
    work.mkdir(parents=True, exist_ok=True)
    model_dir = Path(a.model).absolute() if a.model else make_model(work / "model", a.hidden, a.layers, a.heads)
    hf.check_folder(str(model_dir))
    tokenizer = hf.load_tokenizer(str(model_dir))
    port = free_port()
    cmd, env = serve_command(vllm, model_dir, port, device, a.dtype, a.seed, a.max_model_len,
                             shlex.split(a.serve_args))
    print(f"gpu_check_vllm: device={device}"
          f" ({torch.cuda.get_device_name(device) if device.startswith('cuda') else 'cpu'}) torch={torch.__version__}"
          f" dtype={a.dtype} atol={atol:g} model={model_dir} work={work}", flush=True)
    print("gpu_check_vllm: " + " ".join(f"{k}={v}" for k, v in env.items()) + " " + shlex.join(cmd), flush=True)

    tel_env = {"RAVEL_TELEMETRY_RUN_ID": f"gpu-check-vllm-{int(time.time())}", "RAVEL_TELEMETRY_PRESET": "all",
               "RAVEL_TELEMETRY_EXPORTER": "file", "RAVEL_TELEMETRY_RUNS_DIR": str(work / "runs")}
    summary: dict[str, Any] = {"device": device, "dtype": a.dtype, "atol": atol, "transport": BACKEND,
                               "nccl": "not built: the weights move as a safetensors file on the server's node"}
    failures: list[str] = []
    server = LaunchedServer(cmd, env, port, work / "vllm-serve.log")
    telemetry = None
    try:
        ready_s = server.wait_healthy(min(a.start_timeout, a.max_seconds))
        print(f"gpu_check_vllm: vllm serve (PID {server.proc.pid}) healthy after {ready_s:.1f}s", flush=True)
        summary["server_ready_s"] = round(ready_s, 1)
        telemetry = ProcessTelemetry.from_env("policy_trainer", tel_env)
        spec = trainer_spec(model_dir, device, a.dtype, a.seed, a.group_size, a.lr)
        trainer = PolicyTrainerImpl(json.dumps(spec), telemetry=telemetry)
        out = run_steps(server, trainer, tokenizer, work / "weights", a.steps, a.prompts, a.group_size,
                        a.max_tokens, a.seed, atol, t_start + a.max_seconds, lambda s: print(s, flush=True))
        failures += out.failures
        steady = out.steps[1:] or out.steps
        summary.update({
            "steps": len(out.steps), "rewards": [round(s.reward, 4) for s in out.steps],
            "tokens_per_s": round(sum(s.completion_tokens for s in steady)
                                  / max(sum(s.generation_s for s in steady), 1e-9), 1),
            "refit_s": round(sum(s.refit_s for s in steady) / max(len(steady), 1), 3),
            "initial_probe": out.initial.to_wire() if out.initial else None,
            "max_probe_abs_error": max([s.probe.error for s in out.steps]
                                       + ([out.initial.error] if out.initial else [])),
            "max_sampled_abs_error": max([s.sampled_logprob_error for s in out.steps], default=0.0),
            "refit_routes": list(REFIT_ROUTES), "refits": len(out.routes),
            "per_step": [s.to_wire() for s in out.steps]})
        if len(out.steps) < a.steps:
            failures.append(f"{len(out.steps)} of {a.steps} steps ran")
    except Interrupted as e:
        failures.append(str(e))
    except CheckError as e:
        failures.append(str(e))
        tail = server.log_tail()
        print(f"gpu_check_vllm: {e}\n--- vllm serve's log ({server.log}), last lines:\n{tail}", file=sys.stderr)
        if "Invalid weight transfer backend" in tail:
            print(f"gpu_check_vllm: vllm serve does not know backend '{BACKEND}': {INSTALL_HINT}", file=sys.stderr)
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second SIGTERM must not cut the stop short
        server.stop()
        if telemetry is not None:
            telemetry.shutdown()
    spans = 0
    for span_file in sorted((work / "runs").rglob("traces-*.jsonl")):
        for line in span_file.read_text().splitlines():
            for rs in json.loads(line).get("resourceSpans", []):
                for ss in rs.get("scopeSpans", []):
                    spans += len(ss.get("spans", []))
    summary.update({"trainer_spans": spans, "server_log": str(server.log),
                    "wall_s": round(time.monotonic() - t_start, 1), "failures": failures, "ok": not failures})
    for f in failures:
        print(f"FAIL {f}", flush=True)
    print(json.dumps(summary), flush=True)
    return 0 if not failures else 1


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    sys.exit(main())
