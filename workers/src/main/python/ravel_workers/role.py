"""``role_method``: the receiving side of every Java call into a Python actor.

A role class names itself with the class attributes ``ROLE`` (``generation_worker``) and ``SPANS``
(``worker``) and holds its :class:`~ravel_workers.telemetry.ProcessTelemetry` as ``self.telemetry``. Each
method Java calls is written with typed parameters and decorated::

    class GenerationWorkerImpl:
        ROLE, SPANS = "generation_worker", "worker"

        @role_method()
        def generate(self, requests: list[GenerationRequest]) -> list[GenerationResult]: ...

The decorated method is what Ray exposes: ``generate(carrier, args, *refs) -> bytes``. It resumes the W3C
``carrier`` as the parent context, opens ``rl.<SPANS>.<method>`` (kind SERVER, attributes
``rl.actor.role`` and ``rl.actor.method``; only while the WORKER span group is on), decodes ``args``
(``{"$ref": i}`` replaced by ``refs[i]``, then each argument converted to its annotated type), calls the
method, and returns the UTF-8 JSON of the result's wire form (a generate call's results in their binary form,
:mod:`ravel_workers.wire.results`; or the result itself for ``raw_result=True``, which Ray serialises as it is:
bytes stay bytes, readable by Java; anything else is for Python only, an object whose reference the Java caller
passes on unread, such as the trainer's weights). An exception is recorded on the span (an ``exception`` event,
status ERROR) and re-raised. ``traced=False`` resumes the context but opens no span. The undecorated method
stays reachable as ``Class.method.typed`` (not ``__wrapped__``: Ray follows that to validate calls against the
signature).
"""

from __future__ import annotations

import functools
import inspect
import json
import typing
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from opentelemetry import context as otel_context
from opentelemetry.baggage.propagation import W3CBaggagePropagator
from opentelemetry.propagators.composite import CompositePropagator
from opentelemetry.trace import SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from . import names, wire

if TYPE_CHECKING:
    from .telemetry import ProcessTelemetry

F = TypeVar("F", bound=Callable[..., Any])

#: The W3C propagators, built explicitly (the global propagator would read OTEL_PROPAGATORS).
PROPAGATOR = CompositePropagator([TraceContextTextMapPropagator(), W3CBaggagePropagator()])
TRACE_CONTEXT = TraceContextTextMapPropagator()


def extract_carrier(carrier: str | bytes | Mapping[str, str] | None) -> otel_context.Context:
    """The context of a carrier JSON ``{"traceparent", "tracestate", "baggage"}`` (empty entries ignored)."""
    if carrier is None or carrier == "" or carrier == b"":
        return otel_context.Context()
    values = json.loads(carrier) if isinstance(carrier, (str, bytes)) else dict(carrier)
    if not isinstance(values, dict):
        raise ValueError(f"carrier: expected a JSON object, got {type(values).__name__}")
    headers = {k: str(v) for k, v in values.items() if v}
    return PROPAGATOR.extract(headers, context=otel_context.Context())


def inject_carrier(ctx: otel_context.Context | None = None) -> dict[str, str]:
    """``{"traceparent", "tracestate", "baggage"}`` of ``ctx`` (default: the current context), empty when absent."""
    headers: dict[str, str] = {}
    PROPAGATOR.inject(headers, context=ctx)
    return {"traceparent": headers.get("traceparent", ""), "tracestate": headers.get("tracestate", ""),
            "baggage": headers.get("baggage", "")}


def _hints(func: Callable[..., Any]) -> list[Any]:
    """The annotated types of ``func``'s positional parameters after ``self`` (Any where unannotated)."""
    hints = typing.get_type_hints(func)
    params = list(inspect.signature(func).parameters.values())[1:]
    return [hints.get(p.name, Any) for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


_WIRE_SIGNATURE = inspect.Signature([
    inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD),
    inspect.Parameter("carrier", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None),
    inspect.Parameter("args", inspect.Parameter.POSITIONAL_OR_KEYWORD, default="[]"),
    inspect.Parameter("refs", inspect.Parameter.VAR_POSITIONAL),
])


def role_method(*, traced: bool = True, raw_result: bool = False) -> Callable[[F], F]:
    """Makes a typed method a Java-callable role method ``(carrier, args, *refs) -> bytes`` (module docstring)."""

    def decorate(func: F) -> F:
        name = func.__name__
        hints: list[Any] | None = None

        def call(self: Any, args: str | bytes, refs: tuple[Any, ...]) -> bytes:
            nonlocal hints
            if hints is None:
                hints = _hints(func)
            values = wire.decode_args(args, refs)
            if len(values) != len(hints):
                raise TypeError(f"{type(self).__name__}.{name} takes {len(hints)} argument(s), got {len(values)}")
            result = func(self, *[wire.from_wire(t, v) for t, v in zip(hints, values, strict=True)])
            if raw_result:
                if result is None:
                    raise TypeError(f"{name} returned None (a raw result is the object itself)")
                return typing.cast(bytes, result)
            return wire.encode_result(result)

        @functools.wraps(func)
        def wrapper(self: Any, carrier: str | bytes | None = None, args: str | bytes = "[]", *refs: Any) -> bytes:
            parent = extract_carrier(carrier)
            telemetry: ProcessTelemetry | None = getattr(self, "telemetry", None)
            # the telemetry to open the span with; None: no span
            spans = telemetry if traced and telemetry is not None and telemetry.worker_spans else None
            token = otel_context.attach(parent)
            try:
                if spans is None:
                    return call(self, args, refs)
                with spans.tracer.start_as_current_span(
                        f"{names.ROLE_SPAN_PREFIX}{type(self).SPANS}.{name}", context=parent, kind=SpanKind.SERVER,
                        attributes={names.ACTOR_ROLE: type(self).ROLE, names.ACTOR_METHOD: name},
                        record_exception=False, set_status_on_exception=False) as span:
                    try:
                        return call(self, args, refs)
                    except BaseException as e:
                        span.record_exception(e)
                        span.set_status(Status(StatusCode.ERROR, str(e)))
                        raise
            finally:
                otel_context.detach(token)

        # What Ray sees must be the wire signature: Ray unwraps ``__wrapped__`` all the way (ignoring
        # ``__signature__``) to validate calls, so the typed method is kept under another name.
        del wrapper.__wrapped__
        wrapper.__signature__ = _WIRE_SIGNATURE  # type: ignore[attr-defined]
        wrapper.typed = func  # type: ignore[attr-defined]
        wrapper.__ravel_role_method__ = {"traced": traced, "raw_result": raw_result}  # type: ignore[attr-defined]
        return typing.cast(F, wrapper)

    return decorate
