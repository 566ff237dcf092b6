"""The run's telemetry settings, read from the environment the Java driver built.

``RAVEL_TELEMETRY_*`` carries the run's telemetry config (as ``TelemetryConfig.toEnvironment`` writes it) and
``RAVEL_OTLP_*`` the driver's resolved OTLP settings (as ``OtlpSettings.toWorkerEnvironment`` writes them);
``OTEL_*`` is never read here.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import names

ENV_PREFIX = names.TELEMETRY_ENV_PREFIX
OTLP_PREFIX = names.OTLP_ENV_PREFIX

SPAN_GROUPS: tuple[str, ...] = names.SPAN_GROUPS
PRESETS: dict[str, frozenset[str]] = names.PRESETS
EXPORTERS: tuple[str, ...] = names.EXPORTERS


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
