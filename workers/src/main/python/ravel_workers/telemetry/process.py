"""The process's telemetry: its tracer provider, exporters, span counters, bounded flush and shutdown.

Spans go through one ``BatchSpanProcessor`` to the run's exporters: a JSON Lines file
``<runs_dir>/<run_id>/traces-<role>-<pid>.jsonl`` and/or OTLP. :class:`ProcessTelemetry` counts spans
ended, exported, failed and dropped, like the Java ``ProcessTelemetry``; :func:`process_telemetry` starts
one per role and process from ``os.environ``.
"""

from __future__ import annotations

import atexit
import logging
import os
import socket
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanLimits, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_ON

from .. import names
from ..wire import ExportStats
from .config import ENV_PREFIX, OtlpConfig, TelemetrySettings
from .exporters import JsonLinesSpanExporter, _CompositeExporter, _CountingExporter, otlp_exporter

LOG = logging.getLogger(__name__)

#: Instrumentation scope of the role spans (as the Java ``Spans.SCOPE``).
SCOPE = names.SCOPE
#: Instrumentation scope of the engine's ``llm_request`` spans (as ``EngineNames.INSTRUMENTATION_SCOPE``).
ENGINE_SCOPE = names.ENGINE_SCOPE


def _sdk_version() -> str:
    try:
        from opentelemetry.sdk.version import __version__
        return str(__version__)
    except ImportError:  # pragma: no cover
        return "unknown"


class _Counts:
    """Thread-safe span counters: the process's totals, and exported/failed per exporter (``file``, ``otlp``).

    The exporters share one batch processor, so a span it drops is dropped for each of them.
    """

    def __init__(self, exporters: tuple[str, ...] = ()) -> None:
        self._lock = threading.Lock()
        self._values = {"ended": 0, "exported": 0, "failed": 0, "dropped": 0}
        self._per: dict[str, dict[str, int]] = {e: {"exported": 0, "failed": 0} for e in exporters}

    def add(self, key: str, n: int = 1, exporter: str | None = None) -> int:
        with self._lock:
            self._values[key] += n
            if exporter is not None:
                per = self._per.setdefault(exporter, {"exported": 0, "failed": 0})
                per[key] += n
                return per[key]
            return self._values[key]

    def snapshot(self) -> ExportStats:
        with self._lock:
            dropped = self._values["dropped"]
            per = {e: {"exported": c["exported"], "failed": c["failed"], "dropped": dropped}
                   for e, c in self._per.items()}
            return ExportStats(**self._values, exporters=per)


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


class ProcessTelemetry:
    """One process's telemetry: tracer provider, exporters, counters, bounded flush and shutdown.

    ``tracer`` opens the role spans (scope ``dev.ravel``) and ``engine_tracer`` the ``llm_request`` spans;
    both are no-op tracers when telemetry is off. ``worker_spans`` says whether the WORKER group is on,
    ``engine_tracing`` whether the engine emits its spans.

    The batch processor exports every ``schedule_delay_ms`` and whenever ``max_export_batch_size`` spans wait
    (default half the queue, at most 2,048: an OTLP request of them stays well under a collector's 4 MiB limit).
    Not the SDK's 512: a generate call of 128 requests ends 512 engine spans at once,
    and a batch of 512 then started its export (the encoding holds the GIL) just as the call's answer was being
    encoded and returned, which lengthened the driver's wait (issue 32: the hop at ``all`` with engine spans at 1.0
    on the digit task went from 1.30 to 1.15, docs/benchmarks.md).
    """

    def __init__(self, settings: TelemetrySettings, role: str, otlp: OtlpConfig | None = None,
                 resource_attributes: Mapping[str, Any] | None = None, schedule_delay_ms: int = 500,
                 max_queue_size: int = 8192, max_export_batch_size: int | None = None) -> None:
        self.settings = settings
        self.role = role
        self.pid = os.getpid()
        self._counts = _Counts(tuple(e for e, on in (("file", settings.exporter in ("file", "both")),
                                                     ("otlp", settings.exporter in ("otlp", "both")))
                                     if on and settings.enabled))
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
            names.HOST_NAME: socket.gethostname(),
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
                                               self._counts, "file"))
        if settings.exporter in ("otlp", "both"):
            cfg = otlp or OtlpConfig()
            exporters.append(_CountingExporter(otlp_exporter(cfg), f"OTLP {cfg.endpoint}", self._counts, "otlp"))
        if exporters:
            exporter = exporters[0] if len(exporters) == 1 else _CompositeExporter(exporters)
            processor = BatchSpanProcessor(exporter, max_queue_size=max_queue_size,
                                           schedule_delay_millis=schedule_delay_ms,
                                           max_export_batch_size=max_export_batch_size
                                           or max(1, min(2048, max_queue_size // 2)),
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
    def refit_spans(self) -> bool:
        """Whether the REFIT span group is on (the refit's stage spans ``rl.refit.*`` are opened)."""
        return self.settings.is_on("refit")

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
    """``ray.job.id``, ``ray.actor.id``, ``ray.node.id``, ``ray.node.ip`` of the current Ray worker ({} outside Ray)."""
    try:
        import ray

        if not ray.is_initialized():
            return {}
        ctx = ray.get_runtime_context()
        out = {names.RAY_JOB_ID: ctx.get_job_id(), names.RAY_NODE_ID: ctx.get_node_id(),
               names.RAY_NODE_IP: ray.util.get_node_ip_address()}  # type: ignore[no-untyped-call]
        actor = ctx.get_actor_id()
        if actor:
            out[names.RAY_ACTOR_ID] = actor
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
