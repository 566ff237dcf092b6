"""An actor's start-up spans in the run's start-up trace (docs/design.md, "Span placement").

The driver names, in the environment of each actor it creates while a run starts
(:data:`~ravel_workers.names.STARTUP_TRACEPARENT_ENV`), the span of the actor's role (``rl.run.actors.<role>``) as a W3C
``traceparent``; the constructor's work (a model loaded, an engine built) is a span under it, as the Java actors'
(``RavelActor.startupSpan``). An actor created otherwise, or one Ray restarted, opens none: never a trace of its own.
Telemetry never fails an actor's start: what tracing raises here is logged, not raised.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator, Mapping

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from .. import names
from .process import ProcessTelemetry

LOG = logging.getLogger(__name__)


def _restarted() -> bool:
    """Whether Ray restarted the current actor (False outside a Ray actor)."""
    try:
        import ray

        if not ray.is_initialized():
            return False
        return bool(ray.get_runtime_context().was_current_actor_reconstructed)
    except Exception as e:  # noqa: BLE001 - not in an actor, or the GCS cannot say: a first start
        LOG.debug("cannot tell whether this actor was restarted: %s", e)
        return False


def startup_parent(env: Mapping[str, str] | None = None) -> Context | None:
    """The parent of this actor's start-up spans: the span named in ``env`` (default ``os.environ``); None when
    there is none, it is malformed, or Ray restarted the actor (the variable still names its first creation)."""
    value = (os.environ if env is None else env).get(names.STARTUP_TRACEPARENT_ENV, "").strip()
    if not value:
        return None
    ctx = TraceContextTextMapPropagator().extract({"traceparent": value})
    if not trace.get_current_span(ctx).get_span_context().is_valid:
        return None
    return None if _restarted() else ctx


@contextlib.contextmanager
def startup_span(telemetry: ProcessTelemetry, name: str,
                 env: Mapping[str, str] | None = None) -> Iterator[trace.Span]:
    """A start-up span ``name`` (``rl.worker.start_backend``, ``rl.trainer.load_model``) under :func:`startup_parent`,
    current inside the block, when the worker span group is on; a non-recording span otherwise."""
    parent: Context | None = None
    try:
        parent = startup_parent(env) if telemetry.worker_spans else None
    except Exception as e:  # noqa: BLE001 - telemetry never fails a start
        LOG.warning("the actor's start-up is not traced: %s", e)
    if parent is None:
        yield trace.INVALID_SPAN
        return
    with telemetry.tracer.start_as_current_span(name, context=parent) as span:
        yield span
