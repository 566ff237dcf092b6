"""The ``ravel-file`` backend in a real ``vllm serve`` (vLLM's CPU engine): weights through vLLM's own routes in
vLLM's order, and the server's log-probs afterwards equal transformers' on the same weights, on a Hugging Face
fixture with tied embeddings whose file has no ``lm_head.weight``."""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
from ravel_checks import gpu_check_vllm

from ravel_vllm.backend import RavelFileUpdateInfo, read_weights, with_tied_head

import hf_fixture
from server import VllmServer

PROMPT = "3+4="


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("hf") / "model"
    folder.mkdir()
    # heads of 64: a head size vLLM's CPU attention takes
    hf_fixture.make_model(folder, hf_fixture.make_tokenizer(folder), hidden=128, layers=2, heads=2)
    return folder


@pytest.fixture(scope="module")
def server(model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[VllmServer]:
    s = VllmServer(model_dir, tmp_path_factory.mktemp("log") / "vllm.log",
                   ["--weight-transfer-config", '{"backend": "ravel-file"}'])
    try:
        s.wait_healthy()
        yield s
    finally:
        s.stop()


def load(model_dir: Path) -> Any:
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(str(model_dir), torch_dtype=torch.float32).eval()


def prompt_ids(model_dir: Path) -> list[int]:
    from transformers import AutoTokenizer

    return list(AutoTokenizer.from_pretrained(str(model_dir))(PROMPT)["input_ids"])


def greedy(model: Any, ids: list[int]) -> tuple[int, float]:
    """transformers' greedy next token after ``ids`` and its log-probability."""
    with torch.no_grad():
        logits = model(torch.tensor([ids])).logits[0, -1].double()
    logp = torch.log_softmax(logits, dim=-1)
    token = int(torch.argmax(logp))
    return token, float(logp[token])


def served(server: VllmServer, ids: list[int]) -> tuple[int, float]:
    answer = server.ok("POST", "/v1/completions", {"model": "tiny", "prompt": ids, "max_tokens": 1,
                                                  "temperature": 0, "logprobs": 0,
                                                  "return_tokens_as_token_ids": True})
    lp = answer["choices"][0]["logprobs"]
    return int(lp["tokens"][0].removeprefix("token_id:")), float(lp["token_logprobs"][0])


def write_weights(model: Any, path: Path, with_head: bool) -> dict[str, Any]:
    """The model's weights as safetensors in Hugging Face names; without ``lm_head.weight`` as save_pretrained
    writes them for tied embeddings. Returns the ``update_info``."""
    from safetensors.torch import save_file

    tensors = {k: v.detach().clone().contiguous() for k, v in model.state_dict().items()}
    if not with_head:
        tensors.pop("lm_head.weight")
    save_file(tensors, str(path))
    data = path.read_bytes()
    return {"path": str(path), "sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}


def refit(server: VllmServer, update_info: dict[str, Any], version: str) -> list[str]:
    """vLLM's order: pause, start, update, finish with the version, resume; the routes taken."""
    routes = ["/pause?mode=wait", "/start_weight_update", "/update_weights", "/finish_weight_update", "/resume"]
    server.ok("POST", routes[0])
    server.ok("POST", routes[1])
    server.ok("POST", routes[2], {"update_info": update_info})
    server.ok("POST", routes[3], {"weight_version": version})
    server.ok("POST", routes[4])
    return routes


def test_refit_throughTheBackend_serverLogprobsEqualTransformersOnTheNewWeights(
        server: VllmServer, model_dir: Path, tmp_path: Path) -> None:
    ids = prompt_ids(model_dir)
    model = load(model_dir)
    assert model.config.tie_word_embeddings
    before = greedy(model, ids)
    token, logprob = served(server, ids)
    assert token == before[0] and math.isclose(logprob, before[1], abs_tol=1e-4), (token, logprob, before)

    server.ok("POST", "/init_weight_transfer_engine", {"init_info": {"transport": "ravel-file"}})
    # new weights: every parameter moved, the tied embedding (and so the head) included
    torch.manual_seed(11)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.5)
    after = greedy(model, ids)
    assert not math.isclose(after[1], before[1], abs_tol=1e-3), "the new weights must answer differently"
    refit(server, write_weights(model, tmp_path / "v1.safetensors", with_head=False), "1")

    assert server.ok("GET", "/weight_info")["weight_version"] == "1"
    token, logprob = served(server, ids)
    assert token == after[0], (token, after)
    assert math.isclose(logprob, after[1], abs_tol=1e-4), (logprob, after[1])


def test_gpuCheckSteps_onThisServer_everyRefitMatchesTheTrainer(server: VllmServer, model_dir: Path,
                                                               tmp_path: Path) -> None:
    """scripts/gpu-check.sh --vllm's steps on this server (its own start aside): the initial weights loaded, then
    two GRPO steps of Ravel's Python trainer, each refit through the routes in order and compared."""
    from ravel_workers import hf
    from ravel_workers.actors import PolicyTrainerImpl
    from ravel_workers.telemetry import ProcessTelemetry

    telemetry = ProcessTelemetry.from_env("policy_trainer", {"RAVEL_TELEMETRY_ENABLED": "false"})
    spec = gpu_check_vllm.trainer_spec(model_dir, "cpu", "float32", 7, 4, 1e-3)
    trainer = PolicyTrainerImpl(json.dumps(spec), telemetry=telemetry)
    lines: list[str] = []
    out = gpu_check_vllm.run_steps(gpu_check_vllm.Server(server.url, "tiny"), trainer,
                                   hf.load_tokenizer(str(model_dir)), tmp_path / "weights", steps=2, prompts=4,
                                   group_size=4, max_tokens=4, seed=7, atol=1e-4, deadline=math.inf, log=lines.append)
    telemetry.shutdown()
    assert out.failures == [], (out.failures, lines)
    assert out.routes == [list(gpu_check_vllm.REFIT_ROUTES)] * 3  # the initial weights and two steps
    assert [s.version for s in out.steps] == [1, 2]
    assert server.ok("GET", "/weight_info")["weight_version"] == "2"
    assert out.initial is not None and out.initial.error <= 1e-4
    assert all(s.probe.error <= 1e-4 and s.sampled_logprob_error <= 1e-4 for s in out.steps), lines
    assert len(list((tmp_path / "weights").glob("weights-v*.safetensors"))) == 2  # the last two versions kept


def test_gpuCheckProbe_serverOnOtherWeights_fails() -> None:
    outcome = gpu_check_vllm.Outcome(atol=1e-4)
    outcome.check_probe(gpu_check_vllm.Probe(3, server_token=5, server_logprob=-0.50, local_token=5,
                                             local_logprob=-0.52, local_best=-0.52))
    outcome.check_probe(gpu_check_vllm.Probe(4, server_token=6, server_logprob=-0.9, local_token=5,
                                             local_logprob=-0.9, local_best=-0.2))
    assert len(outcome.failures) == 2
    assert "version 3: the server's greedy log-prob -0.500000 is not transformers' -0.520000" in outcome.failures[0]
    assert "version 4: the server's greedy token 6 is not transformers' (5" in outcome.failures[1]


def test_initInfo_anotherTransport_isRefusedNamingIt(server: VllmServer) -> None:
    status, answer = server.call("POST", "/init_weight_transfer_engine", {"init_info": {"transport": "nccl"}})
    # vLLM 0.32 answers a worker's error as a 500 and cuts its text short; the whole of it is in the server's log
    assert status in (400, 500), (status, answer)
    assert "Invalid init_info for Rav" in str(answer)
    assert "transport must be 'ravel-file', got 'nccl'" in server.log.read_text(errors="replace")


def test_readWeights_fileChangedAfterTheRequest_isRefusedNamingThePath(tmp_path: Path) -> None:
    from safetensors.torch import save_file

    path = tmp_path / "w.safetensors"
    save_file({"model.embed_tokens.weight": torch.zeros(2, 2)}, str(path))
    size = path.stat().st_size
    with pytest.raises(ValueError, match=f"{path}: SHA-256 .*, the request says 00"):
        read_weights(RavelFileUpdateInfo(path=str(path), sha256="00", bytes=size))
    with pytest.raises(ValueError, match=f"{path}: {size} bytes, the request says 1"):
        read_weights(RavelFileUpdateInfo(path=str(path), sha256="00", bytes=1))
    with pytest.raises(ValueError, match="no such file on this server's node"):
        read_weights(RavelFileUpdateInfo(path=str(tmp_path / "absent"), sha256="00", bytes=1))
    garbage = tmp_path / "g.bin"
    garbage.write_bytes(b"\x00" * 64)
    digest = hashlib.sha256(garbage.read_bytes()).hexdigest()
    with pytest.raises(ValueError, match="not a safetensors file"):
        read_weights(RavelFileUpdateInfo(path=str(garbage), sha256=digest, bytes=64))


def test_withTiedHead_onlyWhenTiedAndAbsent() -> None:
    e = torch.ones(2, 2)
    h = torch.zeros(2, 2)
    assert with_tied_head({"model.embed_tokens.weight": e}, True)["lm_head.weight"] is e
    assert "lm_head.weight" not in with_tied_head({"model.embed_tokens.weight": e}, False)
    assert with_tied_head({"model.embed_tokens.weight": e, "lm_head.weight": h}, True)["lm_head.weight"] is h
