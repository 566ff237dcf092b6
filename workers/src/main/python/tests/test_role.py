"""role_method: parent context from the carrier, SERVER span with role attributes, errors, untraced methods."""

from __future__ import annotations

import inspect
import json

import pytest
from opentelemetry import baggage, trace

from ravel_workers.role import extract_carrier, inject_carrier, role_method
from ravel_workers.wire import LogProbSummary

from support import TRACEPARENT, carrier, spans_of


class Echo:
    ROLE = "echo_role"
    SPANS = "echo"

    def __init__(self, telemetry):
        self.telemetry = telemetry
        self.seen = None

    @role_method()
    def summarise(self, values: list[float], blob: bytes) -> LogProbSummary:
        self.seen = (trace.get_current_span().get_span_context(), baggage.get_baggage("k"))
        return LogProbSummary(sum(values), float(len(blob)), 0.0, len(values))

    @role_method()
    def fail(self, message: str) -> int:
        raise ValueError(message)

    @role_method(traced=False)
    def quiet(self) -> str:
        self.seen = (trace.get_current_span().get_span_context(), None)
        return "ok"

    @role_method(traced=False, raw_result=True)
    def raw(self) -> bytes:
        return b"\x80blob"


def test_span_is_a_server_child_of_the_carrier(make_telemetry):
    t = make_telemetry("generation_worker")
    echo = Echo(t)
    out = echo.summarise(carrier(baggage="k=v"), json.dumps([[1.0, 2.0], {"$ref": 0}]), b"abc")
    assert json.loads(out) == {"policy": 3.0, "reference": 3.0, "kl": 0.0, "tokens": 2}
    ctx, bag = echo.seen
    assert format(ctx.trace_id, "032x") == TRACEPARENT.split("-")[1]
    assert bag == "v"
    (span,) = spans_of(t)
    assert span["name"] == "rl.echo.summarise"
    assert span["kind"] == 2  # SERVER
    assert span["traceId"] == TRACEPARENT.split("-")[1]
    assert span["parentSpanId"] == TRACEPARENT.split("-")[2]
    assert span["spanId"] == format(ctx.span_id, "016x")
    assert span["_attributes"] == {"rl.actor.role": "echo_role", "rl.actor.method": "summarise"}
    assert span["_scope"] == "dev.ravel"


def test_error_is_recorded_and_reraised(make_telemetry):
    t = make_telemetry()
    with pytest.raises(ValueError, match="boom"):
        Echo(t).fail(carrier(), json.dumps(["boom"]))
    (span,) = spans_of(t)
    assert span["status"]["code"] == 2 and span["status"]["message"] == "boom"
    (event,) = span["events"]
    assert event["name"] == "exception"
    attrs = {a["key"]: a["value"]["stringValue"] for a in event["attributes"]}
    assert attrs["exception.type"] == "ValueError" and attrs["exception.message"] == "boom"


def test_untraced_resumes_the_context_without_a_span(make_telemetry):
    t = make_telemetry()
    echo = Echo(t)
    assert json.loads(echo.quiet(carrier(), "[]")) == "ok"
    assert format(echo.seen[0].span_id, "016x") == TRACEPARENT.split("-")[2]
    assert echo.raw(carrier(), "[]") == b"\x80blob"
    assert spans_of(t) == []
    assert t.stats().ended == 0


def test_no_span_when_the_worker_group_is_off(make_telemetry):
    t = make_telemetry(preset="none")
    echo = Echo(t)
    echo.summarise(carrier(), json.dumps([[1.0], {"$ref": 0}]), b"")
    assert format(echo.seen[0].span_id, "016x") == TRACEPARENT.split("-")[2]
    assert t.stats().ended == 0


def test_empty_carrier_starts_a_new_trace(make_telemetry):
    t = make_telemetry()
    echo = Echo(t)
    echo.summarise(json.dumps({"traceparent": "", "tracestate": "", "baggage": ""}), '[[], {"$ref": 0}]', b"")
    (span,) = spans_of(t)
    assert "parentSpanId" not in span or span["parentSpanId"] == ""


def test_wrong_arity_is_a_type_error(make_telemetry):
    with pytest.raises(TypeError, match="takes 2 argument"):
        Echo(make_telemetry()).summarise(carrier(), "[[1.0]]")


def test_ray_sees_the_wire_signature():
    params = list(inspect.signature(Echo.summarise).parameters)
    assert params == ["self", "carrier", "args", "refs"]
    assert inspect.unwrap(Echo.summarise) is Echo.summarise
    assert inspect.signature(Echo.summarise.typed).parameters["values"].annotation


def test_carrier_round_trip():
    ctx = extract_carrier(carrier(tracestate="a=1"))
    assert inject_carrier(ctx) == {"traceparent": TRACEPARENT, "tracestate": "a=1", "baggage": ""}
    assert inject_carrier(extract_carrier("")) == {"traceparent": "", "tracestate": "", "baggage": ""}
