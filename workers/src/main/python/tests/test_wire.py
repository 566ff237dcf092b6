"""Wire forms: every value round-trips through its JSON form; args decoding resolves refs."""

from __future__ import annotations

import json

import pytest

from ravel_workers import wire
from ravel_workers.wire import (
    EngineStats,
    ExportStats,
    GenerationRequest,
    GenerationResult,
    GenerationWorkerSpec,
    LogProbSummary,
    ModelConfig,
    RequestStats,
    SamplingParams,
    TrainerSpec,
    TrainOutcome,
    Trajectory,
)

STATS = RequestStats(arrival_epoch_nanos=1_700_000_000_000_000_000, scheduled_epoch_nanos=1_700_000_000_000_000_100,
                     first_token_epoch_nanos=1_700_000_000_000_000_200, finish_epoch_nanos=1_700_000_000_000_000_900,
                     prefill_nanos=100, decode_nanos=700, preemptions=0, prompt_tokens=4, completion_tokens=2)

VALUES = [
    GenerationRequest("r-1", [3, 10, 4, 12], SamplingParams(max_tokens=4, temperature=0.7, top_p=0.9, seed=42)),
    GenerationResult("r-1", [3, 10, 4, 12], [7, 13], [-0.25, -1.5], "stop", 3, STATS, True, None),
    GenerationResult("r-2", [1], [], [], "error", -1, STATS, False, "token 99 is outside the vocabulary"),
    Trajectory("r-1", [3, 10, 4, 12], [7, 13], [-0.25, -1.5], 1.0, 3, 5),
    LogProbSummary(-1.25, -1.5, 0.01, 12),
    TrainOutcome(4, 0.5, 0.01, 1.2, 0.1, 0.05, 0.05, 0.0, 1.0, 1.3, 0.0, 0.7, 0.03, 1, 12, 1, 0.25, 12, 16),
    EngineStats({"stop": 3, "length": 1, "abort": 0, "error": 2}, 0, 1, 2, 30, 1024, 40, 12, 5, 1),
    ExportStats(10, 8, 1, 1),
]


@pytest.mark.parametrize("value", VALUES, ids=lambda v: type(v).__name__)
def test_round_trip_through_json(value):
    data = json.loads(wire.encode_result(value))
    assert type(value).from_wire(data) == value


def test_result_keys_are_the_contract():
    data = json.loads(wire.encode_result(VALUES[1]))
    assert list(data) == ["request_id", "prompt_tokens", "completion_tokens", "logprobs", "finish_reason",
                          "weight_version", "stats", "traced", "error"]
    assert list(data["stats"]) == ["arrival_epoch_nanos", "scheduled_epoch_nanos", "first_token_epoch_nanos",
                                   "finish_epoch_nanos", "prefill_nanos", "decode_nanos", "preemptions",
                                   "prompt_tokens", "completion_tokens"]
    assert set(json.loads(wire.encode_result(VALUES[6]))) == {
        "finished", "preemptions", "running", "waiting", "kv_tokens_used", "kv_token_budget", "prompt_tokens",
        "generation_tokens", "spans_kept", "spans_sampled_out", "queue_nanos", "queue_count", "load_seconds",
        "running_seconds", "waiting_seconds", "kv_token_seconds"}


def test_lists_and_scalars_encode():
    assert json.loads(wire.encode_result([VALUES[4], 3, "x"])) == [VALUES[4].to_wire(), 3, "x"]
    assert wire.encode_result(7) == b"7"


def test_non_finite_numbers_are_rejected():
    with pytest.raises(ValueError, match="NaN or infinite"):
        wire.encode_result(TrainOutcome(1, float("nan"), 0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0.03, 0, 4, 1, 0, 1, 4))


def test_decode_args_replaces_refs():
    blob = b"\x00\x01"
    assert wire.decode_args('[{"$ref": 0}, [1, {"$ref": 1}], {"a": {"$ref": 0}}]', (blob, "x")) == [
        blob, [1, "x"], {"a": blob}]
    assert wire.decode_args("[]") == []
    with pytest.raises(ValueError, match="ref"):
        wire.decode_args('[{"$ref": 2}]', (blob,))
    with pytest.raises(ValueError, match="array"):
        wire.decode_args('{"a": 1}')


def test_from_wire_converts_annotated_types():
    reqs = wire.from_wire(list[GenerationRequest], [VALUES[0].to_wire()])
    assert reqs == [VALUES[0]]
    assert wire.from_wire(int, 5.0) == 5
    assert wire.from_wire(float, 5) == 5.0
    assert wire.from_wire(bytes, b"ab") == b"ab"
    with pytest.raises(ValueError):
        wire.from_wire(bytes, "ab")
    with pytest.raises(ValueError):
        wire.from_wire(list[int], 3)


def test_specs_parse_and_validate():
    model = {"family": "qwen2", "vocab_size": 14, "layers": 2, "hidden": 64, "heads": 4, "max_positions": 16}
    w = GenerationWorkerSpec.from_wire({"model": model, "seed": 3, "eos_token": 13, "model_name": "m",
                                        "engine": "transformers", "max_running_requests": 8, "device": "cpu"})
    assert w.model == ModelConfig("qwen2", 14, 2, 64, 4, 16) and w.max_running_requests == 8
    t = TrainerSpec.from_wire({"model": model, "seed": 3, "device": "auto",
                               "grpo": {"group_size": 8, "learning_rate": 0.001}})
    assert t.grpo.group_size == 8 and t.grpo.learning_rate == 0.001 and t.grpo.kl_beta == 0.04
    with pytest.raises(ValueError, match="family"):
        ModelConfig.from_wire(dict(model, family="llama"))
    with pytest.raises(ValueError, match="eos_token"):
        GenerationWorkerSpec.from_wire({"model": model, "eos_token": 14})
    with pytest.raises(ValueError, match="engine"):
        GenerationWorkerSpec.from_wire({"model": model, "eos_token": 13, "engine": "tgi"})


def test_generate_results_go_in_their_binary_form():
    results = [VALUES[1], VALUES[2]]
    data = wire.encode_result(results)
    assert data.startswith(wire.results.MAGIC) and data[:1] not in b"[{"
    assert wire.decode_results(data) == results
    assert wire.encode_result([]) == b"[]"  # nothing to pack: JSON, which Java reads as well


def test_binary_results_match_the_contracts_golden_bytes():
    from ravel_workers.names import CONTRACT

    golden = CONTRACT["result_wire"]["golden"]
    results = [GenerationResult.from_wire(r) for r in golden["results"]]
    assert wire.encode_results(results).hex() == golden["hex"]
    assert wire.decode_results(bytes.fromhex(golden["hex"])) == results
    assert wire.results.MAGIC == CONTRACT["result_wire"]["magic"].encode()


def test_binary_results_refuse_what_is_not_them():
    data = wire.encode_results([VALUES[1]])
    with pytest.raises(ValueError, match="cut short"):
        wire.decode_results(data[:-3])
    with pytest.raises(ValueError, match="after the last"):
        wire.decode_results(data + b"\x00")
    with pytest.raises(ValueError, match="RVG1"):
        wire.decode_results(b"[]")
