"""The process's OpenTelemetry SDK, started from the environment the Java driver built.

Reads ``RAVEL_TELEMETRY_*`` (the run's telemetry config, as ``TelemetryConfig.toEnvironment`` writes it) and
``RAVEL_OTLP_*`` (the driver's resolved OTLP settings, as ``OtlpSettings.toWorkerEnvironment`` writes them),
never ``OTEL_*``: the resource is built explicitly (not ``Resource.create``, which reads
``OTEL_RESOURCE_ATTRIBUTES``), and the sampler, span limits, batch processor and OTLP exporters get every
argument explicitly. (Where an OTLP exporter's argument is empty, such as no headers, the exporter itself
still looks at its ``OTEL_*`` variable; the driver's environment policy masks those.)

Spans go through one ``BatchSpanProcessor`` to the run's exporters: a JSON Lines file
``<runs_dir>/<run_id>/traces-<role>-<pid>.jsonl`` (one OTLP JSON ``ExportTraceServiceRequest`` per line,
as the Java workers write) and/or OTLP over gRPC or http/protobuf. :class:`ProcessTelemetry` counts spans
ended, exported, failed and dropped, like the Java ``ProcessTelemetry``.

A process started without ``RAVEL_TELEMETRY_RUN_ID`` was not created through Ravel's environment policy:
it logs a warning and runs with telemetry off (no-op tracers).
"""

from __future__ import annotations

import atexit
import base64
import json
import logging
import os
import threading
import time
import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanLimits, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.sampling import ALWAYS_ON

from . import names
from .wire import ExportStats

LOG = logging.getLogger(__name__)

ENV_PREFIX = names.TELEMETRY_ENV_PREFIX
OTLP_PREFIX = names.OTLP_ENV_PREFIX

#: Instrumentation scope of the role spans (as the Java ``Spans.SCOPE``).
SCOPE = names.SCOPE
#: Instrumentation scope of the engine's ``llm_request`` spans (as ``EngineNames.INSTRUMENTATION_SCOPE``).
ENGINE_SCOPE = names.ENGINE_SCOPE

SPAN_GROUPS: tuple[str, ...] = names.SPAN_GROUPS
PRESETS: dict[str, frozenset[str]] = names.PRESETS
EXPORTERS: tuple[str, ...] = names.EXPORTERS


def _sdk_version() -> str:
    try:
        from opentelemetry.sdk.version import __version__
        return str(__version__)
    except ImportError:  # pragma: no cover
        return "unknown"


# ---------------------------------------------------------------------------------------------- config


def _attributes(name: str, text: str) -> tuple[tuple[str, str], ...]:
    """``key=value,key=value`` with %-encoded values, as ``TelemetryConfig.toEnvironment`` writes them."""
    out: list[tuple[str, str]] = []
    for i, part in enumerate(text.split(",")):
        part = part.strip()
        if not part:
            continue
        key, eq, value = part.partition("=")
        if not eq or not key.strip():
            raise ValueError(f"{name}: entry {i + 1} is not of the form key=value")
        out.append((key.strip(), urllib.parse.unquote(value.strip())))
    return tuple(out)


@dataclass(frozen=True)
class TelemetrySettings:
    """The run's telemetry config as ``RAVEL_TELEMETRY_*`` carries it (the Java ``TelemetryConfig``)."""

    enabled: bool = True
    preset: str = "per_step"
    span_groups: frozenset[str] = frozenset()
    engine_tracing_setting: bool | None = None
    engine_sample_ratio: float = 1.0
    engine_slow_request_ms: int = 2000
    exporter_setting: str = "file"
    run_id: str = ""
    service_name: str = "ravel"
    resource_attributes: tuple[tuple[str, str], ...] = ()
    runs_dir: str = "runs"
    shutdown_timeout_ms: int = 10_000

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> TelemetrySettings:
        """Reads ``RAVEL_TELEMETRY_<KEY>``; an empty value counts as unset; invalid values name the variable."""

        def get(key: str) -> str | None:
            v = env.get(ENV_PREFIX + key)
            return v if v else None

        def boolean(key: str, default: bool | None) -> bool | None:
            v = get(key)
            if v is None:
                return default
            if v.strip().lower() in ("true", "false"):
                return v.strip().lower() == "true"
            raise ValueError(f"{ENV_PREFIX}{key}: expected true or false, got '{v}'")

        def number(key: str, default: float, conv: type = float) -> Any:
            v = get(key)
            if v is None:
                return default
            try:
                return conv(v.strip())
            except ValueError:
                raise ValueError(f"{ENV_PREFIX}{key}: expected a number, got '{v}'") from None

        preset = (get("PRESET") or "per_step").strip().lower()
        if preset not in PRESETS:
            raise ValueError(f"{ENV_PREFIX}PRESET: unknown preset '{preset}' (valid: {', '.join(PRESETS)})")
        groups = frozenset(g.strip().lower() for g in (get("SPAN_GROUPS") or "").split(",") if g.strip())
        unknown = sorted(groups - set(SPAN_GROUPS))
        if unknown:
            raise ValueError(f"{ENV_PREFIX}SPAN_GROUPS: unknown span group '{unknown[0]}'")
        exporter = (get("EXPORTER") or "file").strip().lower()
        if exporter not in EXPORTERS:
            raise ValueError(f"{ENV_PREFIX}EXPORTER: unknown exporter '{exporter}' (valid: {', '.join(EXPORTERS)})")
        ratio = number("ENGINE_SAMPLE_RATIO", 1.0)
        if not 0.0 <= ratio <= 1.0:
            raise ValueError(f"{ENV_PREFIX}ENGINE_SAMPLE_RATIO: must be between 0.0 and 1.0, got {ratio}")
        return cls(enabled=bool(boolean("ENABLED", True)), preset=preset, span_groups=groups,
                   engine_tracing_setting=boolean("ENGINE_TRACING", None), engine_sample_ratio=ratio,
                   engine_slow_request_ms=number("ENGINE_SLOW_REQUEST_MS", 2000, int), exporter_setting=exporter,
                   run_id=get("RUN_ID") or "", service_name=get("SERVICE_NAME") or "ravel",
                   resource_attributes=_attributes(ENV_PREFIX + "RESOURCE_ATTRIBUTES",
                                                   get("RESOURCE_ATTRIBUTES") or ""),
                   runs_dir=get("RUNS_DIR") or "runs",
                   shutdown_timeout_ms=number("SHUTDOWN_TIMEOUT_MS", 10_000, int))

    @property
    def engine_tracing(self) -> bool:
        """Engine spans on: explicitly, else by the preset ``all`` or the ``engine`` group; never when disabled."""
        if not self.enabled:
            return False
        if self.engine_tracing_setting is not None:
            return self.engine_tracing_setting
        return self.preset == "all" or "engine" in self.span_groups

    @property
    def groups(self) -> frozenset[str]:
        """The span groups that are on (the preset's plus the explicit ones, ``engine`` following tracing)."""
        if not self.enabled:
            return frozenset()
        g = set(PRESETS[self.preset]) | set(self.span_groups)
        g.discard("engine")
        if self.engine_tracing:
            g.add("engine")
        return frozenset(g)

    def is_on(self, group: str) -> bool:
        return group in self.groups

    @property
    def exporter(self) -> str:
        return self.exporter_setting if self.enabled else "none"

    @property
    def run_dir(self) -> Path:
        return Path(self.runs_dir).absolute() / self.run_id


@dataclass(frozen=True)
class OtlpConfig:
    """The driver's resolved OTLP settings, as ``RAVEL_OTLP_*`` carries them (``OtlpSettings``)."""

    endpoint: str = "http://127.0.0.1:4317"
    protocol: str = "grpc"
    headers: dict[str, str] = field(default_factory=dict)
    certificate: str | None = None
    client_key: str | None = None
    client_certificate: str | None = None
    timeout_ms: int = 10_000
    gzip: bool = False

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> OtlpConfig:
        def get(key: str) -> str | None:
            v = env.get(OTLP_PREFIX + key)
            return v.strip() if v and v.strip() else None

        protocol = (get("PROTOCOL") or "grpc").lower()
        if protocol not in ("grpc", "http/protobuf"):
            raise ValueError(f"{OTLP_PREFIX}PROTOCOL: unknown protocol '{protocol}' (valid: grpc, http/protobuf)")
        default = "http://127.0.0.1:4317" if protocol == "grpc" else "http://127.0.0.1:4318/v1/traces"
        endpoint = get("ENDPOINT") or default
        if urllib.parse.urlparse(endpoint).scheme not in ("http", "https"):
            raise ValueError(f"{OTLP_PREFIX}ENDPOINT: URL must start with http:// or https://, got '{endpoint}'")
        raw_headers = get("HEADERS")
        headers_file = get("HEADERS_FILE")
        if headers_file:
            try:
                raw_headers = Path(headers_file).read_text(encoding="utf-8").strip()
            except OSError as e:
                raise ValueError(f"{OTLP_PREFIX}HEADERS_FILE: cannot read {headers_file} (on a multi-node cluster "
                                 f"the run folder must be on storage every node sees): {e}") from None
        timeout = get("TIMEOUT") or "10000"
        try:
            timeout_ms = int(timeout)
        except ValueError:
            raise ValueError(f"{OTLP_PREFIX}TIMEOUT: expected milliseconds, got '{timeout}'") from None
        compression = (get("COMPRESSION") or "none").lower()
        if compression not in ("gzip", "none"):
            raise ValueError(f"{OTLP_PREFIX}COMPRESSION: unknown compression '{compression}' (valid: gzip, none)")
        return cls(endpoint=endpoint, protocol=protocol, headers=parse_headers(raw_headers or ""),
                   certificate=get("CERTIFICATE"), client_key=get("CLIENT_KEY"),
                   client_certificate=get("CLIENT_CERTIFICATE"), timeout_ms=timeout_ms, gzip=compression == "gzip")

    def __repr__(self) -> str:  # header values are secret
        return (f"OtlpConfig(endpoint={self.endpoint}, protocol={self.protocol}, headers={sorted(self.headers)} "
                f"(values hidden), timeout_ms={self.timeout_ms}, gzip={self.gzip})")


def parse_headers(raw: str) -> dict[str, str]:
    """``k=v,k2=v2`` with URL-encoded values; names lower-cased. Errors name the entry, never its value."""
    out: dict[str, str] = {}
    for i, part in enumerate(raw.split(",")):
        part = part.strip()
        if not part:
            continue
        name, eq, value = part.partition("=")
        if not eq or not name.strip():
            raise ValueError(f"{OTLP_PREFIX}HEADERS: entry {i + 1} is not of the form key=value")
        out[name.strip().lower()] = urllib.parse.unquote(value.strip())
    return out


# ---------------------------------------------------------------------------------------------- exporters


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


class _CountingExporter(SpanExporter):
    """Counts what its exporter exported and what failed."""

    def __init__(self, delegate: SpanExporter, destination: str, counts: _Counts) -> None:
        self.delegate = delegate
        self.destination = destination
        self._counts = counts

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        try:
            result = self.delegate.export(spans)
        except Exception as e:  # noqa: BLE001
            LOG.warning("span export to %s failed: %s", self.destination, e)
            result = SpanExportResult.FAILURE
        if result == SpanExportResult.SUCCESS:
            self._counts.add("exported", len(spans))
        else:
            total = self._counts.add("failed", len(spans))
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


# ---------------------------------------------------------------------------------------------- counting


class _Counts:
    """Thread-safe span counters."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._values = {"ended": 0, "exported": 0, "failed": 0, "dropped": 0}

    def add(self, key: str, n: int = 1) -> int:
        with self._lock:
            self._values[key] += n
            return self._values[key]

    def snapshot(self) -> ExportStats:
        with self._lock:
            return ExportStats(**self._values)


class _EndCounter(SpanProcessor):
    """Counts sampled spans as they end, in front of the batch processor."""

    def __init__(self, counts: _Counts) -> None:
        self._counts = counts

    def on_start(self, span: Any, parent_context: Context | None = None) -> None:
        pass

    def on_end(self, span: ReadableSpan) -> None:
        if span.context is not None and span.context.trace_flags.sampled:
            self._counts.add("ended")

    def shutdown(self) -> None:
        pass

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True


class _DropMetrics:
    """Stands in for the batch processor's (env-gated) self-metrics to count the spans it drops."""

    def __init__(self, counts: _Counts) -> None:
        self._counts = counts

    def register_queue_size(self, get_queue_size: Any) -> None:
        pass

    def drop_items(self, count: int, error_type: str = "queue_full") -> None:
        self._counts.add("dropped", count)

    def finish_items(self, count: int) -> None:
        pass


# ---------------------------------------------------------------------------------------------- process


class ProcessTelemetry:
    """One process's telemetry: tracer provider, exporters, counters, bounded flush and shutdown.

    ``tracer`` opens the role spans (scope ``dev.ravel``) and ``engine_tracer`` the ``llm_request`` spans;
    both are no-op tracers when telemetry is off. ``worker_spans`` says whether the WORKER group is on,
    ``engine_tracing`` whether the engine emits its spans.
    """

    def __init__(self, settings: TelemetrySettings, role: str, otlp: OtlpConfig | None = None,
                 resource_attributes: Mapping[str, Any] | None = None, schedule_delay_ms: int = 500,
                 max_queue_size: int = 8192) -> None:
        self.settings = settings
        self.role = role
        self.pid = os.getpid()
        self._counts = _Counts()
        self._closed = False
        self._lock = threading.Lock()
        attrs: dict[str, Any] = dict(settings.resource_attributes)  # the user's first: Ravel's own keys win
        attrs |= {
            "telemetry.sdk.language": "python",
            "telemetry.sdk.name": "opentelemetry",
            "telemetry.sdk.version": _sdk_version(),
            "service.name": settings.service_name,
            names.RUN_ID: settings.run_id,
            names.PROCESS_ROLE: role,
            names.PROCESS_PID: self.pid,
        }
        attrs.update({k: v for k, v in (resource_attributes or {}).items() if v is not None})
        self.resource = Resource(attrs)
        self.span_file: Path | None = None
        self.provider: TracerProvider | None = None
        if not settings.enabled:
            self.tracer: trace.Tracer = trace.NoOpTracer()
            self.engine_tracer: trace.Tracer = trace.NoOpTracer()
            return
        limits = SpanLimits(max_attributes=128, max_events=128, max_links=128, max_span_attributes=128,
                            max_event_attributes=128, max_link_attributes=128,
                            max_attribute_length=SpanLimits.UNSET, max_span_attribute_length=SpanLimits.UNSET)
        self.provider = TracerProvider(sampler=ALWAYS_ON, resource=self.resource, shutdown_on_exit=False,
                                       span_limits=limits)
        self.provider.add_span_processor(_EndCounter(self._counts))
        exporters: list[SpanExporter] = []
        if settings.exporter in ("file", "both"):
            self.span_file = settings.run_dir / f"traces-{role}-{self.pid}.jsonl"
            exporters.append(_CountingExporter(JsonLinesSpanExporter(self.span_file), f"file {self.span_file}",
                                               self._counts))
        if settings.exporter in ("otlp", "both"):
            cfg = otlp or OtlpConfig()
            exporters.append(_CountingExporter(otlp_exporter(cfg), f"OTLP {cfg.endpoint}", self._counts))
        if exporters:
            exporter = exporters[0] if len(exporters) == 1 else _CompositeExporter(exporters)
            processor = BatchSpanProcessor(exporter, max_queue_size=max_queue_size,
                                           schedule_delay_millis=schedule_delay_ms,
                                           max_export_batch_size=min(512, max_queue_size),
                                           export_timeout_millis=30_000)
            batch = getattr(processor, "_batch_processor", None)
            if batch is not None and hasattr(batch, "_metrics"):
                batch._metrics = _DropMetrics(self._counts)  # count drops without the env-gated SDK metrics
            self.provider.add_span_processor(processor)
        self.tracer = self.provider.get_tracer(SCOPE)
        self.engine_tracer = self.provider.get_tracer(ENGINE_SCOPE)

    @classmethod
    def from_env(cls, role: str, env: Mapping[str, str] | None = None,
                 resource_attributes: Mapping[str, Any] | None = None) -> ProcessTelemetry:
        """The telemetry of a process with role ``role`` from ``env`` (default ``os.environ``)."""
        env = os.environ if env is None else env
        if not env.get(ENV_PREFIX + "RUN_ID"):
            LOG.warning("actor %s started without Ravel's worker environment (no %sRUN_ID): its telemetry is off."
                        " Create actors through the Ravel driver so the environment policy applies.", role,
                        ENV_PREFIX)
            return cls(TelemetrySettings(enabled=False, exporter_setting="none"), role,
                       resource_attributes=resource_attributes)
        settings = TelemetrySettings.from_env(env)
        otlp = OtlpConfig.from_env(env) if settings.exporter in ("otlp", "both") else None
        return cls(settings, role, otlp, resource_attributes)

    @classmethod
    def disabled(cls, role: str) -> ProcessTelemetry:
        """Telemetry that is off (no-op tracers, nothing written)."""
        return cls(TelemetrySettings(enabled=False, exporter_setting="none"), role)

    @property
    def enabled(self) -> bool:
        return self.settings.enabled

    @property
    def worker_spans(self) -> bool:
        """Whether the WORKER span group is on (role spans ``rl.<spans>.<method>`` are opened)."""
        return self.settings.is_on("worker")

    @property
    def engine_tracing(self) -> bool:
        """Whether the engine emits ``llm_request`` spans."""
        return self.settings.engine_tracing

    def stats(self) -> ExportStats:
        return self._counts.snapshot()

    def flush(self, timeout_ms: int | None = None) -> bool:
        """Exports what is queued, waiting at most ``timeout_ms``; False if it did not finish in time."""
        if self.provider is None or self._closed:
            return True
        timeout = self.settings.shutdown_timeout_ms if timeout_ms is None else max(int(timeout_ms), 1)
        return bool(self.provider.force_flush(timeout))

    def shutdown(self) -> None:
        """Flushes and shuts down within the configured shutdown timeout. Never raises; idempotent."""
        with self._lock:
            if self._closed or self.provider is None:
                self._closed = True
                return
            self._closed = True
        budget = self.settings.shutdown_timeout_ms
        start = time.monotonic()
        try:
            flushed = bool(self.provider.force_flush(budget))
            self.provider.shutdown()
            s = self.stats()
            if not flushed or s.failed or s.dropped:
                LOG.warning("telemetry of %s (%s) closed with %s%s", self.role, self.settings.run_id, s,
                            "" if flushed else f" (flush did not finish within {budget} ms)")
        except Exception as e:  # noqa: BLE001
            LOG.warning("telemetry shutdown of %s failed after %.1fs: %s", self.role, time.monotonic() - start, e)


_process: dict[str, ProcessTelemetry] = {}
_process_lock = threading.Lock()


def ray_resource() -> dict[str, str]:
    """``ray.job.id``, ``ray.actor.id``, ``ray.node.id`` of the current Ray worker ({} outside Ray)."""
    try:
        import ray

        if not ray.is_initialized():
            return {}
        ctx = ray.get_runtime_context()
        out = {"ray.job.id": ctx.get_job_id(), "ray.node.id": ctx.get_node_id()}
        actor = ctx.get_actor_id()
        if actor:
            out["ray.actor.id"] = actor
        return {k: str(v) for k, v in out.items() if v}
    except Exception as e:  # noqa: BLE001 - no Ray, or no runtime context
        LOG.debug("no Ray runtime context for the telemetry resource: %s", e)
        return {}


def process_telemetry(role: str) -> ProcessTelemetry:
    """This process's telemetry for ``role``, started once from ``os.environ`` and shut down at exit."""
    with _process_lock:
        t = _process.get(role)
        if t is None:
            t = ProcessTelemetry.from_env(role, resource_attributes=ray_resource())
            _process[role] = t
            atexit.register(t.shutdown)
        return t
