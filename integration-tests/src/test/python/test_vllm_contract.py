"""Contract test: what Ravel's client sends and what `ravel serve` answers, checked by vLLM's own code.

What it checks. `ravel serve --record-exchanges FILE` writes every HTTP exchange it serves as one JSON line
(`seq`, `arrived_by_end`, `method`, `path`, `query`, `headers`, `body`, `status`, `response`; see
`vllm_contract/sample-exchanges.jsonl`).
This module reads such logs and runs vLLM 0.33.0's own Python code over them:

1. every (method, path) in the log is a route of vLLM's API app;
2. every `POST /v1/completions` body validates as vLLM's `CompletionRequest` with no field vLLM does not
   know, and means the same to vLLM (`CompletionRequest.to_sampling_params` gives the body's n, seed,
   max_tokens, temperature, top_p, logprobs, ignore_eos); replayed through vLLM's app with a stand-in engine
   that yields the tokens, log-probs, finish reasons and weight versions `ravel serve` answered, vLLM answers
   200 with the same values in every field Ravel's client reads;
3. every completions answer validates as vLLM's `CompletionResponse` (strictly, with no field vLLM does not
   define, at any depth) and equals vLLM's own rendering of the same output in every field but `created` and
   `system_fingerprint`;
4. the RL weight-update routes (`/pause`, `/resume`, `/is_paused`, `/init_weight_transfer_engine`,
   `/start_weight_update`, `/update_weights`, `/finish_weight_update`, `/weight_info`, `/get_world_size`),
   replayed in log order, answer 200 in vLLM too, reach the engine in the same order with the same arguments,
   and answer the same bodies; the log keeps vLLM's sequence rules (updates only between a start and a
   finish, no start while one is active, all of it while paused, the transfer engine initialized first), and
   completions name only weight-version labels vLLM would give: "default", or the label of a finish that
   arrived before the completion ended (one held by `pause?mode=keep` goes on under the update's weights);
5. LoRA load/unload bodies validate as vLLM's LoRA request models and answer as vLLM does; `/v1/models`
   answers validate as vLLM's `ModelList` and list the same models; error answers have vLLM's error shape;
6. a summary (printed; see it with `pytest -s`) and the check that the log holds at least one completion and
   one full weight update (pause, start, update, finish, resume): a log without them is a failed capture.

How the app is built. vLLM's own `build_app` (`vllm.entrypoints.launchers.app`) with arguments parsed by
vLLM's own CLI parser, and vLLM's own `init_app_state` on a stand-in engine client: the whole app, all of
its routers (the RL router is mounted by `build_app` itself since `VLLM_SERVER_DEV_MODE=1`, the LoRA router
since `VLLM_ALLOW_RUNTIME_LORA_UPDATING=1`), middleware and exception handlers, and the real serving objects
(`OpenAIServingCompletion`, `OpenAIServingModels`, the renderer) over a real `ModelConfig`. That config is
read from a `config.json` this module writes in a temporary folder (a tiny Llama shape; no weights, no
tokenizer: `--skip-tokenizer-init`), with the served name and `max_model_len` taken from the log's
`/v1/models` answer. Requests go in-process through Starlette's `TestClient`: no sockets, no network, no GPU.
The stand-in engine records every call; its `generate` yields a `RequestOutput` rebuilt from the answer
`ravel serve` gave to the same request, so vLLM's serving code renders it; its weight-update calls refuse
calls out of order with the message vLLM's worker gives (as the engine core reports it: "Call to
collective_rpc method failed: ..."), and its weight-version label starts at "default" as vLLM's engine core's
does. Each log file is replayed on an app of its own (one `ravel serve` each).

How it is run. `RAVEL_EXCHANGES` names the log (several: joined with os.pathsep). Without it every test fails.
Or `RAVEL_EXCHANGES_FROM` names a file that will hold that value, waited for (at most 900 s) before the logs are
read: a caller that is still writing the logs starts this test first, so that vLLM's imports run meanwhile.
vLLM 0.33.0 must be importable (CPU-only is enough; `scripts/setup-vllm.sh` installs it):

    RAVEL_EXCHANGES=run.jsonl VENV/bin/python -m pytest -q -p no:cacheprovider \\
        integration-tests/src/test/python/test_vllm_contract.py

What it cannot check. vLLM's engine does not run here: sampling itself, the log-prob values, how vLLM splits
`n` into seeded child requests, the 503 it answers to completions arriving during an `abort`/`wait` pause
(the log is written in the order exchanges end, so arrival order is unknown; a 503 in the log is replayed as
the engine's own paused rejection), and the weight data path (the NCCL or IPC transfer behind
`/update_weights` needs a GPU; Ravel's own file transport is opaque `update_info` to vLLM, checked only as the
dict vLLM hands its engine). Prompt token ids are not checked against the real vocabulary (the stand-in
config's vocabulary is only as large as the largest id in the log). Streaming is not exercised.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import time
import urllib.parse
from collections import Counter
from collections.abc import AsyncGenerator, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Final, cast

import pytest

# vLLM reads these when its modules load: set them before any vLLM import
os.environ["VLLM_TARGET_DEVICE"] = "cpu"
os.environ["VLLM_SERVER_DEV_MODE"] = "1"  # mounts the RL weight-update routes
os.environ["VLLM_ALLOW_RUNTIME_LORA_UPDATING"] = "1"  # mounts /v1/load_lora_adapter and /v1/unload_lora_adapter
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ["VLLM_NO_USAGE_STATS"] = "1"
os.environ["DO_NOT_TRACK"] = "1"

from fastapi import FastAPI  # noqa: E402
from fastapi.testclient import TestClient  # noqa: E402
from pydantic import BaseModel, ValidationError  # noqa: E402
from starlette.routing import Route  # noqa: E402
from vllm.config import ModelConfig, VllmConfig  # noqa: E402
from vllm.distributed.weight_transfer.base import (  # noqa: E402
    WeightTransferInitRequest,
    WeightTransferUpdateRequest,
)
from vllm.engine.arg_utils import AsyncEngineArgs  # noqa: E402
from vllm.engine.protocol import EngineClient  # noqa: E402
from vllm.entrypoints.common.cli_args import make_arg_parser  # noqa: E402
from vllm.entrypoints.launchers.api_server.app_state import init_app_state  # noqa: E402
from vllm.entrypoints.launchers.app import build_app  # noqa: E402
from vllm.entrypoints.openai.completion.protocol import (  # noqa: E402
    CompletionRequest,
    CompletionResponse,
    CompletionResponseChoice,
)
from vllm.entrypoints.serve.engine.protocol import ErrorResponse, ModelList  # noqa: E402
from vllm.entrypoints.serve.lora.protocol import LoadLoRAAdapterRequest, UnloadLoRAAdapterRequest  # noqa: E402
from vllm.entrypoints.serve.utils.api_utils import get_max_tokens  # noqa: E402
from vllm.exceptions import RetryableRequestError  # noqa: E402
from vllm.logprobs import Logprob, SampleLogprobs  # noqa: E402
from vllm.lora.request import LoRARequest  # noqa: E402
from vllm.outputs import CompletionOutput, RequestOutput, WeightVersionSpan  # noqa: E402
from vllm.renderers.base import BaseRenderer  # noqa: E402
from vllm.renderers.registry import renderer_from_config  # noqa: E402
from vllm.sampling_params import SamplingParams  # noqa: E402
from vllm.tasks import SupportedTask  # noqa: E402
from vllm.utils.argparse_utils import FlexibleArgumentParser  # noqa: E402
from vllm.v1.engine.exceptions import EngineDeadError  # noqa: E402

ENV_VAR: Final = "RAVEL_EXCHANGES"
FROM_VAR: Final = "RAVEL_EXCHANGES_FROM"
FROM_WAIT_S: Final = 900.0
HOW_TO_RUN: Final = (
    f"{ENV_VAR} is not set: it must name the exchange log(s) written by `ravel serve --record-exchanges FILE` "
    f"(several joined with {os.pathsep!r}). Run: {ENV_VAR}=FILE VENV/bin/python -m pytest -q -p no:cacheprovider "
    "integration-tests/src/test/python/test_vllm_contract.py, with VENV from scripts/setup-vllm.sh (vLLM 0.33.0); "
    "integration-tests/src/test/python/vllm_contract/sample-exchanges.jsonl shows the format."
)
SUPPORTED_TASKS: Final[tuple[SupportedTask, ...]] = ("generate",)
COMPLETIONS: Final = "/v1/completions"
MODELS: Final = "/v1/models"
LOAD_LORA: Final = "/v1/load_lora_adapter"
UNLOAD_LORA: Final = "/v1/unload_lora_adapter"
RL_PATHS: Final = frozenset({
    "/pause", "/resume", "/is_paused", "/init_weight_transfer_engine", "/start_weight_update", "/update_weights",
    "/finish_weight_update", "/weight_info", "/get_world_size",
})
# the engine core's label before any finish_weight_update names one (EngineCore._weight_version)
INITIAL_WEIGHT_VERSION: Final = "default"
TOKEN_ID_PREFIX: Final = "token_id:"
# fields of a completions answer that differ between any two servers by nature
SERVER_SPECIFIC_FIELDS: Final = frozenset({"created", "system_fingerprint"})
# used when the log has no /v1/models answer to take the length from
DEFAULT_MAX_MODEL_LEN: Final = 131072
MAX_REPORTED: Final = 25
PYDANTIC_TRUE: Final = frozenset({"1", "on", "t", "true", "y", "yes"})
PYDANTIC_FALSE: Final = frozenset({"0", "off", "f", "false", "n", "no"})


# ---------------------------------------------------------------------------------------------------------------
# The exchange log


@dataclasses.dataclass(frozen=True)
class Exchange:
    """One line of an exchange log."""

    source: str
    line: int
    seq: int
    """The order the exchange arrived at the server (lines are written in the order exchanges end)."""
    arrived_by_end: int
    """How many exchanges had arrived when this one's line was written: none that arrived later changed its answer."""
    method: str
    path: str
    query: str
    headers: Mapping[str, str]
    body: str
    status: int
    response: str

    @property
    def request_id(self) -> str | None:
        return self.headers.get("x-request-id")

    def where(self) -> str:
        target = self.path + ("?" + self.query if self.query else "")
        return f"{Path(self.source).name}:{self.line} {self.method} {target} (x-request-id {self.request_id or '-'})"

    def body_json(self) -> object:
        return _parse_json(self.body) if self.body else None

    def response_json(self) -> object:
        return _parse_json(self.response) if self.response else None


@dataclasses.dataclass(frozen=True)
class ExchangeLog:
    source: str
    exchanges: list[Exchange]


class LogFormatError(Exception):
    """A line of the exchange log is not what `ravel serve --record-exchanges` writes."""


class ReplayError(Exception):
    """The stand-in engine cannot rebuild an engine output from what `ravel serve` answered."""


def _parse_json(text: str) -> object:
    value: object = json.loads(text)
    return value


def _read_log(source: str) -> ExchangeLog:
    path = Path(source)
    if not path.is_file():
        raise LogFormatError(f"{source}: no such file (from {ENV_VAR})")
    exchanges: list[Exchange] = []
    with path.open(encoding="utf-8") as f:
        for number, raw in enumerate(f, start=1):
            if not raw.strip():
                continue
            where = f"{path.name}:{number}"
            try:
                value = _parse_json(raw)
            except json.JSONDecodeError as e:
                raise LogFormatError(f"{where}: not JSON: {e}") from e
            if not isinstance(value, dict):
                raise LogFormatError(f"{where}: not a JSON object")
            exchanges.append(_exchange(source, number, value, where))
    # lines are written as exchanges end; `seq` is the order they arrived, the order a client's calls were made
    exchanges.sort(key=lambda ex: ex.seq)
    return ExchangeLog(source, exchanges)


def _exchange(source: str, number: int, value: dict[str, object], where: str) -> Exchange:
    expected = {"seq", "arrived_by_end", "method", "path", "query", "headers", "body", "status", "response"}
    if missing := expected - value.keys():
        raise LogFormatError(f"{where}: missing {sorted(missing)}")
    seq = value["seq"]
    if not isinstance(seq, int) or isinstance(seq, bool) or seq < 1:
        raise LogFormatError(f"{where}: seq is not a positive integer: {seq!r}")
    arrived_by_end = value["arrived_by_end"]
    if not isinstance(arrived_by_end, int) or isinstance(arrived_by_end, bool) or arrived_by_end < seq:
        raise LogFormatError(f"{where}: arrived_by_end is not an integer >= seq ({seq}): {arrived_by_end!r}")
    if unknown := value.keys() - expected:
        raise LogFormatError(f"{where}: unknown fields {sorted(unknown)}")
    texts = {k: value[k] for k in ("method", "path", "query", "body", "response")}
    for k, v in texts.items():
        if not isinstance(v, str):
            raise LogFormatError(f"{where}: {k} is not a string: {v!r}")
    status = value["status"]
    if not isinstance(status, int) or isinstance(status, bool):
        raise LogFormatError(f"{where}: status is not an integer: {status!r}")
    raw_headers = value["headers"]
    if not isinstance(raw_headers, dict):
        raise LogFormatError(f"{where}: headers is not an object")
    headers: dict[str, str] = {}
    for name, header in raw_headers.items():
        if not isinstance(name, str) or not isinstance(header, str) or name != name.lower():
            raise LogFormatError(f"{where}: header {name!r}: {header!r} is not a lowercase name with a string value")
        headers[name] = header
    return Exchange(source, number, seq, arrived_by_end, str(texts["method"]), str(texts["path"]),
                    str(texts["query"]), headers,
                    str(texts["body"]), status, str(texts["response"]))


def _of_path(logs: Iterable[ExchangeLog], *paths: str) -> list[Exchange]:
    return [ex for log in logs for ex in log.exchanges if ex.path in paths]


# ---------------------------------------------------------------------------------------------------------------
# Small JSON helpers (values from json.loads are typed `object` and narrowed here)


def _as_dict(value: object) -> dict[str, object]:
    return cast(dict[str, object], value) if isinstance(value, dict) else {}


def _as_list(value: object) -> list[object]:
    return cast(list[object], value) if isinstance(value, list) else []


def _as_int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _as_float(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _token_id(name: object) -> int:
    if not isinstance(name, str) or not name.startswith(TOKEN_ID_PREFIX):
        raise ReplayError(f"token {name!r} is not {TOKEN_ID_PREFIX}<id> (return_tokens_as_token_ids ignored?)")
    try:
        return int(name[len(TOKEN_ID_PREFIX):])
    except ValueError as e:
        raise ReplayError(f"token {name!r} is not {TOKEN_ID_PREFIX}<id>") from e


def _shorten(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


def _report(title: str, problems: Sequence[str]) -> str:
    shown = "\n  ".join(problems[:MAX_REPORTED])
    more = f"\n  ... and {len(problems) - MAX_REPORTED} more" if len(problems) > MAX_REPORTED else ""
    return f"{title} ({len(problems)}):\n  {shown}{more}"


def _unknown_fields(data: object, value: object, where: str) -> list[str]:
    """The keys of `data` (a JSON value) that the validated `value` (a vLLM model) has no field for, at any depth.

    vLLM's `OpenAIBaseModel` allows extra fields (it logs and keeps them), plain pydantic models and dataclasses
    drop them silently: both hide a field vLLM does not know, so the input is compared with the model's fields.
    """
    if isinstance(value, BaseModel) and isinstance(data, dict):
        known: dict[str, str] = {}
        for name, info in type(value).model_fields.items():
            known[name] = name
            if info.alias:
                known[info.alias] = name
            if isinstance(info.validation_alias, str):
                known[info.validation_alias] = name
        out = [f"{where}.{key}" for key in data if key not in known]
        for key, name in known.items():
            if key in data:
                out += _unknown_fields(data[key], getattr(value, name), f"{where}.{key}")
        return out
    if dataclasses.is_dataclass(value) and not isinstance(value, type) and isinstance(data, dict):
        names = {f.name for f in dataclasses.fields(value)}
        out = [f"{where}.{key}" for key in data if key not in names]
        for key in names & data.keys():
            out += _unknown_fields(data[key], getattr(value, key), f"{where}.{key}")
        return out
    if isinstance(value, list) and isinstance(data, list):
        pairs = enumerate(zip(data, value, strict=False))
        return [u for i, (d, v) in pairs for u in _unknown_fields(d, v, f"{where}[{i}]")]
    return []


def _differences(ours: object, theirs: object, where: str, skip: frozenset[str] = frozenset()) -> list[str]:
    """Where two JSON values differ; in objects an absent key equals null (what a JSON client reads)."""
    if isinstance(ours, dict) and isinstance(theirs, dict):
        out: list[str] = []
        for key in sorted(set(ours) | set(theirs)):
            if key not in skip:
                out += _differences(ours.get(key), theirs.get(key), f"{where}.{key}")
        return out
    if isinstance(ours, list) and isinstance(theirs, list):
        if len(ours) != len(theirs):
            return [f"{where}: {len(ours)} entries in ravel serve's, {len(theirs)} in vLLM's"]
        pairs = enumerate(zip(ours, theirs, strict=True))
        return [d for i, (a, b) in pairs for d in _differences(a, b, f"{where}[{i}]")]
    if type(ours) is not type(theirs) and not (_as_float(ours) is not None and _as_float(theirs) is not None):
        return [f"{where}: ravel serve {ours!r}, vLLM {theirs!r}"]
    return [] if ours == theirs else [f"{where}: ravel serve {ours!r}, vLLM {theirs!r}"]


# ---------------------------------------------------------------------------------------------------------------
# The stand-in engine


@dataclasses.dataclass(frozen=True)
class EngineCall:
    """One call vLLM's app made on the engine client (other than generate)."""

    name: str
    args: dict[str, object]

    def __str__(self) -> str:
        return f"{self.name}({', '.join(f'{k}={v!r}' for k, v in self.args.items())})"


@dataclasses.dataclass(frozen=True)
class GenerateCall:
    """One `generate` call: one prompt of a completions request."""

    request_id: str
    prompt_token_ids: list[int]
    params: SamplingParams
    trace_headers: dict[str, str] | None
    lora_name: str | None


def _collective_rpc_failure(message: str) -> Exception:
    # how a worker's RuntimeError reaches the API server: EngineCore's utility call fails with this message and
    # the engine core client raises it as a plain Exception (vllm/v1/engine/core.py, core_client.py)
    return Exception(f"Call to collective_rpc method failed: {message}")


class StandInEngine:
    """An engine client for vLLM's app that records what it is asked and answers with what ravel serve answered.

    The weight-update calls keep the state vLLM's worker keeps (`Worker._weight_update_active`) and refuse calls
    out of order as it does; the weight-version label is the engine core's ("default" until set).
    """

    def __init__(self, vllm_config: VllmConfig, renderer: BaseRenderer) -> None:
        self.vllm_config = vllm_config
        self.model_config: ModelConfig = vllm_config.model_config
        self.renderer = renderer
        self.input_processor: object = None
        self.calls: list[EngineCall] = []
        self.generated: list[GenerateCall] = []
        self.current: Exchange | None = None
        self.pause_mode: str | None = None
        self.update_active = False
        self.weight_version = INITIAL_WEIGHT_VERSION

    # -- the parts of EngineClient the serving code reads
    @property
    def errored(self) -> bool:
        return False

    @property
    def is_running(self) -> bool:
        return True

    @property
    def is_stopped(self) -> bool:
        return False

    @property
    def dead_error(self) -> BaseException:
        return EngineDeadError()

    def check_admission(self, n: int = 1, request_id: str | None = None) -> None:
        return None

    async def is_tracing_enabled(self) -> bool:
        return False

    async def do_log_stats(self) -> None:
        return None

    async def check_health(self) -> None:
        return None

    async def get_supported_tasks(self) -> tuple[SupportedTask, ...]:
        return SUPPORTED_TASKS

    async def abort(self, request_id: str | Iterable[str], internal: bool = False) -> None:
        ids = [request_id] if isinstance(request_id, str) else list(request_id)
        self.calls.append(EngineCall("abort", {"request_id": ids}))

    async def add_lora(self, lora_request: LoRARequest) -> bool:
        self.calls.append(EngineCall("add_lora", {"lora_name": lora_request.lora_name,
                                                  "lora_path": lora_request.lora_path}))
        return True

    async def generate(
        self,
        prompt: object,
        sampling_params: SamplingParams,
        request_id: str,
        *,
        lora_request: LoRARequest | None = None,
        trace_headers: Mapping[str, str] | None = None,
        **kwargs: object,
    ) -> AsyncGenerator[RequestOutput, None]:
        prompt_ids = [t for t in map(_as_int, _as_list(_as_dict(prompt).get("prompt_token_ids"))) if t is not None]
        self.generated.append(GenerateCall(request_id, prompt_ids, sampling_params,
                                           None if trace_headers is None else dict(trace_headers),
                                           None if lora_request is None else lora_request.lora_name))
        exchange = self.current
        if exchange is None:
            raise ReplayError("generate called outside a replayed exchange")
        if exchange.status == 503:
            # ravel serve refused it as paused: the engine core's own refusal (EngineCore._reject_add_while_paused)
            raise RetryableRequestError("Generation is paused. Please retry after it resumes.")
        if exchange.status != 200:
            raise ReplayError(f"ravel serve answered {exchange.status}: the stand-in has no output to give")
        prompt_index = int(request_id.rsplit("-", 1)[1])
        yield _request_output(exchange, prompt_index, sampling_params.n, request_id, prompt_ids)

    # -- the RL routes' calls (vllm/v1/engine/async_llm.py, vllm/v1/worker/gpu_worker.py)
    async def pause_generation(self, *, mode: str = "abort", clear_cache: bool = True) -> None:
        self.calls.append(EngineCall("pause_generation", {"mode": mode, "clear_cache": clear_cache}))
        self.pause_mode = mode

    async def resume_generation(self) -> None:
        self.calls.append(EngineCall("resume_generation", {}))
        self.pause_mode = None

    async def is_paused(self) -> bool:
        self.calls.append(EngineCall("is_paused", {}))
        return self.pause_mode is not None

    async def init_weight_transfer_engine(self, request: WeightTransferInitRequest) -> None:
        self.calls.append(EngineCall("init_weight_transfer_engine", {"init_info": request.init_info}))

    async def start_weight_update(self) -> None:
        self.calls.append(EngineCall("start_weight_update", {}))
        if self.update_active:
            raise _collective_rpc_failure("start_weight_update called while a weight update is already active. "
                                          "Call finish_weight_update first.")
        self.update_active = True

    async def update_weights(self, request: WeightTransferUpdateRequest) -> None:
        self.calls.append(EngineCall("update_weights", {"update_info": request.update_info}))
        if not self.update_active:
            raise _collective_rpc_failure("start_weight_update must be called before update_weights.")

    async def finish_weight_update(self, weight_version: str | None = None) -> None:
        self.calls.append(EngineCall("finish_weight_update", {"weight_version": weight_version}))
        if not self.update_active:
            raise _collective_rpc_failure("finish_weight_update called without a matching start_weight_update.")
        self.update_active = False
        if weight_version is not None:
            self.weight_version = weight_version

    async def update_weight_version(self, new_version: str) -> None:
        self.calls.append(EngineCall("update_weight_version", {"new_version": new_version}))
        self.weight_version = new_version

    async def get_weight_version(self) -> str:
        self.calls.append(EngineCall("get_weight_version", {}))
        return self.weight_version


def _request_output(exchange: Exchange, prompt_index: int, n: int, request_id: str,
                    prompt_ids: list[int]) -> RequestOutput:
    """The engine output for prompt `prompt_index` of `exchange`, rebuilt from ravel serve's answer to it."""
    try:
        answer = exchange.response_json()
    except json.JSONDecodeError as e:
        raise ReplayError(f"ravel serve's answer is not JSON: {e}") from e
    choices = [_as_dict(c) for c in _as_list(_as_dict(answer).get("choices"))]
    mine = sorted((c for c in choices if (_as_int(c.get("index")) or 0) // n == prompt_index),
                  key=lambda c: _as_int(c.get("index")) or 0)
    if len(mine) != n:
        raise ReplayError(f"ravel serve's answer has {len(mine)} choices for prompt {prompt_index}, n is {n}")
    outputs = [_completion_output(c, (_as_int(c.get("index")) or 0) - prompt_index * n) for c in mine]
    return RequestOutput(request_id=request_id, prompt=None, prompt_token_ids=prompt_ids, prompt_logprobs=None,
                         outputs=outputs, finished=True)


def _completion_output(choice: dict[str, object], index: int) -> CompletionOutput:
    logprobs = choice.get("logprobs")
    if not isinstance(logprobs, dict):
        raise ReplayError(f"choice {choice.get('index')} has no logprobs: its token ids cannot be rebuilt")
    tokens = _as_list(logprobs.get("tokens"))
    values = _as_list(logprobs.get("token_logprobs"))
    tops = _as_list(logprobs.get("top_logprobs"))
    if len(values) != len(tokens):
        raise ReplayError(f"choice {choice.get('index')}: {len(tokens)} tokens, {len(values)} token_logprobs")
    ids = [_token_id(t) for t in tokens]
    steps: list[dict[int, Logprob] | None] = []
    for i, (token, value) in enumerate(zip(ids, values, strict=True)):
        number = _as_float(value)
        if number is None:
            steps.append(None)
            continue
        step = {token: Logprob(logprob=number, rank=1)}
        top = _as_dict(tops[i]) if i < len(tops) else {}
        for name, top_value in top.items():
            top_number = _as_float(top_value)
            if top_number is not None:
                step.setdefault(_token_id(name), Logprob(logprob=top_number))
        steps.append(step)
    spans: list[WeightVersionSpan] | None = None
    if isinstance(choice.get("weight_versions"), list):
        spans = []
        for span in _as_list(choice.get("weight_versions")):
            s = _as_dict(span)
            spans.append(WeightVersionSpan(str(s.get("version")), _as_int(s.get("start")) or 0,
                                           _as_int(s.get("end")) or 0))
    finish = choice.get("finish_reason")
    stop = choice.get("stop_reason")
    return CompletionOutput(
        index=index,
        text=str(choice.get("text") or ""),
        token_ids=ids,
        cumulative_logprob=None,
        logprobs=cast(SampleLogprobs, steps),
        finish_reason=finish if isinstance(finish, str) else None,
        stop_reason=stop if isinstance(stop, (str, int)) and not isinstance(stop, bool) else None,
        weight_versions=spans,
    )


# ---------------------------------------------------------------------------------------------------------------
# vLLM's app, one per log


@dataclasses.dataclass(frozen=True)
class ServedFacts:
    """What the log says about the server: the base model's served name and its max_model_len."""

    model_name: str
    max_model_len: int
    vocab_size: int


@dataclasses.dataclass(frozen=True)
class Replayed:
    """One exchange replayed through vLLM's app: vLLM's answer and what the engine was asked meanwhile."""

    exchange: Exchange
    status: int
    body: str
    calls: list[EngineCall]
    generated: list[GenerateCall]

    def body_json(self) -> object:
        try:
            return _parse_json(self.body) if self.body else None
        except json.JSONDecodeError:
            return self.body


@dataclasses.dataclass(frozen=True)
class VllmServer:
    log: ExchangeLog
    facts: ServedFacts
    app: FastAPI
    engine: StandInEngine
    model_config: ModelConfig
    replayed: list[Replayed]


def _facts(log: ExchangeLog) -> ServedFacts:
    name: str | None = None
    max_len: int | None = None
    for ex in log.exchanges:
        if ex.path == MODELS and ex.status == 200 and name is None:
            for card in _as_list(_as_dict(_safe_json(ex.response)).get("data")):
                c = _as_dict(card)
                if c.get("parent") is None and isinstance(c.get("id"), str):
                    name, max_len = str(c["id"]), _as_int(c.get("max_model_len"))
                    break
    adapters = {str(_as_dict(_safe_json(ex.body)).get("lora_name")) for ex in log.exchanges if ex.path == LOAD_LORA}
    largest = 0
    for ex in log.exchanges:
        if ex.path != COMPLETIONS:
            continue
        body = _as_dict(_safe_json(ex.body))
        model = body.get("model")
        if name is None and isinstance(model, str) and model not in adapters:
            name = model
        largest = max([largest, *(i for i in map(_as_int, _as_list(body.get("prompt"))) if i is not None)])
        for choice in _as_list(_as_dict(_safe_json(ex.response)).get("choices")):
            for token in _as_list(_as_dict(_as_dict(choice).get("logprobs")).get("tokens")):
                if isinstance(token, str) and token.startswith(TOKEN_ID_PREFIX):
                    largest = max(largest, _as_int(_safe_json(token[len(TOKEN_ID_PREFIX):])) or 0)
    return ServedFacts(name or "ravel", max_len or DEFAULT_MAX_MODEL_LEN, max(largest + 1, 16))


def _safe_json(text: str) -> object:
    try:
        return _parse_json(text) if text else None
    except json.JSONDecodeError:
        return None


def _write_model_dir(folder: Path, facts: ServedFacts) -> None:
    """A Hugging Face config.json of a tiny Llama shape: enough for vLLM's ModelConfig; no weights are read."""
    folder.mkdir(parents=True, exist_ok=True)
    config = {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64, "intermediate_size": 128,
        "num_attention_heads": 4, "num_key_value_heads": 4, "num_hidden_layers": 1, "vocab_size": facts.vocab_size,
        "max_position_embeddings": facts.max_model_len, "rms_norm_eps": 1e-6, "torch_dtype": "float32",
        "bos_token_id": 0, "eos_token_id": 0,
    }
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")


def _build_server(log: ExchangeLog, folder: Path) -> VllmServer:
    facts = _facts(log)
    _write_model_dir(folder, facts)
    argv = ["--model", str(folder), "--served-model-name", facts.model_name, "--skip-tokenizer-init",
            "--max-model-len", str(facts.max_model_len), "--generation-config", "vllm", "--disable-log-stats"]
    args = make_arg_parser(FlexibleArgumentParser()).parse_args(argv)  # type: ignore[no-untyped-call]
    model_config = AsyncEngineArgs.from_cli_args(args).create_model_config()
    vllm_config = VllmConfig(model_config=model_config)
    engine = StandInEngine(vllm_config, renderer_from_config(vllm_config))
    app = build_app(args, supported_tasks=SUPPORTED_TASKS, model_config=model_config)
    asyncio.run(init_app_state(cast(EngineClient, engine), app.state, args, SUPPORTED_TASKS))
    replayed = _replay(app, engine, log)
    return VllmServer(log, facts, app, engine, model_config, replayed)


def _replay(app: FastAPI, engine: StandInEngine, log: ExchangeLog) -> list[Replayed]:
    # no `with`: the app's lifespan would start the stats logger and drop app.state at its end
    client = TestClient(app, raise_server_exceptions=False)
    out: list[Replayed] = []
    for ex in log.exchanges:
        engine.current = ex
        calls, generated = len(engine.calls), len(engine.generated)
        url = ex.path + ("?" + ex.query if ex.query else "")
        answer = client.request(ex.method, url, content=ex.body.encode("utf-8") if ex.body else None,
                                headers=dict(ex.headers))
        out.append(Replayed(ex, answer.status_code, answer.text, engine.calls[calls:], engine.generated[generated:]))
    engine.current = None
    return out


# ---------------------------------------------------------------------------------------------------------------
# Fixtures


@dataclasses.dataclass(frozen=True)
class Capture:
    """The logs named by RAVEL_EXCHANGES and vLLM's apps that replayed them; `problem` says why there are none."""

    logs: list[ExchangeLog]
    servers: list[VllmServer]
    problem: str | None


def _exchanges() -> tuple[str, str | None]:
    """RAVEL_EXCHANGES's value, else what the file RAVEL_EXCHANGES_FROM names holds once it exists; and why there
    is none, if there is none."""
    value = os.environ.get(ENV_VAR, "").strip()
    listed = os.environ.get(FROM_VAR, "").strip()
    if value or not listed:
        return value, None if value else HOW_TO_RUN
    path = Path(listed)
    deadline = time.monotonic() + FROM_WAIT_S
    while not path.is_file():
        if time.monotonic() > deadline:
            return "", f"{FROM_VAR}: {listed} was not written within {FROM_WAIT_S:.0f} s"
        time.sleep(0.2)
    value = path.read_text(encoding="utf-8").strip()
    return value, None if value else f"{FROM_VAR}: {listed} names no log"


@pytest.fixture(scope="module")
def capture(tmp_path_factory: pytest.TempPathFactory) -> Capture:
    value, problem = _exchanges()
    if problem is not None:
        return Capture([], [], problem)
    logs: list[ExchangeLog] = []
    for source in (s for s in value.split(os.pathsep) if s.strip()):
        try:
            logs.append(_read_log(source))
        except LogFormatError as e:
            return Capture([], [], f"{ENV_VAR}: {e}")
    servers = [_build_server(log, tmp_path_factory.mktemp(f"model-{i}")) for i, log in enumerate(logs)]
    return Capture(logs, servers, None)


def _logs(capture: Capture) -> list[ExchangeLog]:
    """The logs to check; fails the calling test (a failure, not a setup error) when there are none."""
    if capture.problem is not None:
        pytest.fail(capture.problem, pytrace=False)
    return capture.logs


def _servers(capture: Capture) -> list[VllmServer]:
    """vLLM's apps that replayed the logs; fails the calling test when there are none."""
    _logs(capture)
    return capture.servers


def _replayed(servers: Sequence[VllmServer], *paths: str) -> list[tuple[VllmServer, Replayed]]:
    return [(s, r) for s in servers for r in s.replayed if r.exchange.path in paths]


# ---------------------------------------------------------------------------------------------------------------
# 1. Routes


def test_routes_exist_in_vllm_app(capture: Capture) -> None:
    logs = _logs(capture)
    servers = _servers(capture)
    routes: set[tuple[str, str]] = set()
    for route in servers[0].app.routes:
        if isinstance(route, Route) and route.methods:
            routes |= {(method, route.path) for method in route.methods}
    first: dict[tuple[str, str], Exchange] = {}
    for log in logs:
        for ex in log.exchanges:
            first.setdefault((ex.method, ex.path), ex)
    missing = [f"{m} {p} (first at {ex.where()})" for (m, p), ex in first.items() if (m, p) not in routes]
    assert not missing, _report("routes in the log that vLLM's app does not have with that method", missing)


# ---------------------------------------------------------------------------------------------------------------
# 2. Completions requests


def _validated_request(ex: Exchange) -> tuple[dict[str, object], CompletionRequest]:
    """The body and vLLM's CompletionRequest of it; ValueError (pydantic's ValidationError is one) if vLLM refuses
    it."""
    body = ex.body_json()
    if not isinstance(body, dict):
        raise ValueError(f"the body is not a JSON object: {_shorten(ex.body)}")
    return body, CompletionRequest.model_validate(body)


def test_completion_requests_validate_as_vllm_completion_request_without_unknown_fields(capture: Capture) -> None:
    logs = _logs(capture)
    exchanges = _of_path(logs, COMPLETIONS)
    problems: list[str] = []
    for ex in exchanges:
        try:
            body, request = _validated_request(ex)
        except ValueError as e:
            problems.append(f"{ex.where()}: vLLM rejects the body: {_shorten(str(e), 600)}")
            continue
        if unknown := _unknown_fields(body, request, "body"):
            problems.append(f"{ex.where()}: fields vLLM's CompletionRequest does not define: {unknown}")
    assert exchanges, "the log has no POST /v1/completions"
    assert not problems, _report("completions requests vLLM does not take as they are", problems)


def _meaning_problems(body: Mapping[str, object], params: SamplingParams, request: CompletionRequest) -> list[str]:
    """How what vLLM makes of a completions body differs from what Ravel's client means by it."""
    out: list[str] = []
    for field in ("n", "seed", "max_tokens", "temperature", "top_p", "logprobs"):
        if field not in body:
            out.append(f"{field} is not sent: vLLM takes its default ({getattr(params, field)!r})")
        elif getattr(params, field) != body[field]:
            out.append(f"{field}: the body says {body[field]!r}, vLLM samples with {getattr(params, field)!r}")
    if params.ignore_eos != body.get("ignore_eos", False):
        out.append(f"ignore_eos: the body says {body.get('ignore_eos')!r}, vLLM samples with {params.ignore_eos!r}")
    if body.get("logprobs") is not None and request.return_tokens_as_token_ids is not True:
        out.append("return_tokens_as_token_ids is not true: vLLM would answer decoded token text, not token ids")
    if request.stream:
        out.append("stream is true: vLLM would answer server-sent events")
    if request.echo:
        out.append("echo is true: vLLM would put the prompt in front of the completion")
    if request.return_weight_versions != (body.get("return_weight_versions") is True):
        out.append(f"return_weight_versions: the body says {body.get('return_weight_versions')!r}, "
                   f"vLLM reads {request.return_weight_versions!r}")
    return out


def test_completion_requests_mean_the_same_to_vllm(capture: Capture) -> None:
    servers = _servers(capture)
    problems: list[str] = []
    count = 0
    for server, replayed in _replayed(servers, COMPLETIONS):
        ex = replayed.exchange
        try:
            body, request = _validated_request(ex)
        except ValueError:
            continue  # reported by the validation test
        count += 1
        prompt = body.get("prompt")
        if not isinstance(prompt, list) or not all(_as_int(t) is not None for t in prompt):
            problems.append(f"{ex.where()}: prompt is not one list of token ids: {_shorten(repr(prompt))}")
            continue
        defaults = server.model_config.get_diff_sampling_param()
        try:
            max_tokens = get_max_tokens(server.facts.max_model_len, request.max_tokens, len(prompt), defaults)
        except ValueError as e:
            problems.append(f"{ex.where()}: {e}")
            continue
        params = request.to_sampling_params(max_tokens, defaults)
        problems += [f"{ex.where()}: {p}" for p in _meaning_problems(body, params, request)]
    assert count, "the log has no POST /v1/completions vLLM accepts"
    assert not problems, _report("completions requests that mean something else to vLLM", problems)


def _read_fields(answer: object) -> dict[str, object]:
    """The fields of a completions answer Ravel's client reads (CompletionsProtocol)."""
    root = _as_dict(answer)
    usage = _as_dict(root.get("usage"))
    choices: list[object] = []
    for c in _as_list(root.get("choices")):
        choice = _as_dict(c)
        logprobs = _as_dict(choice.get("logprobs"))
        choices.append({"index": choice.get("index"), "tokens": logprobs.get("tokens"),
                        "token_logprobs": logprobs.get("token_logprobs"), "finish_reason": choice.get("finish_reason"),
                        "weight_versions": choice.get("weight_versions")})
    return {"id": root.get("id"), "model": root.get("model"), "choices": choices,
            "usage.prompt_tokens": usage.get("prompt_tokens"),
            "usage.completion_tokens": usage.get("completion_tokens")}


def _engine_problems(server: VllmServer, replayed: Replayed, body: Mapping[str, object]) -> list[str]:
    """What vLLM passed its engine for a replayed completions request, against the body and headers."""
    ex = replayed.exchange
    prompt = _as_list(body.get("prompt"))
    if len(replayed.generated) != 1:
        return [f"vLLM called generate {len(replayed.generated)} times for one prompt"]
    call = replayed.generated[0]
    out: list[str] = []
    if call.prompt_token_ids != prompt:
        out.append(f"vLLM's engine got prompt {call.prompt_token_ids}, the body has {prompt}")
    for field in ("n", "seed", "max_tokens", "temperature", "top_p", "logprobs"):
        if field in body and getattr(call.params, field) != body[field]:
            out.append(f"vLLM's engine got {field}={getattr(call.params, field)!r}, the body has {body[field]!r}")
    if call.params.ignore_eos != body.get("ignore_eos", False):
        out.append(f"vLLM's engine got ignore_eos={call.params.ignore_eos!r}, the body has {body.get('ignore_eos')!r}")
    sent_trace = {h: ex.headers[h] for h in ("traceparent", "tracestate") if h in ex.headers} or None
    if call.trace_headers != sent_trace:
        out.append(f"vLLM's engine got trace headers {call.trace_headers}, the request had {sent_trace}")
    model = body.get("model")
    adapter = model if isinstance(model, str) and model != server.facts.model_name else None
    if call.lora_name != adapter:
        out.append(f"vLLM's engine got LoRA adapter {call.lora_name!r} for model {model!r}")
    return out


def test_completion_replays_answer_200_with_ravel_serves_values(capture: Capture) -> None:
    servers = _servers(capture)
    problems: list[str] = []
    compared = 0
    for server, replayed in _replayed(servers, COMPLETIONS):
        ex = replayed.exchange
        if replayed.status != ex.status:
            problems.append(f"{ex.where()}: vLLM answers {replayed.status}, ravel serve answered {ex.status}; "
                            f"vLLM's answer: {_shorten(replayed.body, 600)}")
            continue
        if ex.status != 200:
            continue
        body = _as_dict(ex.body_json())
        problems += [f"{ex.where()}: {p}" for p in _engine_problems(server, replayed, body)]
        ours, theirs = _read_fields(_safe_json(ex.response)), _read_fields(replayed.body_json())
        problems += [f"{ex.where()}: {d}" for d in _differences(ours, theirs, "answer")]
        compared += 1
    assert not problems, _report("completions that vLLM answers differently in what Ravel's client reads", problems)
    assert compared, "no completions request was answered 200 by both ravel serve and vLLM"


# ---------------------------------------------------------------------------------------------------------------
# 3. Completions answers


def _span_problems(choice: CompletionResponseChoice, asked: bool) -> list[str]:
    """vLLM's weight_versions: when asked, spans [start, end) covering the output tokens in order, each span's
    version differing from the one before (OutputProcessor's RequestState._weight_version_spans)."""
    spans = choice.weight_versions
    if not asked:
        return [] if spans is None else ["weight_versions present though the request did not ask for them"]
    if spans is None:
        return ["weight_versions missing though the request asked for them (return_weight_versions)"]
    tokens = len(choice.logprobs.tokens) if choice.logprobs is not None else None
    out: list[str] = []
    expected_start = 0
    for i, span in enumerate(spans):
        if span.start != expected_start or span.end <= span.start:
            out.append(f"weight_versions[{i}] {span} does not continue at token {expected_start} with a non-empty span")
        if i > 0 and span.version == spans[i - 1].version:
            out.append(f"weight_versions[{i}] repeats version {span.version!r}: vLLM merges a version's tokens")
        expected_start = span.end
    if tokens is not None and expected_start != tokens:
        out.append(f"weight_versions cover {expected_start} tokens, the choice has {tokens}")
    return out


def test_completion_answers_validate_as_vllm_completion_response_without_unknown_fields(capture: Capture) -> None:
    logs = _logs(capture)
    problems: list[str] = []
    count = 0
    for ex in _of_path(logs, COMPLETIONS):
        if ex.status != 200:
            continue
        count += 1
        try:
            response = CompletionResponse.model_validate_json(ex.response, strict=True)
        except ValidationError as e:
            problems.append(f"{ex.where()}: not a vLLM CompletionResponse: {_shorten(str(e), 800)}")
            continue
        answer = _safe_json(ex.response)
        if unknown := _unknown_fields(answer, response, "answer"):
            problems.append(f"{ex.where()}: fields vLLM's CompletionResponse does not define: {unknown}")
        body = _as_dict(_safe_json(ex.body))
        asked = body.get("return_weight_versions") is True
        indexes = [c.index for c in response.choices]
        n = _as_int(body.get("n", 1))
        if sorted(indexes) != list(range(n or 0)):
            problems.append(f"{ex.where()}: choice indexes {indexes}, but the request has n={n} (one prompt)")
        for choice in response.choices:
            lp = choice.logprobs
            if (lp is None) != (body.get("logprobs") is None):
                state = "absent" if lp is None else "there"
                problems.append(f"{ex.where()}: choice {choice.index}: logprobs is {state} though the request has "
                                f"logprobs={body.get('logprobs')!r} (vLLM gives them exactly when it is not null)")
            if lp is not None and not (len(lp.tokens) == len(lp.token_logprobs) == len(lp.text_offset)
                                       == len(lp.top_logprobs)):
                problems.append(f"{ex.where()}: choice {choice.index}: logprobs lists of different lengths")
            problems += [f"{ex.where()}: choice {choice.index}: {p}" for p in _span_problems(choice, asked)]
    assert not problems, _report("completions answers that are not in vLLM's shape", problems)
    assert count, "the log has no completions answered 200"


def test_completion_answers_equal_vllm_rendering_in_every_field(capture: Capture) -> None:
    servers = _servers(capture)
    problems: list[str] = []
    for _, replayed in _replayed(servers, COMPLETIONS):
        ex = replayed.exchange
        if ex.status != 200 or replayed.status != 200:
            continue  # reported by the replay test
        diffs = _differences(_safe_json(ex.response), replayed.body_json(), "answer", SERVER_SPECIFIC_FIELDS)
        problems += [f"{ex.where()}: {d}" for d in diffs]
    assert not problems, _report(
        "fields where ravel serve's completions answer differs from vLLM's rendering of the same engine output "
        f"(absent counts as null; {sorted(SERVER_SPECIFIC_FIELDS)} not compared)", problems)


# ---------------------------------------------------------------------------------------------------------------
# 4. RL weight-update routes


def _pydantic_bool(text: str) -> bool | None:
    low = text.lower()
    return True if low in PYDANTIC_TRUE else False if low in PYDANTIC_FALSE else None


def _expected_rl_calls(ex: Exchange) -> list[EngineCall] | str:
    """The engine calls vLLM's RL router should make for `ex`, read from the log by this module's own parsing;
    a string says why the exchange cannot be read."""
    query = {k: v[-1] for k, v in urllib.parse.parse_qs(ex.query, keep_blank_values=True).items()}
    try:
        body = _as_dict(ex.body_json())
    except json.JSONDecodeError:
        return "the body is not JSON"
    if ex.path == "/pause":
        clear = _pydantic_bool(query.get("clear_cache", "true"))
        if clear is None:
            return f"clear_cache={query.get('clear_cache')!r} is not a boolean"
        return [EngineCall("pause_generation", {"mode": query.get("mode", "abort"), "clear_cache": clear})]
    if ex.path == "/init_weight_transfer_engine":
        return [EngineCall("init_weight_transfer_engine", {"init_info": body.get("init_info")})]
    if ex.path == "/update_weights":
        return [EngineCall("update_weights", {"update_info": body.get("update_info")})]
    if ex.path == "/finish_weight_update":
        return [EngineCall("finish_weight_update", {"weight_version": body.get("weight_version")})]
    simple = {"/resume": "resume_generation", "/is_paused": "is_paused", "/start_weight_update": "start_weight_update",
              "/weight_info": "get_weight_version"}
    return [EngineCall(simple[ex.path], {})] if ex.path in simple else []


def test_rl_route_replays_answer_200_in_vllm_and_ravel_serve(capture: Capture) -> None:
    servers = _servers(capture)
    problems: list[str] = []
    for _, replayed in _replayed(servers, *RL_PATHS):
        ex = replayed.exchange
        if ex.status != 200 or replayed.status != 200:
            problems.append(f"{ex.where()}: ravel serve answered {ex.status} {_shorten(ex.response)}, vLLM answers "
                            f"{replayed.status} {_shorten(replayed.body)}")
    assert not problems, _report("RL-route exchanges not answered 200 by both", problems)


def test_rl_route_replays_reach_the_engine_in_order_with_the_logged_arguments(capture: Capture) -> None:
    servers = _servers(capture)
    problems: list[str] = []
    for _, replayed in _replayed(servers, *RL_PATHS):
        ex = replayed.exchange
        expected = _expected_rl_calls(ex)
        if isinstance(expected, str):
            problems.append(f"{ex.where()}: {expected}")
        elif ex.status == 200 and replayed.calls != expected:
            problems.append(f"{ex.where()}: vLLM called {[str(c) for c in replayed.calls]}, the log means "
                            f"{[str(c) for c in expected]}")
    assert not problems, _report("RL-route requests that reach vLLM's engine differently", problems)


def test_rl_route_answers_equal_vllm_answers(capture: Capture) -> None:
    servers = _servers(capture)
    problems: list[str] = []
    for _, replayed in _replayed(servers, *RL_PATHS):
        ex = replayed.exchange
        try:
            ours: object = _parse_json(ex.response) if ex.response else None
        except json.JSONDecodeError:
            ours = ex.response
        theirs = replayed.body_json()
        if ex.status != replayed.status or ours != theirs:
            problems.append(f"{ex.where()}: ravel serve {ex.status} {json.dumps(ours)}, vLLM {replayed.status} "
                            f"{json.dumps(theirs)}")
    assert not problems, _report("RL-route answers that differ from vLLM's", problems)


@dataclasses.dataclass
class UpdateState:
    """Where a log stands in vLLM's weight-update protocol."""

    paused_at: Exchange | None = None
    active_at: Exchange | None = None
    initialized: bool = False
    updates: int = 0
    finished_in_pause: bool = False
    full_updates: int = 0


def _sequence_problems(log: ExchangeLog) -> tuple[list[str], int]:
    """Breaches of vLLM's weight-update sequence in `log` (exchanges ravel serve answered 200), and the number of
    full weight updates (pause, start, update..., finish, resume)."""
    state = UpdateState()
    out: list[str] = []
    for ex in log.exchanges:
        if ex.path not in RL_PATHS or ex.status != 200:
            continue
        if ex.path == "/pause":
            state.paused_at = state.paused_at or ex
        elif ex.path == "/resume":
            if state.active_at is not None:
                out.append(f"{ex.where()}: resume while the update started at line {state.active_at.line} is active")
            state.full_updates += 1 if state.finished_in_pause else 0
            state.paused_at, state.finished_in_pause = None, False
        elif ex.path == "/init_weight_transfer_engine":
            state.initialized = True
        elif ex.path == "/start_weight_update":
            if state.active_at is not None:
                out.append(f"{ex.where()}: start while the update started at line {state.active_at.line} is active")
            if not state.initialized:
                out.append(f"{ex.where()}: start before any init_weight_transfer_engine")
            state.active_at, state.updates = ex, 0
        elif ex.path in ("/update_weights", "/finish_weight_update"):
            if state.active_at is None:
                out.append(f"{ex.where()}: {ex.path[1:]} without a start_weight_update before it")
            if ex.path == "/update_weights":
                state.updates += 1
            else:
                state.finished_in_pause = state.finished_in_pause or (state.active_at is not None
                                                                      and state.updates > 0)
                state.active_at = None
        if ex.path in ("/start_weight_update", "/update_weights", "/finish_weight_update") and state.paused_at is None:
            out.append(f"{ex.where()}: {ex.path[1:]} while generation is not paused (no /pause since the last /resume)")
    if state.active_at is not None:
        out.append(f"{Path(log.source).name}: the log ends inside the update started at line {state.active_at.line}")
    return out, state.full_updates


def test_rl_sequence_keeps_vllm_weight_update_rules_in_log(capture: Capture) -> None:
    logs = _logs(capture)
    problems = [p for log in logs for p in _sequence_problems(log)[0]]
    assert not problems, _report("breaches of vLLM's weight-update sequence", problems)


def test_completion_weight_versions_name_labels_vllm_would_give(capture: Capture) -> None:
    logs = _logs(capture)
    problems: list[str] = []
    for log in logs:
        base_model = _facts(log).model_name
        finishes = [(ex.seq, version) for ex in log.exchanges
                    if ex.status == 200 and ex.path == "/finish_weight_update"
                    and isinstance(version := _as_dict(_safe_json(ex.body)).get("weight_version"), str)]
        for ex in log.exchanges:
            if ex.status != 200 or ex.path != COMPLETIONS:
                continue
            # a finish that arrived before this completion ended may label its tokens (pause?mode=keep holds a
            # running request across the update); one that arrived after it ended cannot
            labels = {INITIAL_WEIGHT_VERSION} | {version for seq, version in finishes if seq <= ex.arrived_by_end}
            named = {_as_dict(span).get("version")
                     for choice in _as_list(_as_dict(_safe_json(ex.response)).get("choices"))
                     for span in _as_list(_as_dict(choice).get("weight_versions"))}
            model = _as_dict(_safe_json(ex.body)).get("model")
            adapter = model is not None and model != base_model
            for version in sorted(map(repr, named - labels)):
                problems.append(f"{ex.where()}: version {version} is no label vLLM had by the time it ended (it had "
                                f"{sorted(labels)}: {INITIAL_WEIGHT_VERSION!r}, then the weight_version of each "
                                "finish_weight_update that arrived before it ended)"
                                + (f"; model {model!r} is a LoRA adapter, but vLLM labels its tokens with the "
                                   "engine's weight version all the same" if adapter else ""))
    assert not problems, _report("weight_versions labels vLLM would not give", problems)


# ---------------------------------------------------------------------------------------------------------------
# 5. LoRA, models, health, errors


def test_lora_requests_validate_as_vllm_lora_requests_without_unknown_fields(capture: Capture) -> None:
    logs = _logs(capture)
    problems: list[str] = []
    models: dict[str, type[BaseModel]] = {LOAD_LORA: LoadLoRAAdapterRequest, UNLOAD_LORA: UnloadLoRAAdapterRequest}
    for ex in _of_path(logs, LOAD_LORA, UNLOAD_LORA):
        try:
            body = ex.body_json()
            request = models[ex.path].model_validate(body)
        except (ValidationError, json.JSONDecodeError) as e:
            problems.append(f"{ex.where()}: vLLM rejects the body: {_shorten(str(e), 600)}")
            continue
        if unknown := _unknown_fields(body, request, "body"):
            problems.append(f"{ex.where()}: fields vLLM's {models[ex.path].__name__} does not define: {unknown}")
    assert not problems, _report("LoRA requests vLLM does not take as they are", problems)


def test_lora_replays_answer_like_ravel_serve(capture: Capture) -> None:
    servers = _servers(capture)
    problems: list[str] = []
    for _, replayed in _replayed(servers, LOAD_LORA, UNLOAD_LORA):
        ex = replayed.exchange
        if (ex.status, ex.response) != (replayed.status, replayed.body):
            problems.append(f"{ex.where()}: ravel serve {ex.status} {ex.response!r}, vLLM {replayed.status} "
                            f"{replayed.body!r}")
        loads = [c for c in replayed.calls if c.name == "add_lora"]
        body = _as_dict(_safe_json(ex.body))
        if ex.path == LOAD_LORA and ex.status == 200 and [c.args for c in loads] != [
                {"lora_name": body.get("lora_name"), "lora_path": body.get("lora_path")}]:
            problems.append(f"{ex.where()}: vLLM's engine got {[str(c) for c in loads]}")
    assert not problems, _report("LoRA exchanges vLLM answers differently", problems)


def test_models_answers_validate_as_vllm_model_list_without_unknown_fields(capture: Capture) -> None:
    logs = _logs(capture)
    problems: list[str] = []
    for ex in _of_path(logs, MODELS):
        if ex.status != 200:
            problems.append(f"{ex.where()}: ravel serve answered {ex.status}")
            continue
        try:
            models = ModelList.model_validate_json(ex.response, strict=True)
        except ValidationError as e:
            problems.append(f"{ex.where()}: not a vLLM ModelList: {_shorten(str(e), 800)}")
            continue
        if unknown := _unknown_fields(_safe_json(ex.response), models, "answer"):
            problems.append(f"{ex.where()}: fields vLLM's ModelList does not define: {unknown}")
    assert not problems, _report("/v1/models answers not in vLLM's shape", problems)


def _cards(answer: object, base_root: bool) -> list[dict[str, object]]:
    """The parts of /v1/models cards that two servers of the same model and adapters share (the base model's
    `root` is the server's own path; `created`, `owned_by` and `permission` are the server's own)."""
    out: list[dict[str, object]] = []
    for card in _as_list(_as_dict(answer).get("data")):
        c = _as_dict(card)
        shared: dict[str, object] = {k: c.get(k) for k in ("id", "object", "parent", "max_model_len")}
        if c.get("parent") is not None or base_root:
            shared["root"] = c.get("root")
        out.append(shared)
    return out


def test_models_replays_list_what_vllm_lists(capture: Capture) -> None:
    servers = _servers(capture)
    problems: list[str] = []
    for _, replayed in _replayed(servers, MODELS):
        ex = replayed.exchange
        if ex.status != replayed.status:
            problems.append(f"{ex.where()}: ravel serve answered {ex.status}, vLLM {replayed.status}")
            continue
        ours, theirs = _cards(_safe_json(ex.response), False), _cards(replayed.body_json(), False)
        problems += [f"{ex.where()}: {d}" for d in _differences(ours, theirs, "data")]
    assert not problems, _report("/v1/models answers that list other models than vLLM would", problems)


def test_health_and_metrics_replays_answer_like_ravel_serve(capture: Capture) -> None:
    servers = _servers(capture)
    problems: list[str] = []
    for _, replayed in _replayed(servers, "/health", "/metrics"):
        ex = replayed.exchange
        if ex.status != replayed.status:
            problems.append(f"{ex.where()}: ravel serve answered {ex.status}, vLLM {replayed.status}")
        elif ex.path == "/health" and ex.response != replayed.body:
            problems.append(f"{ex.where()}: ravel serve answered {ex.response!r}, vLLM {replayed.body!r}")
    assert not problems, _report("/health and /metrics exchanges vLLM answers differently", problems)


def test_error_answers_have_vllm_error_shape(capture: Capture) -> None:
    logs = _logs(capture)
    problems: list[str] = []
    for log in logs:
        for ex in log.exchanges:
            if ex.status < 400 or not ex.response or ex.path == "/metrics":
                continue
            try:
                error = ErrorResponse.model_validate_json(ex.response, strict=True)
            except ValidationError as e:
                problems.append(f"{ex.where()}: {ex.status} answer is not vLLM's ErrorResponse: {_shorten(str(e))}")
                continue
            if unknown := _unknown_fields(_safe_json(ex.response), error, "answer"):
                problems.append(f"{ex.where()}: fields vLLM's ErrorResponse does not define: {unknown}")
            if error.error.code != ex.status:
                problems.append(f"{ex.where()}: error.code {error.error.code} but HTTP status {ex.status}")
    assert not problems, _report("error answers not in vLLM's shape", problems)


# ---------------------------------------------------------------------------------------------------------------
# 6. Summary


def test_exchange_log_summary_has_a_completion_and_a_full_weight_update(capture: Capture) -> None:
    servers = _servers(capture)
    completions = rl_calls = full_updates = 0
    for server in servers:
        log = server.log
        per_path = Counter(f"{ex.method} {ex.path}" for ex in log.exchanges)
        replayed_completions = sum(1 for r in server.replayed if r.exchange.path == COMPLETIONS and r.status == 200)
        replayed_rl = sum(len(r.calls) for r in server.replayed if r.exchange.path in RL_PATHS)
        updates = _sequence_problems(log)[1]
        print(f"\n{log.source}: {len(log.exchanges)} exchanges; served model {server.facts.model_name!r}, "
              f"max_model_len {server.facts.max_model_len}")
        for key, count in sorted(per_path.items()):
            print(f"  {count:6d}  {key}")
        print(f"  completions replayed through vLLM with answer 200: {replayed_completions}; RL engine calls "
              f"replayed: {replayed_rl}; full weight updates (pause..resume): {updates}")
        completions += sum(1 for ex in log.exchanges if ex.path == COMPLETIONS and ex.status == 200)
        rl_calls += replayed_rl
        full_updates += updates
    assert completions >= 1, "the log holds no completion answered 200: a failed capture"
    assert full_updates >= 1, ("the log holds no full weight update (pause, start_weight_update, update_weights, "
                               "finish_weight_update, resume, all answered 200): a failed capture")
