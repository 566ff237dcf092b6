"""The engine sampler's hash, bit for bit the Java RequestSampler.unitHash."""

from __future__ import annotations

import pytest

from ravel_workers.engine import RequestSampler, unit_hash
from ravel_workers.names import CONTRACT

# The golden vectors of the contract file, which the Java RequestSampler test reads too.
JAVA_VECTORS = CONTRACT["golden"]["sampler_unit_hash"]


@pytest.mark.parametrize("request_id,expected", JAVA_VECTORS.items())
def test_unit_hash_matches_java(request_id, expected):
    assert unit_hash(request_id) == expected


@pytest.mark.parametrize("case", CONTRACT["golden"]["keep_reason"])
def test_keep_reason_matches_the_contracts_cases(case):
    s = RequestSampler(tracing=case["tracing"], ratio=case["ratio"], slow_nanos=case["slow_nanos"])
    assert s.keep_reason(case["request_id"], error=case["error"], preemptions=case["preemptions"],
                         e2e_nanos=case["e2e_nanos"]) == case["reason"]


def test_keep_reasons_in_order():
    s = RequestSampler(tracing=True, ratio=0.5, slow_nanos=1_000)
    assert s.keep_reason("a", error=True, preemptions=1, e2e_nanos=5_000) == "error"
    assert s.keep_reason("a", error=False, preemptions=1, e2e_nanos=5_000) == "preempted"
    assert s.keep_reason("a", error=False, preemptions=0, e2e_nanos=1_000) == "slow"
    assert s.keep_reason("a", error=False, preemptions=0, e2e_nanos=10) == "ratio"  # 0.0107 < 0.5
    assert s.keep_reason("req-0", error=False, preemptions=0, e2e_nanos=10) is None  # 0.664 >= 0.5
    assert RequestSampler(False, 1.0, 0).keep_reason("a", True, 1, 10) is None
