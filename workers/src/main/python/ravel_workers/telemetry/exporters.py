"""The span exporters: the JSON Lines file the Java workers also write, OTLP, and counting and composite ones.

:class:`JsonLinesSpanExporter` appends one OTLP JSON ``ExportTraceServiceRequest`` per export to a file;
:func:`otlp_exporter` builds an OTLP exporter (gRPC or http/protobuf) with every argument explicit.
"""

from __future__ import annotations

import base64
import json
import logging
import threading
import urllib.parse
from collections.abc import Sequence
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
    """An OTLP JSON ``ExportTraceServiceRequest``: lowerCamelCase, hex ids, integer enums, int64 as strings."""
    from google.protobuf import json_format
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    message: dict[str, Any] = json_format.MessageToDict(encode_spans(spans), use_integers_for_enums=True)
    return _hex_ids_of(message)


class JsonLinesSpanExporter(SpanExporter):
    """Appends one OTLP JSON ``ExportTraceServiceRequest`` per export to a file (the Java workers' format)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._file = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - closed in shutdown

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        try:
            line = json.dumps(spans_to_otlp_json(spans), separators=(",", ":"), ensure_ascii=False)
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
