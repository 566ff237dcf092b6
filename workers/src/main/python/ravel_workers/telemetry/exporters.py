"""The span exporters: the JSON Lines file the Java workers also write, OTLP, and counting and composite ones.

:class:`JsonLinesSpanExporter` appends one OTLP JSON ``ExportTraceServiceRequest`` per export to a file;
:func:`otlp_exporter` builds an OTLP exporter (gRPC or http/protobuf) with every argument explicit.
"""

from __future__ import annotations

import base64
import json
import logging
import math
import threading
import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from .config import OtlpConfig

LOG = logging.getLogger(__name__)


def _hex_ids(obj: Any) -> Any:
    """Rewrites the base64 ``traceId``/``spanId``/``parentSpanId`` of protobuf's JSON as lower-case hex."""
    if isinstance(obj, dict):
        return _hex_ids_of(obj)
    if isinstance(obj, list):
        return [_hex_ids(v) for v in obj]
    return obj


def _hex_ids_of(obj: dict[str, Any]) -> dict[str, Any]:
    """:func:`_hex_ids` of a JSON object."""
    out: dict[str, Any] = {}
    for k, v in obj.items():
        if k in ("traceId", "spanId", "parentSpanId") and isinstance(v, str):
            out[k] = base64.b64decode(v).hex()
        else:
            out[k] = _hex_ids(v)
    return out


def spans_to_otlp_json(spans: Sequence[ReadableSpan]) -> dict[str, Any]:
    """An OTLP JSON ``ExportTraceServiceRequest`` as data: :func:`spans_to_otlp_json_text`, parsed."""
    parsed: dict[str, Any] = json.loads(spans_to_otlp_json_text(spans))
    return parsed


def spans_to_otlp_json_text(spans: Sequence[ReadableSpan]) -> str:
    """An OTLP JSON ``ExportTraceServiceRequest`` as one line of JSON text: lowerCamelCase, hex ids, integer enums,
    int64 as strings.

    Written straight from the SDK's spans, as the OTLP exporter's ``encode_spans`` builds its protobuf message and
    protobuf's ``json_format.MessageToDict`` renders it (default values left out, a set message kept even when
    empty); that route took three quarters of a traced engine's telemetry CPU, and building the same document as
    dicts for ``json.dumps`` still took most of the rest, so the text is written directly (strings escaped by the
    ``json`` module's own encoder). ``test_exporters`` holds the parsed text equal to
    :func:`spans_to_otlp_json_via_protobuf` over every kind of value, event, link and status.
    """
    # Resources group by equality, as the reference does, but a Resource's hash renders its attributes as JSON
    # each time: it is taken once per distinct resource object (a process's spans all share one), not per span
    groups: list[tuple[Any, dict[Any, list[str]]]] = []
    group_of: dict[Any, int] = {}
    group_of_object: dict[int, int] = {}
    for span in spans:
        resource = span.resource
        g = group_of_object.get(id(resource))
        if g is None:
            g = group_of.setdefault(resource, len(groups))
            if g == len(groups):
                groups.append((resource, {}))
            group_of_object[id(resource)] = g
        groups[g][1].setdefault(span.instrumentation_scope or None, []).append(_span_text(span))
    if not groups:
        return "{}"
    out: list[str] = []
    for resource, scopes in groups:
        scope_spans: list[str] = []
        for scope, texts in scopes.items():
            entry = ['"scope":' + _scope_text(scope), '"spans":[' + ",".join(texts) + "]"]
            if scope is not None and scope.schema_url:
                entry.append('"schemaUrl":' + _q(scope.schema_url))
            scope_spans.append("{" + ",".join(entry) + "}")
        rs = ['"resource":{' + ",".join(_attribute_parts(resource.attributes)) + "}",
              '"scopeSpans":[' + ",".join(scope_spans) + "]"]
        if resource.schema_url:
            rs.append('"schemaUrl":' + _q(resource.schema_url))
        out.append("{" + ",".join(rs) + "}")
    return '{"resourceSpans":[' + ",".join(out) + "]}"


def spans_to_otlp_json_via_protobuf(spans: Sequence[ReadableSpan]) -> dict[str, Any]:
    """The same document through the OTLP exporter's protobuf encoder and ``MessageToDict`` (the reference)."""
    from google.protobuf import json_format
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    message: dict[str, Any] = json_format.MessageToDict(encode_spans(spans), use_integers_for_enums=True)
    return _hex_ids_of(message)


# OTLP's SpanFlags: the parent's is-remote bit is known (0x100), and set (0x200)
_HAS_IS_REMOTE = 0x100
_IS_REMOTE = 0x200
# the SDK's SpanKind (INTERNAL = 0 ...) to OTLP's (SPAN_KIND_INTERNAL = 1 ...)
_KIND = {0: 1, 1: 2, 2: 3, 3: 4, 4: 5}
# OTLP's intValue is an int64: the reference encoder leaves other integers out, and so does this one
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
# a string as JSON, escaped as json.dumps(..., ensure_ascii=False) escapes it (the C encoder where there is one)
_q: Callable[[str], str] = json.encoder.encode_basestring


def _flags(parent: Any) -> int:
    return _HAS_IS_REMOTE | (_IS_REMOTE if parent is not None and parent.is_remote else 0)


def _span_text(span: ReadableSpan) -> str:
    ctx = span.get_span_context()
    if ctx is None:
        raise ValueError(f"span {span.name!r} has no span context")
    o = [f'"traceId":"{ctx.trace_id:032x}"', f'"spanId":"{ctx.span_id:016x}"']
    if ctx.trace_state:
        o.append('"traceState":' + _q(",".join(f"{k}={v}" for k, v in ctx.trace_state.items())))
    if span.parent is not None:
        o.append(f'"parentSpanId":"{span.parent.span_id:016x}"')
    o.append('"name":' + _q(span.name))
    o.append(f'"kind":{_KIND[span.kind.value]}')
    if span.start_time:
        o.append(f'"startTimeUnixNano":"{span.start_time}"')
    if span.end_time:
        o.append(f'"endTimeUnixNano":"{span.end_time}"')
    o.extend(_attribute_parts(span.attributes, span.dropped_attributes))
    if span.events:
        o.append('"events":[' + ",".join(_event_text(e) for e in span.events) + "]")
    if span.dropped_events:
        o.append(f'"droppedEventsCount":{span.dropped_events}')
    if span.links:
        o.append('"links":[' + ",".join(_link_text(link) for link in span.links) + "]")
    if span.dropped_links:
        o.append(f'"droppedLinksCount":{span.dropped_links}')
    status = []
    if span.status.description:
        status.append('"message":' + _q(span.status.description))
    if span.status.status_code.value:
        status.append(f'"code":{span.status.status_code.value}')
    o.append('"status":{' + ",".join(status) + "}")
    o.append(f'"flags":{_flags(span.parent)}')
    return "{" + ",".join(o) + "}"


def _event_text(event: Any) -> str:
    o = []
    if event.timestamp:
        o.append(f'"timeUnixNano":"{event.timestamp}"')
    o.append('"name":' + _q(event.name))
    o.extend(_attribute_parts(event.attributes, event.dropped_attributes))
    return "{" + ",".join(o) + "}"


def _link_text(link: Any) -> str:
    o = [f'"traceId":"{link.context.trace_id:032x}"', f'"spanId":"{link.context.span_id:016x}"']
    o.extend(_attribute_parts(link.attributes, link.dropped_attributes))
    o.append(f'"flags":{_flags(link.context)}')
    return "{" + ",".join(o) + "}"


def _scope_text(scope: Any) -> str:
    if scope is None:
        return "{}"
    o = []
    if scope.name:
        o.append('"name":' + _q(scope.name))
    if scope.version:
        o.append('"version":' + _q(scope.version))
    o.extend(_attribute_parts(scope.attributes))
    return "{" + ",".join(o) + "}"


def _attribute_parts(attributes: Any, dropped: int = 0) -> list[str]:
    """The members ``"attributes":[...]`` (when any is encodable) and ``"droppedAttributesCount"`` (when any)."""
    parts = []
    if attributes:
        encoded = []
        for k, v in attributes.items():
            try:
                encoded.append('{"key":' + _q(k) + ',"value":' + _value_text(v) + "}")
            except Exception as e:  # noqa: BLE001 - left out and said, as the OTLP exporter's encoder does
                LOG.warning("attribute %s left out of the export: %s", k, e)
        if encoded:
            parts.append('"attributes":[' + ",".join(encoded) + "]")
    if dropped:
        parts.append(f'"droppedAttributesCount":{dropped}')
    return parts


def _value_text(v: Any) -> str:
    t = type(v)  # the common exact types first: one lookup instead of a chain of isinstance checks
    if t is str:
        return '{"stringValue":' + _q(v) + "}"
    if t is int and _INT64_MIN <= v <= _INT64_MAX:
        return f'{{"intValue":"{v}"}}'
    if v is None:
        return "{}"
    if isinstance(v, bool):
        return '{"boolValue":true}' if v else '{"boolValue":false}'
    if isinstance(v, str):  # a str subclass (a str-valued enum, say) as its string value, not its str()
        return '{"stringValue":' + _q(v) + "}"
    if isinstance(v, int):
        if not _INT64_MIN <= v <= _INT64_MAX:
            raise TypeError(f"an integer attribute value out of int64's range: {int.__repr__(v)[:40]}")
        return '{"intValue":"' + int.__repr__(v) + '"}'
    if isinstance(v, float):
        if math.isfinite(v):
            return '{"doubleValue":' + float.__repr__(v) + "}"
        return '{"doubleValue":"' + ("NaN" if math.isnan(v) else ("Infinity" if v > 0 else "-Infinity")) + '"}'
    if isinstance(v, bytes):
        return '{"bytesValue":"' + base64.b64encode(v).decode("ascii") + '"}'
    if isinstance(v, Mapping):
        values = ['{"key":' + _q(str(k)) + ',"value":' + _value_text(x) + "}" for k, x in v.items()]
        return '{"kvlistValue":' + ('{"values":[' + ",".join(values) + "]}" if values else "{}") + "}"
    if isinstance(v, Sequence):
        items = [_value_text(x) for x in v]
        return '{"arrayValue":' + ('{"values":[' + ",".join(items) + "]}" if items else "{}") + "}"
    raise TypeError(f"an attribute value of type {type(v).__name__} has no OTLP form")


class JsonLinesSpanExporter(SpanExporter):
    """Appends one OTLP JSON ``ExportTraceServiceRequest`` per export to a file (the Java workers' format)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        # closed in shutdown; a lone surrogate (a surrogate-escaped path in a message, say) is written as its JSON
        # escape, not an error that would lose the whole batch
        self._file = open(self.path, "a", encoding="utf-8", errors="backslashreplace")  # noqa: SIM115

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        try:
            line = spans_to_otlp_json_text(spans)
            with self._lock:
                if self._file.closed:
                    return SpanExportResult.FAILURE
                self._file.write(line + "\n")
                self._file.flush()
            return SpanExportResult.SUCCESS
        except Exception as e:  # noqa: BLE001 - an exporter must not raise
            LOG.warning("span export to file %s failed: %s", self.path, e)
            return SpanExportResult.FAILURE

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True

    def shutdown(self) -> None:
        with self._lock:
            self._file.close()


class _Counter(Protocol):
    """What a counting exporter adds its counts to (the process's span counters)."""

    def add(self, key: str, n: int = 1, exporter: str | None = None) -> int: ...


class _CountingExporter(SpanExporter):
    """Counts what its exporter exported and what failed, under the exporter's name (``file``, ``otlp``)."""

    def __init__(self, delegate: SpanExporter, destination: str, counts: _Counter, name: str = "") -> None:
        self.delegate = delegate
        self.destination = destination
        self._counts = counts
        self.name = name or destination.split(" ")[0].lower()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        try:
            result = self.delegate.export(spans)
        except Exception as e:  # noqa: BLE001
            LOG.warning("span export to %s failed: %s", self.destination, e)
            result = SpanExportResult.FAILURE
        if result == SpanExportResult.SUCCESS:
            self._counts.add("exported", len(spans), self.name)
        else:
            total = self._counts.add("failed", len(spans), self.name)
            LOG.warning("span export to %s failed for %d span(s) (%d failed so far)", self.destination,
                        len(spans), total)
        return result

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return self.delegate.force_flush(timeout_millis)

    def shutdown(self) -> None:
        self.delegate.shutdown()


class _CompositeExporter(SpanExporter):
    """Exports to each exporter in turn; succeeds only if all did."""

    def __init__(self, exporters: Sequence[SpanExporter]) -> None:
        self.exporters = list(exporters)

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        results = [e.export(spans) for e in self.exporters]
        ok = all(r == SpanExportResult.SUCCESS for r in results)
        return SpanExportResult.SUCCESS if ok else SpanExportResult.FAILURE

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return all(e.force_flush(timeout_millis) for e in self.exporters)

    def shutdown(self) -> None:
        for e in self.exporters:
            e.shutdown()


def otlp_exporter(cfg: OtlpConfig) -> SpanExporter:
    """An OTLP span exporter for the resolved settings, every argument explicit (imported only when used)."""
    timeout_s = max(cfg.timeout_ms, 1) / 1000.0
    tls = urllib.parse.urlparse(cfg.endpoint).scheme == "https"
    if cfg.protocol == "grpc":
        import grpc
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter

        credentials = None
        if tls:
            def read(p: str | None) -> bytes | None:
                return Path(p).read_bytes() if p else None
            credentials = grpc.ssl_channel_credentials(root_certificates=read(cfg.certificate),
                                                       private_key=read(cfg.client_key),
                                                       certificate_chain=read(cfg.client_certificate))
        retryable = frozenset({grpc.StatusCode.CANCELLED, grpc.StatusCode.DEADLINE_EXCEEDED,
                               grpc.StatusCode.RESOURCE_EXHAUSTED, grpc.StatusCode.ABORTED,
                               grpc.StatusCode.OUT_OF_RANGE, grpc.StatusCode.UNAVAILABLE,
                               grpc.StatusCode.DATA_LOSS})
        return GrpcExporter(endpoint=cfg.endpoint, insecure=not tls, credentials=credentials,
                            headers=dict(cfg.headers), timeout=timeout_s,
                            compression=grpc.Compression.Gzip if cfg.gzip else grpc.Compression.NoCompression,
                            retryable_error_codes=retryable)
    import requests
    from opentelemetry.exporter.otlp.proto.http import Compression
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter

    return HttpExporter(endpoint=cfg.endpoint, certificate_file=cfg.certificate, client_key_file=cfg.client_key,
                        client_certificate_file=cfg.client_certificate, headers=dict(cfg.headers),
                        timeout=timeout_s, compression=Compression.Gzip if cfg.gzip else Compression.NoCompression,
                        session=requests.Session())
