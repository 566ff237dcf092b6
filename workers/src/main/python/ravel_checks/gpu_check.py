"""``python -m ravel_checks.gpu_check``: the generation worker and GRPO training on one device, outside Ray.

The body of ``scripts/gpu-check.sh``: on a machine with PyTorch, transformers and the OpenTelemetry wheels
(no network, no Java, no Ray), it builds a :class:`GenerationWorkerImpl` and a :class:`PolicyTrainerImpl`
and drives them through their wire methods the way the Java driver does (:func:`drive`: per step,
``prompts`` arithmetic prompts ``"a+b="`` times ``group_size`` samples, rewards, log-probs, one GRPO update,
refit), with spans written to a JSON Lines file. It prints tokens/s and step times, then a JSON summary.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from ravel_workers import wire
from ravel_workers.telemetry import ProcessTelemetry

#: The arithmetic task's alphabet (``CharTokenizer.ARITHMETIC_ALPHABET``); EOS is id 13, the vocabulary 14.
ALPHABET = "0123456789+-="
EOS = len(ALPHABET)
VOCAB = len(ALPHABET) + 1


def encode(text: str) -> list[int]:
    return [ALPHABET.index(c) for c in text]


def decode(tokens: list[int]) -> str:
    """The completion as text, EOS decoding to nothing."""
    return "".join(ALPHABET[t] for t in tokens if t != EOS)


@dataclass
class StepRecord:
    """What one driven step measured."""

    step: int
    reward: float
    generation_s: float
    train_s: float
    step_s: float
    completion_tokens: int
    loss: float
    kl: float
    grad_norm: float


@dataclass
class DriveResult:
    steps: list[StepRecord] = field(default_factory=list)

    @property
    def rewards(self) -> list[float]:
        return [s.reward for s in self.steps]


def _call(method: Callable[..., bytes], *args: Any, refs: tuple[Any, ...] = ()) -> Any:
    """A role method called as Java calls it: an empty carrier, JSON args, refs; the result decoded as Java does
    (JSON, or a generate call's results in their binary form, as the dicts of their JSON wire form)."""
    carrier = json.dumps({"traceparent": "", "tracestate": "", "baggage": ""})
    out = method(carrier, json.dumps(list(args)), *refs)
    if out.startswith(wire.results.MAGIC):
        return [r.to_wire() for r in wire.decode_results(out)]
    return json.loads(out)


def drive(worker: Any, trainer: Any, steps: int, prompts: int = 32, group_size: int = 8, max_operand: int = 4,
          temperature: float = 1.0, max_tokens: int = 4, seed: int = 7,
          log: Callable[[StepRecord], None] | None = None) -> DriveResult:
    """Runs ``steps`` GRPO steps the way the Java driver's sync loop does, through the wire methods."""
    rng = random.Random(seed)
    out = DriveResult()
    for step in range(steps):
        t0 = time.perf_counter()
        problems = [(rng.randint(0, max_operand), rng.randint(0, max_operand)) for _ in range(prompts)]
        requests = []
        for i, (a, b) in enumerate(problems):
            for j in range(group_size):
                requests.append({"request_id": f"s{step}-p{i}-g{j}", "prompt_tokens": encode(f"{a}+{b}="),
                                 "params": {"max_tokens": max_tokens, "temperature": temperature, "top_p": 1.0,
                                            "seed": (seed * 1_000_003 + step * 100_003 + i * group_size + j)}})
        results = _call(worker.generate, requests)
        t1 = time.perf_counter()
        batch = []
        for k, r in enumerate(results):
            a, b = problems[k // group_size]
            reward = 1.0 if r["finish_reason"] != "error" and decode(r["completion_tokens"]) == str((a + b) % 10) \
                else 0.0
            batch.append({"request_id": r["request_id"], "prompt": r["prompt_tokens"],
                          "completion": r["completion_tokens"], "logprobs": r["logprobs"], "reward": reward,
                          "weight_version": r["weight_version"], "group_index": k // group_size})
        _call(trainer.logprobs, batch)
        outcome = _call(trainer.train, batch)
        blob = trainer.weights(json.dumps({}), "[]")
        _call(worker.update_weights, {"$ref": 0}, refs=(blob,))
        t2 = time.perf_counter()
        rec = StepRecord(step=step, reward=sum(t["reward"] for t in batch) / len(batch), generation_s=t1 - t0,
                         train_s=t2 - t1, step_s=t2 - t0,
                         completion_tokens=sum(len(r["completion_tokens"]) for r in results),
                         loss=outcome["loss"], kl=outcome["kl"], grad_norm=outcome["grad_norm"])
        out.steps.append(rec)
        if log:
            log(rec)
    return out


def specs(hidden: int, layers: int, heads: int, device: str, lr: float, seed: int = 7, family: str = "gpt2",
          max_running: int = 256, max_positions: int = 16,
          **grpo: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """The worker and trainer specs of a model of these sizes for the arithmetic task; ``grpo`` overrides the
    trainer's GRPO settings (``loss_type="dr_grpo"``, ...)."""
    model = {"family": family, "vocab_size": VOCAB, "layers": layers, "hidden": hidden, "heads": heads,
             "max_positions": max_positions}
    worker = {"model": model, "seed": seed, "eos_token": EOS, "model_name": "ravel-gpu-check",
              "engine": "transformers", "max_running_requests": max_running, "device": device}
    trainer = {"model": model, "seed": seed, "device": device,
               "grpo": {"group_size": 8, "kl_beta": 0.04, "learning_rate": lr, "weight_decay": 0.0,
                        "max_grad_norm": 1.0, "temperature": 1.0, "advantage_eps": 1e-6, **grpo}}
    return worker, trainer


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m ravel_checks.gpu_check", description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cuda", help="cuda or cpu (default cuda)")
    p.add_argument("--hidden", type=int, default=512)
    p.add_argument("--layers", type=int, default=8)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--family", default="gpt2", choices=["gpt2", "qwen2"])
    p.add_argument("--prompts", type=int, default=64, help="prompts per step (x group size 8 = requests)")
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--lr", type=float, default=3e-4)
    p.add_argument("--runs-dir", default=None, help="where the span file goes (default: a temp folder)")
    p.add_argument("--max-seconds", type=float, default=240.0, help="stop starting steps after this long")
    a = p.parse_args(argv)
    if a.device.startswith("cuda") and not torch.cuda.is_available():
        print("gpu_check: --device cuda but torch sees no CUDA device", file=sys.stderr)
        return 2
    from ravel_workers.actors import GenerationWorkerImpl, PolicyTrainerImpl

    runs_dir = a.runs_dir or tempfile.mkdtemp(prefix="ravel-gpu-check-")
    env = {"RAVEL_TELEMETRY_RUN_ID": f"gpu-check-{int(time.time())}", "RAVEL_TELEMETRY_PRESET": "all",
           "RAVEL_TELEMETRY_ENGINE_TRACING": "true", "RAVEL_TELEMETRY_ENGINE_SAMPLE_RATIO": "0.25",
           "RAVEL_TELEMETRY_EXPORTER": "file", "RAVEL_TELEMETRY_RUNS_DIR": runs_dir}
    t_start = time.perf_counter()
    wtel = ProcessTelemetry.from_env("generation_worker", env)
    ttel = ProcessTelemetry.from_env("policy_trainer", env)
    wspec, tspec = specs(a.hidden, a.layers, a.heads, a.device, a.lr, family=a.family,
                         max_running=a.prompts * 8)
    worker = GenerationWorkerImpl(json.dumps(wspec), telemetry=wtel)
    trainer = PolicyTrainerImpl(json.dumps(tspec), telemetry=ttel)
    params = sum(p.numel() for p in trainer.model.parameters())
    print(f"gpu_check: device={a.device} ({torch.cuda.get_device_name(0) if a.device.startswith('cuda') else 'cpu'})"
          f" torch={torch.__version__} model={a.family} hidden={a.hidden} layers={a.layers} heads={a.heads}"
          f" params={params} requests/step={a.prompts * 8}", flush=True)

    def log(r: StepRecord) -> None:
        print(f"step {r.step}: reward={r.reward:.3f} generation={r.generation_s:.2f}s "
              f"({r.completion_tokens / r.generation_s:.0f} tokens/s) train+refit={r.train_s:.2f}s "
              f"step={r.step_s:.2f}s loss={r.loss:.4f} kl={r.kl:.5f} grad_norm={r.grad_norm:.3f}", flush=True)

    records: list[StepRecord] = []
    for step in range(a.steps):
        if time.perf_counter() - t_start > a.max_seconds:
            print(f"gpu_check: stopping after {step} steps (--max-seconds {a.max_seconds})")
            break
        r = drive(worker, trainer, 1, prompts=a.prompts, seed=7 + step).steps[0]
        r.step = step
        log(r)
        records.append(r)
    worker.close()
    wtel.shutdown()
    ttel.shutdown()
    files = sorted(Path(runs_dir).rglob("traces-*.jsonl"))
    spans = 0
    for f in files:
        for line in f.read_text().splitlines():
            for rs in json.loads(line).get("resourceSpans", []):
                for ss in rs.get("scopeSpans", []):
                    spans += len(ss.get("spans", []))
    steady = records[1:] or records
    summary = {
        "device": a.device, "params": params, "steps": len(records),
        "tokens_per_s": sum(r.completion_tokens for r in steady) / max(sum(r.generation_s for r in steady), 1e-9),
        "step_s": sum(r.step_s for r in steady) / max(len(steady), 1),
        "first_step_s": records[0].step_s if records else None,
        "rewards": [round(r.reward, 4) for r in records],
        "span_files": [str(f) for f in files], "spans": spans,
        "export": {"worker": wtel.stats().to_wire(), "trainer": ttel.stats().to_wire()},
        "wall_s": time.perf_counter() - t_start,
    }
    print(json.dumps(summary))
    ok = bool(records) and spans > 0 and all(s["failed"] == 0 for s in summary["export"].values())
    return 0 if ok else 1


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    sys.exit(main())
