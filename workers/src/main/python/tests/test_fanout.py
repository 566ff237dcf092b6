"""The fan-out benchmark's Python spinners answer in the Java spinners' form (``dev.ravel.workers.bench.Spin``)."""

from __future__ import annotations

from ravel_checks.fanout import PlainSpinnerImpl, SpinnerImpl, spin_answer


def test_spin_answer_spins_at_least_the_time_and_pads_to_the_length() -> None:
    a = spin_answer("request", 3_000_000, 500)
    head, _, pad = a.partition(":")
    assert len(a) == 500
    assert int(head) >= 3_000_000
    assert set(pad) <= {"x"}


def test_spin_answer_length_shorter_than_the_head_keeps_the_whole_head() -> None:
    a = spin_answer("", 0, 1)
    assert a.endswith(":") and int(a[:-1]) >= 0


def test_spinners_are_a_role_and_a_plain_class() -> None:
    assert (SpinnerImpl.ROLE, SpinnerImpl.SPANS) == ("spinner", "spinner")
    assert not hasattr(PlainSpinnerImpl, "ROLE")
    assert PlainSpinnerImpl().spin("p", 0, 10).count(":") == 1
