"""The file exporter's OTLP JSON, built straight from the SDK's spans, equals the OTLP exporter's protobuf
encoding rendered by ``MessageToDict`` (the reference) for every kind of value, event, link, status and scope."""

from __future__ import annotations

import enum
import json
import math

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanLimits, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.trace import (
    Link,
    NonRecordingSpan,
    SpanContext,
    SpanKind,
    Status,
    StatusCode,
    TraceFlags,
    TraceState,
)

from ravel_workers.telemetry.exporters import (
    JsonLinesSpanExporter,
    spans_to_otlp_json,
    spans_to_otlp_json_text,
    spans_to_otlp_json_via_protobuf,
)


class _Color(str, enum.Enum):
    RED = "red"


class _Keep(SpanExporter):
    def __init__(self) -> None:
        self.spans: list[ReadableSpan] = []

    def export(self, spans):  # type: ignore[no-untyped-def]
        self.spans.extend(spans)
        return SpanExportResult.SUCCESS


def _provider(keep: _Keep, resource: Resource, limits: SpanLimits | None = None) -> TracerProvider:
    tp = TracerProvider(resource=resource, span_limits=limits)
    tp.add_span_processor(SimpleSpanProcessor(keep))
    return tp


def _spans() -> list[ReadableSpan]:
    keep = _Keep()
    a = _provider(keep, Resource.create({"service.name": "a", "n": 3, "ok": True}))
    b = _provider(keep, Resource({}, schema_url="https://opentelemetry.io/schemas/1.21.0"),
                  SpanLimits(max_span_attributes=2, max_events=1, max_links=1, max_event_attributes=1))
    ta = a.get_tracer("ravel", "1.2.3", schema_url="https://example/s")
    tb = b.get_tracer("other")
    remote = SpanContext(0x0123456789ABCDEF0123456789ABCDEF, 0x1122334455667788, is_remote=True,
                         trace_flags=TraceFlags(1), trace_state=TraceState([("k", "v"), ("x", "y")]))
    linked = SpanContext(0xFEDCBA98765432100123456789ABCDEF, 0x0102030405060708, is_remote=False,
                         trace_flags=TraceFlags(1))
    with ta.start_as_current_span("root", kind=SpanKind.SERVER, context=trace.set_span_in_context(
            NonRecordingSpan(remote)), attributes={
            "s": "x", "empty": "", "b": False, "i": 0, "big": 2**62, "neg": -5, "f": 1.5, "nan": math.nan,
            "inf": math.inf, "ninf": -math.inf, "senum": _Color.RED, "huge": 2**64,
            "esc": 'quote " back \\ nl \n tab \t \u00e9 \u2713 \x01',
            "ls": ["a", "b"], "lb": [True, False], "li": [1, 2],
            "lf": [0.5, 2.0], "l0": []}, links=[Link(linked, {"w": 1}), Link(linked)]) as root:
        root.add_event("e1", {"tokens": 3}, timestamp=1_700_000_000_000_000_001)
        root.add_event("e2")
        root.set_status(Status(StatusCode.ERROR, "broken"))
        for kind in (SpanKind.INTERNAL, SpanKind.CLIENT, SpanKind.PRODUCER, SpanKind.CONSUMER):
            with ta.start_as_current_span(f"child-{kind.name}", kind=kind) as c:
                c.set_status(Status(StatusCode.OK))
        tb.start_span("limited", attributes={"a": 1, "b": 2, "c": 3}, links=[Link(linked), Link(remote)]).end()
        span = tb.start_span("events")
        span.add_event("x", {"a": 1, "b": 2})
        span.add_event("y")
        span.end()
    return keep.spans


def test_spans_to_otlp_json_equalsTheProtobufEncodersRendering():
    spans = _spans()
    assert len(spans) == 7

    fast = spans_to_otlp_json(spans)
    reference = spans_to_otlp_json_via_protobuf(spans)

    # compared as the file holds them: NaN is not equal to itself as a float
    assert json.dumps(fast, sort_keys=True) == json.dumps(reference, sort_keys=True)
    assert len(fast["resourceSpans"]) == 2


def test_spans_to_otlp_json_text_isOneLineThatJsonDumpsWouldWrite():
    spans = _spans()
    text = spans_to_otlp_json_text(spans)
    assert "\n" not in text
    parsed = json.loads(text)
    values = [a["value"] for r in parsed["resourceSpans"] for ss in r["scopeSpans"] for sp in ss["spans"]
              for a in sp.get("attributes", []) if a["key"] == "esc"]
    assert values == [{"stringValue": 'quote " back \\ nl \n tab \t \u00e9 \u2713 \x01'}]
    # the same text json.dumps writes for the same document, non-ASCII kept as it is
    assert text == json.dumps(parsed, separators=(",", ":"), ensure_ascii=False)


def test_jsonLinesExporter_loneSurrogate_isWrittenEscapedAndTheBatchKept(tmp_path):
    keep = _Keep()
    tracer = _provider(keep, Resource.create({"service.name": "a"})).get_tracer("ravel")
    tracer.start_span("bad path", attributes={"path": "/tmp/\udc80x"}).end()
    tracer.start_span("fine").end()
    exporter = JsonLinesSpanExporter(tmp_path / "spans.jsonl")
    assert exporter.export(keep.spans) == SpanExportResult.SUCCESS
    exporter.shutdown()
    (line,) = (tmp_path / "spans.jsonl").read_text(encoding="utf-8").splitlines()
    spans = json.loads(line)["resourceSpans"][0]["scopeSpans"][0]["spans"]
    assert [s["name"] for s in spans] == ["bad path", "fine"]


def test_spans_to_otlp_json_ofNothingIsAnEmptyRequest():
    assert spans_to_otlp_json([]) == spans_to_otlp_json_via_protobuf([]) == {}
