"""The parts of ``python -m ravel_checks.bench_vllm`` that need no vLLM: its OTLP receiver, the sampling of a share of
requests, the order of the sides and the launch command as a worker fills it in (the benchmark itself runs in the
suite's part ``vllm``, against real ``vllm serve``)."""

from __future__ import annotations

import threading
import urllib.error
import urllib.request
from collections import Counter
from pathlib import Path

import pytest

from ravel_checks import bench_vllm


def test_otlpSink_answersAnExportAndCountsItsSpansByName() -> None:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
        ExportTraceServiceResponse,
    )

    req = ExportTraceServiceRequest()
    spans = req.resource_spans.add().scope_spans.add().spans
    for name in ("llm_request", "llm_request", "Load weights"):
        spans.add().name = name
    sink = bench_vllm.OtlpSink()
    threading.Thread(target=sink.serve_forever, daemon=True).start()
    try:
        post = urllib.request.Request(sink.endpoint, data=req.SerializeToString(), method="POST",
                                      headers={"Content-Type": "application/x-protobuf"})
        with urllib.request.urlopen(post, timeout=10) as r:
            assert r.status == 200
            ExportTraceServiceResponse().ParseFromString(r.read())
        elsewhere = urllib.request.Request(sink.endpoint.replace("/v1/traces", "/v1/logs"), data=b"", method="POST")
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(elsewhere, timeout=10)
        assert e.value.code == 404
    finally:
        sink.shutdown()
        sink.server_close()
    assert sink.spans == Counter({"llm_request": 2, "Load weights": 1})
    assert sink.requests == 1


def test_sampledByShare_exactlyThatShareOfAnyRunFromTheFirst() -> None:
    assert [i for i in range(300) if bench_vllm.sampled_by_share(i, 0.01)] == [99, 199, 299]
    assert all(bench_vllm.sampled_by_share(i, 1.0) for i in range(50))
    assert sum(bench_vllm.sampled_by_share(i, 0.25) for i in range(40)) == 10


def test_rotations_everyOrderInTurnAfterAWarmUpInTheGivenOrder() -> None:
    rounds = list(bench_vllm.rotations(["off", "a", "b"], 6))

    assert rounds[0] == (-1, ["off", "a", "b"])
    orders = [tuple(o) for _, o in rounds[1:]]
    assert [r for r, _ in rounds[1:]] == list(range(6))
    assert len(set(orders)) == 6  # every order once: each side after each other side equally often
    assert [o for _, o in bench_vllm.rotations(["x", "y"], 2)] == [["x", "y"], ["x", "y"], ["y", "x"]]


def test_fill_replacesAWorkersPlaceholdersAndKeepsEachWordWhole() -> None:
    cmd = bench_vllm.fill('env A=1 vllm serve /m --host {host} --port {port} --served-model-name {model}'
                          ' --weight-transfer-config {"backend":"ravel-file"} --otlp-traces-endpoint'
                          ' {otlp_traces_endpoint}', 8123, "http://127.0.0.1:9/v1/traces")

    assert cmd == ["env", "A=1", "vllm", "serve", "/m", "--host", "127.0.0.1", "--port", "8123",
                   "--served-model-name", bench_vllm.MODEL_NAME, "--weight-transfer-config",
                   '{"backend":"ravel-file"}', "--otlp-traces-endpoint", "http://127.0.0.1:9/v1/traces"]


def test_server_aTracedCommandWithoutAnEndpointIsRefusedBeforeAnythingStarts(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="asks for an OTLP endpoint"):
        bench_vllm.Server("traced", "vllm serve /m --otlp-traces-endpoint {otlp_traces_endpoint}",
                          tmp_path / "log")
