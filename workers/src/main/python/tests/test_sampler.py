"""The engine sampler's hash, bit for bit the Java RequestSampler.unitHash."""

from __future__ import annotations

import pytest

from ravel_workers.engine import RequestSampler, unit_hash

# Computed by running dev.ravel.workers.engine.RequestSampler.unitHash in jshell against workers/target/classes.
JAVA_VECTORS = {
    "": 0.9576734252420561,
    "a": 0.010753497314070604,
    "req-0": 0.6641720556167143,
    "req-1": 0.039680585998704165,
    "step-3-prompt-7-sample-5": 0.08736939089306239,
    "s0-p12-g3": 0.509786347962458,
    "héllo-✓": 0.3361995368282795,
    "0123456789abcdef": 0.3748591161814947,
}


@pytest.mark.parametrize("request_id,expected", JAVA_VECTORS.items())
def test_unit_hash_matches_java(request_id, expected):
    assert unit_hash(request_id) == expected


def test_keep_reasons_in_order():
    s = RequestSampler(tracing=True, ratio=0.5, slow_nanos=1_000)
    assert s.keep_reason("a", error=True, preemptions=1, e2e_nanos=5_000) == "error"
    assert s.keep_reason("a", error=False, preemptions=1, e2e_nanos=5_000) == "preempted"
    assert s.keep_reason("a", error=False, preemptions=0, e2e_nanos=1_000) == "slow"
    assert s.keep_reason("a", error=False, preemptions=0, e2e_nanos=10) == "ratio"  # 0.0107 < 0.5
    assert s.keep_reason("req-0", error=False, preemptions=0, e2e_nanos=10) is None  # 0.664 >= 0.5
    assert RequestSampler(False, 1.0, 0).keep_reason("a", True, 1, 10) is None
