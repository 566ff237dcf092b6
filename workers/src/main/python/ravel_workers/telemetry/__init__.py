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

Modules: :mod:`.config` (the settings from the environment), :mod:`.exporters` (the span exporters),
:mod:`.process` (the process's telemetry), :mod:`.startup` (an actor's start-up spans). Every public name is
re-exported here.
"""

from __future__ import annotations

from .config import (
    ENV_PREFIX,
    EXPORTERS,
    OTLP_PREFIX,
    PRESETS,
    SPAN_GROUPS,
    OtlpConfig,
    TelemetrySettings,
    parse_headers,
)
from .exporters import JsonLinesSpanExporter, otlp_exporter, spans_to_otlp_json, spans_to_otlp_json_text
from .process import ENGINE_SCOPE, SCOPE, ProcessTelemetry, process_telemetry, ray_resource
from .startup import startup_parent, startup_span

__all__ = [
    "ENGINE_SCOPE",
    "ENV_PREFIX",
    "EXPORTERS",
    "OTLP_PREFIX",
    "PRESETS",
    "SCOPE",
    "SPAN_GROUPS",
    "JsonLinesSpanExporter",
    "OtlpConfig",
    "ProcessTelemetry",
    "TelemetrySettings",
    "otlp_exporter",
    "parse_headers",
    "process_telemetry",
    "ray_resource",
    "spans_to_otlp_json",
    "spans_to_otlp_json_text",
    "startup_parent",
    "startup_span",
]
