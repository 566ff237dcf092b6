"""Process telemetry: config from RAVEL_TELEMETRY_*, the JSONL format Java reads, counters, OTLP exporters."""

from __future__ import annotations

import gzip
import http.server
import logging
import os
import re
import threading
from concurrent import futures

import pytest
from opentelemetry.trace import SpanKind

from ravel_workers.telemetry import (
    JsonLinesSpanExporter,
    OtlpConfig,
    ProcessTelemetry,
    TelemetrySettings,
    parse_headers,
)

from support import read_spans, spans_of, telemetry_env


def settings(**env: str) -> TelemetrySettings:
    return TelemetrySettings.from_env({"RAVEL_TELEMETRY_" + k.upper(): v for k, v in env.items()})


def test_groups_follow_preset_span_groups_and_engine_tracing():
    assert settings(preset="per_step").is_on("worker") and not settings(preset="per_step").engine_tracing
    assert not settings(preset="none").is_on("worker")
    assert settings(preset="none", span_groups="worker,engine").is_on("worker")
    assert settings(preset="none", span_groups="engine").engine_tracing
    assert settings(preset="all").engine_tracing
    assert not settings(preset="all", engine_tracing="false").engine_tracing
    assert settings(preset="default", engine_tracing="true").is_on("engine")
    off = settings(enabled="false", preset="all", engine_tracing="true")
    assert off.groups == frozenset() and not off.engine_tracing and off.exporter == "none"
    s = settings(engine_sample_ratio="0.25", engine_slow_request_ms="1500", shutdown_timeout_ms="3000", preset="")
    assert (s.engine_sample_ratio, s.engine_slow_request_ms, s.shutdown_timeout_ms, s.preset) == (0.25, 1500, 3000,
                                                                                                   "per_step")
    with pytest.raises(ValueError, match="RAVEL_TELEMETRY_PRESET"):
        settings(preset="most")
    with pytest.raises(ValueError, match="RAVEL_TELEMETRY_SPAN_GROUPS"):
        settings(span_groups="worker,gpu")
    with pytest.raises(ValueError, match="RAVEL_TELEMETRY_ENGINE_SAMPLE_RATIO"):
        settings(engine_sample_ratio="1.5")


def test_without_run_id_telemetry_is_off_with_a_warning(caplog):
    with caplog.at_level(logging.WARNING):
        t = ProcessTelemetry.from_env("policy_trainer", {"RAVEL_TELEMETRY_PRESET": "all"})
    assert "without Ravel's worker environment" in caplog.text
    assert not t.enabled and not t.worker_spans and not t.engine_tracing
    with t.tracer.start_as_current_span("x"):
        pass
    assert t.stats().ended == 0 and t.span_file is None and t.flush(10)
    t.shutdown()


def test_jsonl_is_otlp_json_as_java_reads_it(make_telemetry):
    t = make_telemetry("policy_trainer")
    assert t.span_file.name == f"traces-policy_trainer-{os.getpid()}.jsonl"
    assert t.span_file.parent.name == "test-run"
    with t.tracer.start_as_current_span("rl.trainer.train", kind=SpanKind.SERVER,
                                        attributes={"rl.weight_version": 3, "x.f": 0.5, "x.b": True}) as parent:
        with t.tracer.start_as_current_span("child") as child:
            child.add_event("ev", {"k": "v"})
    spans = {s["name"]: s for s in spans_of(t)}
    p, c = spans["rl.trainer.train"], spans["child"]
    assert re.fullmatch("[0-9a-f]{32}", p["traceId"]) and re.fullmatch("[0-9a-f]{16}", p["spanId"])
    assert p["traceId"] == format(parent.get_span_context().trace_id, "032x")
    assert c["parentSpanId"] == p["spanId"] and c["traceId"] == p["traceId"]
    assert p["kind"] == 2 and c["kind"] == 1
    assert isinstance(p["startTimeUnixNano"], str) and int(p["endTimeUnixNano"]) >= int(p["startTimeUnixNano"])
    assert {a["key"]: a["value"] for a in p["attributes"]} == {
        "rl.weight_version": {"intValue": "3"}, "x.f": {"doubleValue": 0.5}, "x.b": {"boolValue": True}}
    assert c["events"][0]["name"] == "ev" and isinstance(c["events"][0]["timeUnixNano"], str)
    r = p["_resource"]
    assert r["service.name"] == {"stringValue": "ravel-test"} and r["rl.run.id"] == {"stringValue": "test-run"}
    assert r["rl.process.role"] == {"stringValue": "policy_trainer"}
    assert r["process.pid"] == {"intValue": str(os.getpid())}
    assert r["telemetry.sdk.language"] == {"stringValue": "python"}
    assert r["ray.job.id"] == {"stringValue": "01000000"}
    assert t.stats().ended == 2 and t.stats().exported == 2 and t.stats().failed == 0


def test_shutdown_flushes_and_is_idempotent(tmp_path):
    t = ProcessTelemetry.from_env("generation_worker", telemetry_env(tmp_path))
    with t.tracer.start_as_current_span("a"):
        pass
    t.shutdown()
    t.shutdown()
    assert [s["name"] for s in read_spans(t.span_file)] == ["a"]


def test_dropped_spans_are_counted_and_add_up_once_flushed(tmp_path, monkeypatch):
    """Invariant: once flushed, ended = exported + failed + dropped, and the file holds exactly the exported spans.

    The export thread is held inside its first export (of s0 and s1, a full batch) until all spans have ended, so
    the queue (2) can hold two of s2-s4 and gives one up, however the threads are scheduled: exactly one span is
    dropped.
    """
    entered, release = threading.Event(), threading.Event()
    original = JsonLinesSpanExporter.export

    def held_export(self, spans):
        entered.set()
        assert release.wait(60), "the test never released the exporter"
        return original(self, spans)

    monkeypatch.setattr(JsonLinesSpanExporter, "export", held_export)
    t = ProcessTelemetry(TelemetrySettings.from_env(telemetry_env(tmp_path)), "generation_worker",
                         schedule_delay_ms=60_000, max_queue_size=2, max_export_batch_size=2)
    for i in range(5):
        with t.tracer.start_as_current_span(f"s{i}"):
            pass
        if i == 1:
            assert entered.wait(60), "a full batch did not reach the exporter"
    release.set()
    t.shutdown()
    s = t.stats()
    assert (s.ended, s.exported, s.failed, s.dropped) == (5, 4, 0, 1)
    assert s.exported + s.failed + s.dropped == s.ended
    assert s.exporters == {"file": {"exported": 4, "failed": 0, "dropped": 1}}  # per exporter, as Java counts
    names = [x["name"] for x in read_spans(t.span_file)]  # which queued span the full queue gave up is the SDK's
    assert len(names) == len(set(names)) == 4 and {"s0", "s1"} <= set(names) <= {f"s{i}" for i in range(5)}


def test_otlp_settings_from_the_worker_environment(tmp_path):
    headers = tmp_path / "headers"
    headers.write_text("Authorization=Bearer%20abc,x-tenant=t%201,x-key=a+b%2Bc\n")  # as OtlpSettings writes them
    c = OtlpConfig.from_env({"RAVEL_OTLP_ENDPOINT": "https://collector:4317", "RAVEL_OTLP_PROTOCOL": "grpc",
                             "RAVEL_OTLP_HEADERS_FILE": str(headers), "RAVEL_OTLP_TIMEOUT": "2500",
                             "RAVEL_OTLP_COMPRESSION": "gzip", "RAVEL_OTLP_CERTIFICATE": ""})
    assert c.headers == {"authorization": "Bearer abc", "x-tenant": "t 1", "x-key": "a+b+c"}  # '+' is literal
    assert (c.endpoint, c.timeout_ms, c.gzip, c.certificate) == ("https://collector:4317", 2500, True, None)
    assert "Bearer" not in repr(c)
    assert OtlpConfig.from_env({"RAVEL_OTLP_PROTOCOL": "http/protobuf"}).endpoint == "http://127.0.0.1:4318/v1/traces"
    with pytest.raises(ValueError, match="RAVEL_OTLP_PROTOCOL"):
        OtlpConfig.from_env({"RAVEL_OTLP_PROTOCOL": "http/json"})
    with pytest.raises(ValueError, match="entry 1"):
        parse_headers("novalue")


class _Collector(http.server.BaseHTTPRequestHandler):
    received: list[tuple[str, dict[str, str], bytes]] = []

    def do_POST(self):  # noqa: N802
        body = self.rfile.read(int(self.headers["Content-Length"]))
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        _Collector.received.append((self.path, {k.lower(): v for k, v in self.headers.items()}, body))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def test_otlp_http_export_with_headers_and_gzip(tmp_path):
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    server = http.server.HTTPServer(("127.0.0.1", 0), _Collector)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        (tmp_path / "h").write_text("x-api-key=s%3Dcret")
        env = telemetry_env(tmp_path, exporter="both")
        env.update({"RAVEL_OTLP_ENDPOINT": f"http://127.0.0.1:{server.server_port}/v1/traces",
                    "RAVEL_OTLP_PROTOCOL": "http/protobuf", "RAVEL_OTLP_HEADERS_FILE": str(tmp_path / "h"),
                    "RAVEL_OTLP_COMPRESSION": "gzip", "RAVEL_OTLP_TIMEOUT": "5000"})
        t = ProcessTelemetry.from_env("generation_worker", env)
        with t.tracer.start_as_current_span("over-http"):
            pass
        assert t.flush(10_000)
        path, headers, body = _Collector.received[-1]
        assert path == "/v1/traces" and headers["x-api-key"] == "s=cret"
        req = ExportTraceServiceRequest.FromString(body)
        assert req.resource_spans[0].scope_spans[0].spans[0].name == "over-http"
        assert [s["name"] for s in read_spans(t.span_file)] == ["over-http"]
        assert t.stats().exported == 2  # once per exporter, as the Java counters count
        assert set(t.stats().exporters) == {"file", "otlp"}
        assert all(c["exported"] == 1 for c in t.stats().exporters.values())
        t.shutdown()
    finally:
        server.shutdown()


def test_otlp_grpc_export(tmp_path):
    import grpc
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc

    received = []

    class Service(trace_service_pb2_grpc.TraceServiceServicer):
        def Export(self, request, context):  # noqa: N802
            received.append((request, dict(context.invocation_metadata())))
            return trace_service_pb2.ExportTraceServiceResponse()

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(Service(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        env = telemetry_env(tmp_path, exporter="otlp")
        env.update({"RAVEL_OTLP_ENDPOINT": f"http://127.0.0.1:{port}", "RAVEL_OTLP_PROTOCOL": "grpc",
                    "RAVEL_OTLP_HEADERS": "x-team=rl", "RAVEL_OTLP_TIMEOUT": "5000"})
        t = ProcessTelemetry.from_env("policy_trainer", env)
        assert t.span_file is None
        with t.tracer.start_as_current_span("over-grpc"):
            pass
        assert t.flush(10_000)
        request, metadata = received[-1]
        assert request.resource_spans[0].scope_spans[0].spans[0].name == "over-grpc"
        assert metadata["x-team"] == "rl"
        assert t.stats().exported == 1 and t.stats().failed == 0
        t.shutdown()
    finally:
        server.stop(0)


def test_failed_export_is_counted(tmp_path):
    env = telemetry_env(tmp_path, exporter="otlp")
    env.update({"RAVEL_OTLP_ENDPOINT": "http://127.0.0.1:9/v1/traces", "RAVEL_OTLP_PROTOCOL": "http/protobuf",
                "RAVEL_OTLP_TIMEOUT": "300"})
    t = ProcessTelemetry.from_env("generation_worker", env)
    with t.tracer.start_as_current_span("lost"):
        pass
    t.flush(5_000)
    assert t.stats().failed == 1 and t.stats().exported == 0
    t.shutdown()


def test_resource_carries_the_runs_resource_attributes_below_ravels_own(make_telemetry):
    t = make_telemetry("policy_trainer",
                       resource_attributes="deployment.environment.name=staging,team=rl%20infra%2Cgpu")
    attrs = dict(t.resource.attributes)
    assert attrs["deployment.environment.name"] == "staging"
    assert attrs["team"] == "rl infra,gpu"
    assert attrs["rl.run.id"] == "test-run" and attrs["service.name"] == "ravel-test"
    with pytest.raises(ValueError, match="RAVEL_TELEMETRY_RESOURCE_ATTRIBUTES"):
        settings(resource_attributes="a=1,novalue")
