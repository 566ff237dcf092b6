"""The policy: deterministic random initialisation per family, checkpoint reading, generation with both families."""

from __future__ import annotations

import io

import pytest
import torch

from ravel_workers import policy
from ravel_workers.engine import TransformersEngine
from ravel_workers.grpo import completion_logprobs
from ravel_workers.wire import GenerationRequest, ModelConfig, SamplingParams


@pytest.mark.parametrize("family", ["gpt2", "qwen2"])
def test_same_seed_same_weights_and_generation_matches_a_forward(family):
    config = ModelConfig(family, 14, 2, 32, 4, 16)
    a, b, c = policy.build_model(config, 7), policy.build_model(config, 7), policy.build_model(config, 8)
    sa, sb, sc = (policy.state_dict_cpu(m) for m in (a, b, c))
    assert all(torch.equal(sa[k], sb[k]) for k in sa)
    assert not all(torch.equal(sa[k], sc[k]) for k in sa)
    assert not a.training and sum(p.numel() for p in a.parameters()) > 0
    engine = TransformersEngine(a, vocab_size=14, eos_token=13, max_positions=16)
    try:
        results = engine.submit([GenerationRequest(f"r{i}", [i % 10, 10, 3, 12], SamplingParams(8, 1.0, 1.0, i))
                                 for i in range(6)])
    finally:
        engine.close()
    with torch.no_grad():
        lp, _ = completion_logprobs(b, [r.prompt_tokens for r in results], [r.completion_tokens for r in results],
                                    1.0, "cpu")
    for i, r in enumerate(results):
        assert r.finish_reason in ("stop", "length")
        assert lp[i, :len(r.logprobs)].tolist() == pytest.approx(r.logprobs, abs=1e-4)


def test_read_blob_reads_a_checkpoints_version_and_weights():
    m = policy.build_model(ModelConfig("gpt2", 14, 1, 16, 2, 8), 1)
    version, state = policy.read_blob(_save({"version": 9, "state_dict": policy.state_dict_cpu(m), "extra": 1}))
    assert version == 9
    assert all(torch.equal(v, m.state_dict()[k]) for k, v in state.items())
    with pytest.raises(ValueError, match="keys"):
        policy.read_blob(_save({"x": 1}))


def _save(obj) -> bytes:
    buf = io.BytesIO()
    torch.save(obj, buf)
    return buf.getvalue()


def test_cuda_without_a_gpu_is_a_clear_error():
    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    with pytest.raises(RuntimeError, match="no CUDA device"):
        policy.resolve_device("cuda")
    assert policy.resolve_device("auto").type == "cpu"
