"""Test helpers: calling role methods as Java does, telemetry writing to a temp run folder, span files."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

from ravel_workers import wire
from ravel_workers.telemetry import ProcessTelemetry

torch.set_num_threads(2)

EMPTY_CARRIER = json.dumps({"traceparent": "", "tracestate": "", "baggage": ""})
TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


def call(method: Callable[..., bytes], *args: Any, refs: tuple[Any, ...] = (), carrier: str = EMPTY_CARRIER) -> Any:
    """A role method called the way Java calls it; the result decoded (:func:`answer`)."""
    return answer(method(carrier, json.dumps(list(args)), *refs))


def answer(data: bytes) -> Any:
    """A role method's answer as Java reads it: JSON, or a generate call's results in their binary form (as the
    JSON-ready dicts of their wire form)."""
    if data.startswith(wire.results.MAGIC):
        return [r.to_wire() for r in wire.decode_results(data)]
    return json.loads(data)


def carrier(traceparent: str = TRACEPARENT, tracestate: str = "", baggage: str = "") -> str:
    return json.dumps({"traceparent": traceparent, "tracestate": tracestate, "baggage": baggage})


def telemetry_env(runs_dir: Path, **overrides: str) -> dict[str, str]:
    env = {"RAVEL_TELEMETRY_RUN_ID": "test-run", "RAVEL_TELEMETRY_ENABLED": "true",
           "RAVEL_TELEMETRY_PRESET": "per_step", "RAVEL_TELEMETRY_EXPORTER": "file",
           "RAVEL_TELEMETRY_RUNS_DIR": str(runs_dir), "RAVEL_TELEMETRY_SERVICE_NAME": "ravel-test",
           "RAVEL_TELEMETRY_ENGINE_TRACING": "false", "RAVEL_TELEMETRY_ENGINE_SAMPLE_RATIO": "1.0",
           # an hour: no request of a test is kept as "slow" because the machine was busy (the sampler's own
           # tests set the threshold they check)
           "RAVEL_TELEMETRY_ENGINE_SLOW_REQUEST_MS": "3600000"}
    env.update({"RAVEL_TELEMETRY_" + k.upper(): v for k, v in overrides.items()})
    return env


def read_spans(path: Path) -> list[dict[str, Any]]:
    """Every span of a JSONL file, each with its resource attributes under ``_resource``."""
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        for rs in json.loads(line)["resourceSpans"]:
            resource = {a["key"]: a["value"] for a in rs["resource"]["attributes"]}
            for ss in rs["scopeSpans"]:
                for s in ss["spans"]:
                    s = dict(s)
                    s["_resource"] = resource
                    s["_scope"] = ss["scope"]["name"]
                    s["_attributes"] = {a["key"]: next(iter(a["value"].values())) for a in s.get("attributes", [])}
                    out.append(s)
    return out


@pytest.fixture
def make_telemetry(tmp_path: Path) -> Callable[..., ProcessTelemetry]:
    """``make_telemetry(role, **overrides)``: telemetry writing JSONL under tmp_path, shut down after the test."""
    made: list[ProcessTelemetry] = []

    def make(role: str = "generation_worker", **overrides: str) -> ProcessTelemetry:
        t = ProcessTelemetry.from_env(role, telemetry_env(tmp_path / "runs", **overrides),
                                      resource_attributes={"ray.job.id": "01000000"})
        made.append(t)
        return t

    yield make
    for t in made:
        t.shutdown()


def spans_of(t: ProcessTelemetry) -> list[dict[str, Any]]:
    """Flushes ``t`` and reads its span file."""
    assert t.flush(5000)
    assert t.span_file is not None
    return read_spans(t.span_file) if t.span_file.exists() else []


TINY_MODEL = {"family": "gpt2", "vocab_size": 14, "layers": 1, "hidden": 32, "heads": 2, "max_positions": 16}


def worker_spec(**overrides: Any) -> dict[str, Any]:
    spec = {"model": dict(TINY_MODEL), "seed": 7, "eos_token": 13, "model_name": "tiny", "engine": "transformers",
            "max_running_requests": 64, "device": "cpu"}
    spec.update(overrides)
    return spec


def trainer_spec(**grpo: Any) -> dict[str, Any]:
    g = {"group_size": 4, "clip_epsilon_low": 0.2, "clip_epsilon_high": 0.2,
         "kl_beta": 0.04, "learning_rate": 0.01, "weight_decay": 0.0,
         "max_grad_norm": 1.0, "temperature": 1.0, "advantage_eps": 1e-6}
    g.update(grpo)
    return {"model": dict(TINY_MODEL), "seed": 7, "device": "cpu", "grpo": g}


def request(rid: str, prompt: list[int], max_tokens: int = 4, temperature: float = 1.0, top_p: float = 1.0,
            seed: int = 0) -> dict[str, Any]:
    return {"request_id": rid, "prompt_tokens": prompt,
            "params": {"max_tokens": max_tokens, "temperature": temperature, "top_p": top_p, "seed": seed}}
