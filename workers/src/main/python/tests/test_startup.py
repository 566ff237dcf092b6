"""An actor's start-up spans: children of the span the driver names in its environment, or none at all."""

from __future__ import annotations

import json

import pytest

from ravel_workers import names
from ravel_workers.actors import GenerationWorkerImpl, PolicyTrainerImpl
from ravel_workers.telemetry import startup, startup_parent, startup_span

from support import TRACEPARENT, spans_of, trainer_spec, worker_spec

TRACE_ID = TRACEPARENT.split("-")[1]
PARENT_ID = TRACEPARENT.split("-")[2]


def test_constructors_open_their_startup_span_under_the_named_parent(make_telemetry, monkeypatch):
    monkeypatch.setenv(names.STARTUP_TRACEPARENT_ENV, TRACEPARENT)
    trainer_t = make_telemetry("policy_trainer")
    worker_t = make_telemetry("generation_worker")

    PolicyTrainerImpl(json.dumps(trainer_spec()), telemetry=trainer_t)
    GenerationWorkerImpl(json.dumps(worker_spec()), telemetry=worker_t)

    for t, name in ((trainer_t, "rl.trainer.load_model"), (worker_t, "rl.worker.start_backend")):
        spans = spans_of(t)
        assert [s["name"] for s in spans] == [name]
        assert spans[0]["traceId"] == TRACE_ID and spans[0]["parentSpanId"] == PARENT_ID
        assert int(spans[0]["endTimeUnixNano"]) >= int(spans[0]["startTimeUnixNano"])


def test_without_a_named_parent_or_worker_spans_or_after_a_restart_there_is_no_span(make_telemetry, monkeypatch):
    monkeypatch.delenv(names.STARTUP_TRACEPARENT_ENV, raising=False)
    alone = make_telemetry("policy_trainer")
    PolicyTrainerImpl(json.dumps(trainer_spec()), telemetry=alone)

    monkeypatch.setenv(names.STARTUP_TRACEPARENT_ENV, TRACEPARENT)
    off = make_telemetry("policy_trainer", preset="none")
    PolicyTrainerImpl(json.dumps(trainer_spec()), telemetry=off)
    monkeypatch.setattr(startup, "_restarted", lambda: True)
    restarted = make_telemetry("generation_worker")
    GenerationWorkerImpl(json.dumps(worker_spec()), telemetry=restarted)

    assert spans_of(alone) == [] and off.stats().ended == 0 and spans_of(restarted) == []


@pytest.mark.parametrize("value", ["", "  ", "00-nothex-01", "00-" + "0" * 32 + "-" + "0" * 16 + "-01"])
def test_startup_parent_absent_or_malformed_is_none(value):
    assert startup_parent({names.STARTUP_TRACEPARENT_ENV: value}) is None
    assert startup_parent({}) is None


def test_startup_span_an_exception_is_recorded_and_raised(make_telemetry):
    t = make_telemetry("policy_trainer")
    with pytest.raises(RuntimeError, match="no model"):
        with startup_span(t, names.TRAINER_LOAD_MODEL, {names.STARTUP_TRACEPARENT_ENV: f" {TRACEPARENT}\n"}):
            raise RuntimeError("no model")
    (span,) = spans_of(t)
    assert span["status"]["code"] == 2 and span["parentSpanId"] == PARENT_ID
