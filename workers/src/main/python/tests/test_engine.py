"""The transformers engine: sampling, seeds, EOS and length, errors, batching, weight updates, llm_request spans."""

from __future__ import annotations

import itertools
import threading
from types import SimpleNamespace

import pytest
import torch
from opentelemetry import trace

from ravel_workers import names, policy
from ravel_workers.engine import TransformersEngine, sample_tokens
from ravel_workers.grpo import completion_logprobs
from ravel_workers.names import CONTRACT
from ravel_workers.role import extract_carrier
from ravel_workers.weights import gather
from ravel_workers.wire import EngineStats, GenerationRequest, ModelConfig, SamplingParams

from support import TRACEPARENT, carrier, spans_of

EOS = 13
CONFIG = ModelConfig("gpt2", 14, 1, 32, 2, 16)


class NextTokenLM(torch.nn.Module):
    """A fake causal LM that strongly predicts (last token + 1) % vocab; the cache counts positions."""

    def __init__(self, vocab: int = 14) -> None:
        super().__init__()
        self.vocab = vocab
        self.calls: list[tuple[int, int]] = []

    def forward(self, input_ids, use_cache=False, cache=None):  # noqa: D401
        b, t = input_ids.shape
        self.calls.append((b, t))
        logits = torch.zeros(b, t, self.vocab)
        logits.scatter_(2, ((input_ids + 1) % self.vocab).unsqueeze(-1), 20.0)
        return SimpleNamespace(logits=logits, cache=(cache or 0) + t)


def req(rid, prompt, max_tokens=4, temperature=1.0, top_p=1.0, seed=0):
    return GenerationRequest(rid, list(prompt), SamplingParams(max_tokens, temperature, top_p, seed))


@pytest.fixture
def fake_engine():
    e = TransformersEngine(NextTokenLM(), vocab_size=14, eos_token=EOS, max_positions=16, max_running_requests=8)
    yield e
    e.close()


@pytest.fixture
def model():
    return policy.build_model(CONFIG, seed=7)


@pytest.fixture
def engine(model):
    e = TransformersEngine(model, vocab_size=14, eos_token=EOS, max_positions=16, max_running_requests=64)
    yield e
    e.close()


def test_stops_on_eos_included_or_on_length(fake_engine):
    stop, length, zero = fake_engine.submit([req("a", [10], 8, 0.0), req("b", [10], 2, 0.0), req("c", [10], 0)])
    assert stop.completion_tokens == [11, 12, 13] and stop.finish_reason == "stop" and len(stop.logprobs) == 3
    assert length.completion_tokens == [11, 12] and length.finish_reason == "length"
    assert zero.completion_tokens == [] and zero.finish_reason == "length" and zero.weight_version == -1
    assert stop.weight_version == 0 and stop.error is None
    s = stop.stats
    assert s.arrival_epoch_nanos <= s.scheduled_epoch_nanos <= s.first_token_epoch_nanos <= s.finish_epoch_nanos
    assert s.prefill_nanos == s.first_token_epoch_nanos - s.scheduled_epoch_nanos
    assert (s.prompt_tokens, s.completion_tokens) == (1, 3)


def test_ignore_eos_generates_past_eos_to_max_tokens(fake_engine):
    r = GenerationRequest("a", [10], SamplingParams(8, 0.0, ignore_eos=True))
    (out,) = fake_engine.submit([r])
    assert out.completion_tokens == [11, 12, 13, 0, 1, 2, 3, 4] and out.finish_reason == "length"
    assert SamplingParams.from_wire(r.params.to_wire()) == r.params
    with pytest.raises(ValueError, match="params.ignore_eos"):
        SamplingParams.from_wire({"max_tokens": 2, "ignore_eos": "yes"})


def test_invalid_requests_error_alone(fake_engine):
    bad, good, empty, hot = fake_engine.submit([req("bad", [3, 99]), req("good", [1], 2, 0.0), req("empty", []),
                                                req("hot", [1], 2, -1.0)])
    assert bad.finish_reason == "error" and "prompt_tokens[1] = 99 is outside the vocabulary" in bad.error
    assert bad.completion_tokens == [] and bad.stats.scheduled_epoch_nanos == 0
    assert good.finish_reason == "length" and good.completion_tokens == [2, 3]
    assert empty.finish_reason == "error" and hot.finish_reason == "error" and "temperature" in hot.error
    too_long = fake_engine.submit([req("long", [1] * 10, 8)])[0]
    assert too_long.finish_reason == "error" and "positions" in too_long.error
    stats = fake_engine.stats()
    assert stats.finished == {"stop": 0, "length": 1, "abort": 0, "error": 4}
    assert stats.prompt_tokens == 2 + 1 + 0 + 1 + 10 and stats.generation_tokens == 2


def test_groups_by_prompt_length_without_padding(fake_engine):
    results = fake_engine.submit([req("a", [1, 2], 2, 0.0), req("b", [5], 2, 0.0), req("c", [7, 8], 2, 0.0)])
    assert [r.completion_tokens for r in results] == [[3, 4], [6, 7], [9, 10]]
    prefills = sorted(c for c in fake_engine.model.calls if c[1] > 1 or c[0] == 1)
    assert (2, 2) in fake_engine.model.calls and (1, 1) in prefills


def test_sampling_inverse_cdf_and_nucleus():
    logits = torch.log(torch.tensor([[0.5, 0.3, 0.2]] * 4, dtype=torch.float32))
    temps = torch.ones(4, dtype=torch.float64)
    # nucleus 0.6 keeps {0, 1} (0.5 < 0.6, then 0.8); u = 0.99 -> 0.792 of 0.8 -> token 1
    tokens, logps = sample_tokens(logits, temps, torch.tensor([0.6, 0.5, 1.0, 1.0], dtype=torch.float64),
                                  torch.tensor([0.99, 0.99, 0.99, 0.1], dtype=torch.float64))
    assert tokens.tolist() == [1, 0, 2, 0]
    assert logps.tolist() == pytest.approx([torch.log(torch.tensor(p)).item() for p in (0.3, 0.5, 0.2, 0.5)], abs=1e-6)
    g = torch.Generator().manual_seed(0)
    many = 20000
    u = torch.rand(many, generator=g, dtype=torch.float64)
    t, _ = sample_tokens(logits[:1].expand(many, 3), torch.ones(many, dtype=torch.float64),
                         torch.ones(many, dtype=torch.float64), u)
    freq = torch.bincount(t, minlength=3).double() / many
    assert freq.tolist() == pytest.approx([0.5, 0.3, 0.2], abs=0.015)
    greedy, lp = sample_tokens(torch.tensor([[1.0, 3.0, 3.0]]), torch.zeros(1, dtype=torch.float64),
                               torch.ones(1, dtype=torch.float64), torch.zeros(1, dtype=torch.float64))
    assert greedy.tolist() == [1]  # lowest id on ties
    assert lp.item() == pytest.approx(torch.log_softmax(torch.tensor([1.0, 3.0, 3.0]), 0)[1].item(), abs=1e-6)


def test_seeds_reproducible_and_independent_of_the_batch(engine):
    prompt = [3, 10, 4, 12]
    alone = engine.submit([req("x", prompt, 6, 1.0, seed=11)])[0]
    batched = engine.submit([req(f"o{i}", [i % 10, 10, 1, 12], 6, 1.0, seed=100 + i) for i in range(5)]
                            + [req("x", prompt, 6, 1.0, seed=11)])[-1]
    assert batched.completion_tokens == alone.completion_tokens
    assert batched.logprobs == pytest.approx(alone.logprobs, abs=1e-5)
    others = {tuple(engine.submit([req("y", prompt, 6, 1.0, seed=s)])[0].completion_tokens) for s in range(12)}
    assert len(others) > 3


def test_logprobs_match_a_direct_forward(engine, model):
    results = engine.submit([req(f"r{i}", [i % 5, 10, (i * 3) % 5, 12], 4, t, seed=i)
                             for i, t in enumerate([1.0, 0.7, 0.0, 1.3] * 4)])
    temps = [1.0, 0.7, 0.0, 1.3] * 4
    for t in set(temps):
        rows = [r for r, tt in zip(results, temps, strict=True) if tt == t]
        with torch.no_grad():
            lp, mask = completion_logprobs(model, [r.prompt_tokens for r in rows], [r.completion_tokens for r in rows],
                                           t, "cpu")
        for i, r in enumerate(rows):
            assert lp[i, :len(r.completion_tokens)].tolist() == pytest.approx(r.logprobs, abs=1e-4)
            if r.finish_reason == "stop":
                assert r.completion_tokens[-1] == EOS and EOS not in r.completion_tokens[:-1]
            else:
                assert len(r.completion_tokens) == 4 and EOS not in r.completion_tokens


def test_greedy_is_the_argmax(engine, model):
    r = engine.submit([req("g", [2, 10, 2, 12], 3, 0.0, seed=1), req("h", [2, 10, 2, 12], 3, 0.0, seed=2)])
    assert r[0].completion_tokens == r[1].completion_tokens
    seq = [2, 10, 2, 12]
    with torch.no_grad():
        for tok in r[0].completion_tokens:
            assert tok == int(model(torch.tensor([seq])).logits[0, -1].argmax())
            seq.append(tok)
    narrow = engine.submit([req("n", [2, 10, 2, 12], 3, 1.0, top_p=1e-9, seed=5)])[0]
    assert narrow.completion_tokens == r[0].completion_tokens


def test_concurrent_submits_are_batched_and_reproducible(engine):
    reqs = [req(f"c{i}", [i % 5, 10, 2, 12], 4, 1.0, seed=i) for i in range(16)]
    expected = {r.request_id: r.completion_tokens for r in engine.submit(reqs)}
    got = {}
    threads = [threading.Thread(target=lambda r=r: got.update({r.request_id: engine.submit([r])[0].completion_tokens}))
               for r in reqs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got == expected
    s = engine.stats()
    assert s.finished["stop"] + s.finished["length"] == 32 and s.running == 0 and s.waiting == 0
    assert s.kv_token_budget == 64 * 16


def test_stats_count_queue_time_and_integrate_the_load(engine):
    before = engine.stats()
    reqs = [req(f"q{i}", [i % 5, 10, 2, 12], 4, 1.0, seed=i) for i in range(12)]
    results = engine.submit(reqs)
    after = engine.stats()
    assert after.queue_count - before.queue_count == 12
    assert after.queue_nanos - before.queue_nanos == sum(
        r.stats.scheduled_epoch_nanos - r.stats.arrival_epoch_nanos for r in results)
    seconds = after.load_seconds - before.load_seconds
    running = after.running_seconds - before.running_seconds
    assert seconds > 0 and running > 0  # the batch ran for some time between the two snapshots
    assert running <= 12 * seconds + 1e-9  # never more than the 12 requests at once
    kv = after.kv_token_seconds - before.kv_token_seconds
    assert 0 < kv <= 12 * 16 * seconds + 1e-9  # at most 12 sequences of 16 positions held
    assert EngineStats.from_wire(after.to_wire()) == after  # the floats cross the wire as floats


def test_weight_update_applies_between_batches(engine):
    other = policy.build_model(CONFIG, seed=8)
    before = engine.submit([req("w", [1, 10, 1, 12], 4, 0.0)])[0]
    assert engine.update_weights(gather(other, 5)) == 5
    after = engine.submit([req("w", [1, 10, 1, 12], 4, 0.0)])[0]
    assert (before.weight_version, after.weight_version) == (0, 5)
    with torch.no_grad():
        lp, _ = completion_logprobs(other, [after.prompt_tokens], [after.completion_tokens], 0.0, "cpu")
    assert lp[0].tolist() == pytest.approx(after.logprobs, abs=1e-4)
    with pytest.raises(TypeError, match="Weights"):
        engine.update_weights(b"not weights")  # type: ignore[arg-type]


def test_llm_request_spans(make_telemetry):
    t = make_telemetry("generation_worker", engine_tracing="true", engine_sample_ratio="1.0")
    e = TransformersEngine(NextTokenLM(), vocab_size=14, eos_token=EOS, max_positions=16, telemetry=t,
                           model_name="tiny")
    try:
        parent = extract_carrier(carrier())
        ok, bad = e.submit([req("req-0", [10], 4, 0.0), req("bad", [99])], parent)
        assert ok.traced and bad.traced
        spans = {s["_attributes"]["gen_ai.request.id"]: s for s in spans_of(t) if s["name"] == names.LLM_REQUEST}
        s = spans["req-0"]
        assert s["name"] == "llm_request" and s["kind"] == 2 and s["_scope"] == "dev.ravel.workers.engine"
        assert s["traceId"] == TRACEPARENT.split("-")[1] and s["parentSpanId"] == TRACEPARENT.split("-")[2]
        assert s["startTimeUnixNano"] == str(ok.stats.arrival_epoch_nanos)
        assert s["endTimeUnixNano"] == str(ok.stats.finish_epoch_nanos)
        a = s["_attributes"]
        assert a["gen_ai.response.finish_reasons"] == '["stop"]' and a["rl.engine.keep_reason"] == "ratio"
        assert a["gen_ai.usage.completion_tokens"] == "3" and a["gen_ai.request.max_tokens"] == "4"
        assert a["gen_ai.request.model"] == "tiny" and a["gen_ai.operation.name"] == "text_completion"
        assert a["rl.weight_version"] == "0" and a["gen_ai.request.n"] == "1"
        assert a["gen_ai.latency.e2e"] == pytest.approx(ok.stats.e2e())
        # every key of the contract but those of the lifecycle children, no other
        children_only = {names.USAGE_INPUT_TOKENS, names.USAGE_OUTPUT_TOKENS, names.ENGINE_RECOMPUTE}
        assert set(a) == set(CONTRACT["engine_attributes"].values()) - children_only
        assert spans["bad"]["status"]["code"] == 2 and spans["bad"]["_attributes"]["rl.engine.keep_reason"] == "error"
        assert e.stats().spans_kept == 2 and e.stats().spans_sampled_out == 0
    finally:
        e.close()


def _children(spans, parent):
    """The children of ``parent`` in time order."""
    kids = [s for s in spans if s.get("parentSpanId") == parent["spanId"] and s["traceId"] == parent["traceId"]]
    return sorted(kids, key=lambda s: (int(s["startTimeUnixNano"]), int(s["endTimeUnixNano"])))


def _assert_tiles(parent, children):
    """``children`` are internal spans from the parent's start to its end, each starting where the last ended."""
    assert children and all(c["kind"] == 1 for c in children)
    assert children[0]["startTimeUnixNano"] == parent["startTimeUnixNano"]
    for before, after in itertools.pairwise(children):
        assert after["startTimeUnixNano"] == before["endTimeUnixNano"]
    assert children[-1]["endTimeUnixNano"] == parent["endTimeUnixNano"]
    total = sum(int(c["endTimeUnixNano"]) - int(c["startTimeUnixNano"]) for c in children)
    assert total == int(parent["endTimeUnixNano"]) - int(parent["startTimeUnixNano"])


def test_llm_request_children_tile_it_queued_prefill_decode(make_telemetry):
    t = make_telemetry("generation_worker", engine_tracing="true", engine_sample_ratio="1.0")
    e = TransformersEngine(NextTokenLM(), vocab_size=14, eos_token=EOS, max_positions=16, telemetry=t,
                           weight_version=4)
    try:
        ok, bad, zero = e.submit([req("ok", [9, 10], 4, 0.0), req("bad", [99]), req("zero", [1], 0)],
                                 extract_carrier(carrier()))
        spans = spans_of(t)
        parents = {s["_attributes"]["gen_ai.request.id"]: s for s in spans if s["name"] == names.LLM_REQUEST}
        kids = _children(spans, parents["ok"])
        assert [c["name"] for c in kids] == [names.LLM_REQUEST_QUEUED, names.LLM_REQUEST_PREFILL,
                                             names.LLM_REQUEST_DECODE]
        _assert_tiles(parents["ok"], kids)
        st = ok.stats
        assert [int(c["startTimeUnixNano"]) for c in kids] == [st.arrival_epoch_nanos, st.scheduled_epoch_nanos,
                                                                st.first_token_epoch_nanos]
        assert kids[0]["_attributes"] == {}
        assert kids[1]["_attributes"] == {names.USAGE_INPUT_TOKENS: "2", names.ENGINE_RECOMPUTE: False,
                                          names.WEIGHT_VERSION: "4"}
        assert kids[2]["_attributes"] == {names.USAGE_OUTPUT_TOKENS: "3", names.WEIGHT_VERSION: "4"}
        assert ok.completion_tokens == [11, 12, 13]
        # a request that never ran waited from its arrival to its finish
        for never_ran in ("bad", "zero"):
            only = _children(spans, parents[never_ran])
            assert [c["name"] for c in only] == [names.LLM_REQUEST_QUEUED]
            _assert_tiles(parents[never_ran], only)
        assert bad.stats.scheduled_epoch_nanos == 0 and zero.stats.scheduled_epoch_nanos == 0
        assert len(spans) == 3 + 3 + 1 + 1  # three requests, their children, nothing else
    finally:
        e.close()


def test_sampled_out_spans_are_counted(make_telemetry):
    t = make_telemetry("generation_worker", engine_tracing="true", engine_sample_ratio="0.0")
    e = TransformersEngine(NextTokenLM(), vocab_size=14, eos_token=EOS, max_positions=16, telemetry=t)
    try:
        results = e.submit([req(f"q{i}", [1], 2) for i in range(5)] + [req("bad", [-1])])
        assert [r.traced for r in results] == [False] * 5 + [True]
        assert (e.stats().spans_kept, e.stats().spans_sampled_out) == (1, 5)
        kept = spans_of(t)
        assert [s["_attributes"]["gen_ai.request.id"] for s in kept if s["name"] == names.LLM_REQUEST] == ["bad"]
        # the sampled-out requests have no children either: the one kept has its queued child, nothing else
        assert sorted(s["name"] for s in kept) == [names.LLM_REQUEST, names.LLM_REQUEST_QUEUED]
    finally:
        e.close()


def test_no_spans_with_engine_tracing_off(make_telemetry):
    t = make_telemetry("generation_worker", engine_tracing="false")
    e = TransformersEngine(NextTokenLM(), vocab_size=14, eos_token=EOS, max_positions=16, telemetry=t)
    try:
        with trace.get_tracer("t").start_as_current_span("outer"):
            assert not e.submit([req("a", [1], 2), req("b", [99])])[1].traced
        assert e.stats().spans_sampled_out == 0 and spans_of(t) == []
    finally:
        e.close()


def test_closed_engine_aborts():
    e = TransformersEngine(NextTokenLM(), vocab_size=14, eos_token=EOS, max_positions=16)
    e.close()
    (r,) = e.submit([req("late", [1], 2)])
    assert r.finish_reason == "abort" and e.stats().finished["abort"] == 1
