"""Python actors of your own, called from Java and calling Java actors back (docs/python-workers.md, "Your own
Python actors").

A class of yours becomes a Ravel role by subclassing :class:`RoleActor`, naming its role and span middle part,
and decorating each method Java calls with :func:`role_method`::

    import ray
    from ravel_workers.api import RoleActor, java_actor, role_method

    @ray.remote
    class Shouter(RoleActor):
        ROLE, SPANS = "shouter", "shouter"

        def __init__(self, spec: str) -> None:
            super().__init__()

        @role_method()
        def shout(self, text: str) -> str:
            return java_actor("echo").call("echo", text.upper())

Java creates it with ``session.pythonActor(PyActorClass.of("my_module", "Shouter"), "{}", Shouter.class)`` (a
Java interface annotated ``@ActorRole(name = "shouter", spans = "shouter")`` whose methods are the Python ones in
camel case). Each call runs in the span ``rl.shouter.shout``, a child of the Java caller's span. A call to a Java
actor through :func:`java_actor` carries the current context, so the Java actor's span is a child of this one:
one trace across both languages.
"""

from __future__ import annotations

import json
import os
from typing import Any, ClassVar

from .role import inject_carrier, role_method
from .telemetry import ProcessTelemetry, process_telemetry
from .wire import ExportStats
from .wire.codec import from_wire, to_wire

__all__ = ["JavaActor", "JavaWorkerError", "RoleActor", "java_actor", "role_method"]


class RoleActor:
    """The base of a Python role: its process's telemetry (``self.telemetry``, started for ``ROLE`` from the
    environment the Java driver gave the actor) and the untraced methods every role has (``RavelRole`` in Java:
    span counts, flush, process id), which the driver's session calls when it closes."""

    #: The process role (``rl.process.role``), e.g. ``"shouter"``.
    ROLE: ClassVar[str] = ""
    #: The middle part of the role's span names: ``rl.<SPANS>.<method>``.
    SPANS: ClassVar[str] = ""

    telemetry: ProcessTelemetry

    def __init__(self, telemetry: ProcessTelemetry | None = None) -> None:
        if not type(self).ROLE or not type(self).SPANS:
            raise TypeError(f"{type(self).__name__} must set the class attributes ROLE and SPANS")
        self.telemetry = telemetry or process_telemetry(type(self).ROLE)

    @role_method(traced=False)
    def telemetry_stats(self) -> ExportStats:
        """This process's span counts."""
        return self.telemetry.stats()

    @role_method(traced=False)
    def flush_telemetry(self, timeout_ms: int) -> ExportStats:
        """Exports what is queued (waiting at most ``timeout_ms``), then the span counts."""
        self.telemetry.flush(timeout_ms)
        return self.telemetry.stats()

    @role_method(traced=False)
    def process_id(self) -> int:
        """This actor's process id (a restarted actor answers with its new process's)."""
        return os.getpid()


class JavaWorkerError(RuntimeError):
    """A Java actor's method threw: its Java exception type and message, and the call that failed."""

    def __init__(self, call: str, java_type: str, java_message: str) -> None:
        super().__init__(f"{java_type}: {java_message} (in Java {call})")
        self.call = call
        self.java_type = java_type
        self.java_message = java_message


class JavaActor:
    """A Ravel Java actor, called from Python with the current trace context beside the arguments."""

    def __init__(self, name: str, handle: Any) -> None:
        self.name = name
        self._handle = handle

    def call(self, method: str, *args: Any, returns: Any = Any, timeout_s: float | None = None) -> Any:
        """Calls the Java role method ``method`` (its Java name or snake case) with ``args`` in their wire form
        (strings, numbers, booleans, lists, dicts with string keys, dataclasses), waits for the answer (at most
        ``timeout_s``) and returns it as ``returns`` (a dataclass, ``list[...]``, a scalar; plain JSON data for
        ``Any``). A Java exception is raised as :class:`JavaWorkerError`."""
        import ray

        carrier = json.dumps(inject_carrier())
        try:
            encoded = json.dumps([to_wire(a) for a in args], allow_nan=False, ensure_ascii=False)
        except ValueError as e:
            raise ValueError(f"{self.name}.{method}: an argument is not valid JSON (NaN or infinite?): {e}") from e
        raw = ray.get(self._handle.invokeJson.remote(carrier, method, encoded), timeout=timeout_s)
        answer = json.loads(bytes(raw))
        if "error" in answer:
            err = answer["error"]
            raise JavaWorkerError(f"{self.name}.{method}", str(err.get("type")), str(err.get("message")))
        return from_wire(returns, answer.get("ok"))

    def __repr__(self) -> str:
        return f"JavaActor({self.name!r})"


def java_actor(name: str, namespace: str | None = None) -> JavaActor:
    """The Java actor created with the name ``name`` (``Creator.name`` in Java), in this job's namespace unless
    ``namespace`` is given. Fails with ``ValueError`` naming it when no such actor is alive."""
    import ray

    try:
        handle = ray.get_actor(name, namespace=namespace)
    except ValueError as e:
        raise ValueError(f"no Java actor named {name!r} is alive in this Ray job's namespace: {e}") from e
    return JavaActor(name, handle)
