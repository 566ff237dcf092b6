"""The Python spinners of ``ravel bench-calls --fanout`` (docs/benchmarks.md, "The hop against plain Ray").

A generate call keeps a worker's CPU busy and comes back; the hop is the driver's whole wait over the slowest
worker's own time. These actors do the same with a body of known length, so the hop of a fan-out through Ravel
(:class:`Spinner`, a role: context carried, arguments and answer in the JSON wire form, the call in an
``rl.spinner.spin`` span) can be set against the hop of plain Ray actor calls (:class:`PlainSpinner`) of the same
sizes, from the same Java driver. Both answer like the Java spinners (``dev.ravel.workers.bench.Spin``): the
body's wall-clock ns, a colon, padding.
"""

from __future__ import annotations

import time

import ray

from ravel_workers.api import RoleActor, role_method


def spin_answer(payload: str, nanos: int, result_chars: int) -> str:
    """Spins for ``nanos`` ns (reading the clock), then answers the body's ns, a colon and padding to
    ``result_chars`` characters."""
    t0 = time.perf_counter_ns()
    while time.perf_counter_ns() - t0 < nanos:
        pass
    head = f"{time.perf_counter_ns() - t0}:"
    return head + "x" * max(0, result_chars - len(head))


class SpinnerImpl(RoleActor):
    """The fan-out benchmark's spinner as a Ravel role (Java: ``dev.ravel.workers.bench.Spinner``)."""

    ROLE = "spinner"
    SPANS = "spinner"

    def __init__(self, spec: str = "{}") -> None:
        super().__init__()

    @role_method()
    def spin(self, payload: str, nanos: int, result_chars: int) -> str:
        """:func:`spin_answer`, in an ``rl.spinner.spin`` span."""
        return spin_answer(payload, nanos, result_chars)


class PlainSpinnerImpl:
    """The same spinner as a plain Ray actor: Ray's own cross-language call, nothing of Ravel's."""

    def spin(self, payload: str, nanos: int, result_chars: int) -> str:
        """:func:`spin_answer`."""
        return spin_answer(payload, nanos, result_chars)


Spinner = ray.remote(SpinnerImpl)
PlainSpinner = ray.remote(PlainSpinnerImpl)
