"""The value types that cross the Java/Python hop (docs/python-workers.md, "Wire forms").

Each is a frozen dataclass with ``to_wire()`` (a JSON-ready dict, snake_case keys) and ``from_wire(dict)``,
which checks what it reads and names the key it finds wrong.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .. import names

#: Finish reasons, in the order of the Java enum ``FinishReason``.
FINISH_REASONS: tuple[str, ...] = names.FINISH_REASONS


def _require(d: Mapping[str, Any], key: str, what: str) -> Any:
    if not isinstance(d, Mapping):
        raise ValueError(f"{what}: expected a JSON object, got {type(d).__name__}")
    if key not in d:
        raise ValueError(f"{what}: missing key '{key}'")
    return d[key]


def _bool(value: Any, what: str) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{what}: expected true or false, got {value!r}")
    return value


def _ints(values: Any, what: str) -> list[int]:
    if not isinstance(values, list):
        raise ValueError(f"{what}: expected a list of ints")
    out = []
    for i, v in enumerate(values):
        if isinstance(v, bool) or not isinstance(v, int):
            raise ValueError(f"{what}[{i}]: expected an int, got {v!r}")
        out.append(v)
    return out


def _floats(values: Any, what: str) -> list[float]:
    if not isinstance(values, list):
        raise ValueError(f"{what}: expected a list of numbers")
    return [float(v) for v in values]


@dataclass(frozen=True)
class SamplingParams:
    """How one request is sampled: ``temperature`` 0 is greedy, ``top_p`` in (0, 1]; with ``ignore_eos`` a
    sampled EOS does not end the completion (vLLM's ``ignore_eos``)."""

    max_tokens: int
    temperature: float = 1.0
    top_p: float = 1.0
    seed: int = 0
    ignore_eos: bool = False

    def to_wire(self) -> dict[str, Any]:
        d: dict[str, Any] = {"max_tokens": self.max_tokens, "temperature": self.temperature, "top_p": self.top_p,
                             "seed": self.seed}
        if self.ignore_eos:
            d["ignore_eos"] = True
        return d

    @classmethod
    def from_wire(cls, d: Mapping[str, Any]) -> SamplingParams:
        return cls(max_tokens=int(_require(d, "max_tokens", "params")),
                   temperature=float(d.get("temperature", 1.0)),
                   top_p=float(d.get("top_p", 1.0)),
                   seed=int(d.get("seed", 0)),
                   ignore_eos=_bool(d.get("ignore_eos", False), "params.ignore_eos"))


@dataclass(frozen=True)
class GenerationRequest:
    """One completion to generate for ``prompt_tokens``."""

    request_id: str
    prompt_tokens: list[int]
    params: SamplingParams

    def to_wire(self) -> dict[str, Any]:
        return {"request_id": self.request_id, "prompt_tokens": list(self.prompt_tokens),
                "params": self.params.to_wire()}

    @classmethod
    def from_wire(cls, d: Mapping[str, Any]) -> GenerationRequest:
        rid = str(_require(d, "request_id", "GenerationRequest"))
        return cls(request_id=rid,
                   prompt_tokens=_ints(_require(d, "prompt_tokens", "GenerationRequest"), f"{rid}.prompt_tokens"),
                   params=SamplingParams.from_wire(_require(d, "params", "GenerationRequest")))


@dataclass(frozen=True)
class RequestStats:
    """When a request went through the engine's stages (epoch nanoseconds; 0 for a stage never reached)."""

    arrival_epoch_nanos: int
    scheduled_epoch_nanos: int = 0
    first_token_epoch_nanos: int = 0
    finish_epoch_nanos: int = 0
    prefill_nanos: int = 0
    decode_nanos: int = 0
    preemptions: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def to_wire(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_wire(cls, d: Mapping[str, Any]) -> RequestStats:
        return cls(**{f.name: int(d.get(f.name, 0)) for f in dataclasses.fields(cls)})

    # latencies in seconds, with the Java RequestStats definitions
    def time_in_queue(self) -> float:
        until = self.finish_epoch_nanos if self.scheduled_epoch_nanos == 0 else self.scheduled_epoch_nanos
        return (until - self.arrival_epoch_nanos) / 1e9

    def time_to_first_token(self) -> float:
        if self.first_token_epoch_nanos == 0:
            return 0.0
        return (self.first_token_epoch_nanos - self.arrival_epoch_nanos) / 1e9

    def e2e(self) -> float:
        return (self.finish_epoch_nanos - self.arrival_epoch_nanos) / 1e9

    def prefill(self) -> float:
        return self.prefill_nanos / 1e9

    def decode(self) -> float:
        return self.decode_nanos / 1e9

    def inference(self) -> float:
        return (self.prefill_nanos + self.decode_nanos) / 1e9


@dataclass(frozen=True)
class GenerationResult:
    """A finished request: its completion (EOS included when it stopped on it) and behaviour log-probs."""

    request_id: str
    prompt_tokens: list[int]
    completion_tokens: list[int]
    logprobs: list[float]
    finish_reason: str
    weight_version: int
    stats: RequestStats
    traced: bool = False
    error: str | None = None

    def to_wire(self) -> dict[str, Any]:
        return {"request_id": self.request_id, "prompt_tokens": list(self.prompt_tokens),
                "completion_tokens": list(self.completion_tokens), "logprobs": list(self.logprobs),
                "finish_reason": self.finish_reason, "weight_version": self.weight_version,
                "stats": self.stats.to_wire(), "traced": self.traced, "error": self.error}

    @classmethod
    def from_wire(cls, d: Mapping[str, Any]) -> GenerationResult:
        reason = str(_require(d, "finish_reason", "GenerationResult"))
        if reason not in FINISH_REASONS:
            raise ValueError(f"GenerationResult: unknown finish_reason '{reason}'")
        return cls(request_id=str(_require(d, "request_id", "GenerationResult")),
                   prompt_tokens=_ints(d.get("prompt_tokens", []), "prompt_tokens"),
                   completion_tokens=_ints(d.get("completion_tokens", []), "completion_tokens"),
                   logprobs=_floats(d.get("logprobs", []), "logprobs"),
                   finish_reason=reason,
                   weight_version=int(d.get("weight_version", -1)),
                   stats=RequestStats.from_wire(d.get("stats", {})),
                   traced=bool(d.get("traced", False)),
                   error=d.get("error"))


@dataclass(frozen=True)
class Trajectory:
    """One scored completion; a batch is k groups of ``group_size`` consecutive trajectories."""

    request_id: str
    prompt: list[int]
    completion: list[int]
    logprobs: list[float]
    reward: float
    weight_version: int = 0
    group_index: int = 0

    def to_wire(self) -> dict[str, Any]:
        return {"request_id": self.request_id, "prompt": list(self.prompt), "completion": list(self.completion),
                "logprobs": list(self.logprobs), "reward": self.reward, "weight_version": self.weight_version,
                "group_index": self.group_index}

    @classmethod
    def from_wire(cls, d: Mapping[str, Any]) -> Trajectory:
        rid = str(_require(d, "request_id", "Trajectory"))
        t = cls(request_id=rid,
                prompt=_ints(_require(d, "prompt", "Trajectory"), f"{rid}.prompt"),
                completion=_ints(_require(d, "completion", "Trajectory"), f"{rid}.completion"),
                logprobs=_floats(_require(d, "logprobs", "Trajectory"), f"{rid}.logprobs"),
                reward=float(_require(d, "reward", "Trajectory")),
                weight_version=int(d.get("weight_version", 0)),
                group_index=int(d.get("group_index", 0)))
        if len(t.logprobs) != len(t.completion):
            raise ValueError(f"Trajectory {rid}: {len(t.logprobs)} logprobs for {len(t.completion)} completion tokens")
        return t


@dataclass(frozen=True)
class LogProbSummary:
    """Mean per-token log-probs of a batch under the policy and the reference, and their k3 KL."""

    policy: float
    reference: float
    kl: float
    tokens: int

    def to_wire(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_wire(cls, d: Mapping[str, Any]) -> LogProbSummary:
        return cls(float(d["policy"]), float(d["reference"]), float(d["kl"]), int(d["tokens"]))


@dataclass(frozen=True)
class TrainOutcome:
    """One GRPO update: the version of the weights after it, and what it measured."""

    version: int
    loss: float
    kl: float
    clip_fraction: float
    mean_ratio: float
    grad_norm: float
    tokens: int

    def to_wire(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_wire(cls, d: Mapping[str, Any]) -> TrainOutcome:
        return cls(int(d["version"]), float(d["loss"]), float(d["kl"]), float(d["clip_fraction"]),
                   float(d["mean_ratio"]), float(d["grad_norm"]), int(d["tokens"]))


@dataclass(frozen=True)
class EngineStats:
    """An engine's counters (totals since it started) and gauges (now)."""

    finished: dict[str, int] = field(default_factory=lambda: {r: 0 for r in FINISH_REASONS})
    preemptions: int = 0
    running: int = 0
    waiting: int = 0
    kv_tokens_used: int = 0
    kv_token_budget: int = 0
    prompt_tokens: int = 0
    generation_tokens: int = 0
    spans_kept: int = 0
    spans_sampled_out: int = 0

    def to_wire(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["finished"] = {r: int(self.finished.get(r, 0)) for r in FINISH_REASONS}
        return d

    @classmethod
    def from_wire(cls, d: Mapping[str, Any]) -> EngineStats:
        kw = {f.name: int(d.get(f.name, 0)) for f in dataclasses.fields(cls) if f.name != "finished"}
        return cls(finished={r: int(d.get("finished", {}).get(r, 0)) for r in FINISH_REASONS}, **kw)


@dataclass(frozen=True)
class ExportStats:
    """A process's span counts: ended (sampled spans ended), exported, failed, dropped (over every exporter), and
    per exporter (``file``, ``otlp``) what it exported, failed and dropped, as the Java counters report them."""

    ended: int = 0
    exported: int = 0
    failed: int = 0
    dropped: int = 0
    exporters: dict[str, dict[str, int]] = field(default_factory=dict)

    def to_wire(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_wire(cls, d: Mapping[str, Any]) -> ExportStats:
        per = d.get("exporters") or {}
        return cls(ended=int(d.get("ended", 0)), exported=int(d.get("exported", 0)), failed=int(d.get("failed", 0)),
                   dropped=int(d.get("dropped", 0)),
                   exporters={str(k): {c: int(v.get(c, 0)) for c in ("exported", "failed", "dropped")}
                              for k, v in per.items()})


@dataclass(frozen=True)
class ModelConfig:
    """The policy: a Hugging Face checkpoint folder (``path``), or a transformers family and its sizes,
    randomly initialised. With a ``path``, ``vocab_size`` and ``max_positions`` are the checkpoint's."""

    family: str
    vocab_size: int
    layers: int
    hidden: int
    heads: int
    max_positions: int
    path: str = ""
    dtype: str = "auto"

    def to_wire(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_wire(cls, d: Mapping[str, Any]) -> ModelConfig:
        family = str(_require(d, "family", "model"))
        if family not in ("gpt2", "qwen2"):
            raise ValueError(f"model.family: unknown family '{family}' (valid: gpt2, qwen2)")
        dtype = str(d.get("dtype", "auto"))
        if dtype not in ("auto", "float32", "bfloat16", "float16"):
            raise ValueError(f"model.dtype: unknown dtype '{dtype}' (valid: auto, float32, bfloat16, float16)")
        c = cls(family=family, vocab_size=int(_require(d, "vocab_size", "model")),
                layers=int(_require(d, "layers", "model")), hidden=int(_require(d, "hidden", "model")),
                heads=int(_require(d, "heads", "model")), max_positions=int(_require(d, "max_positions", "model")),
                path=str(d.get("path", "")), dtype=dtype)
        for name in ("vocab_size", "layers", "hidden", "heads", "max_positions"):
            if getattr(c, name) < 1:
                raise ValueError(f"model.{name}: must be >= 1, got {getattr(c, name)}")
        if c.hidden % c.heads != 0:
            raise ValueError(f"model.hidden: {c.hidden} is not a multiple of heads {c.heads}")
        return c


@dataclass(frozen=True)
class Problem:
    """A prompt as the reward sees it: its text, the reference answer and the dataset row's other fields."""

    prompt: str
    answer: str
    metadata: dict[str, Any] = field(default_factory=dict)

    def to_wire(self) -> dict[str, Any]:
        return {"prompt": self.prompt, "answer": self.answer, "metadata": dict(self.metadata)}

    @classmethod
    def from_wire(cls, d: Mapping[str, Any]) -> Problem:
        metadata = d.get("metadata") or {}
        if not isinstance(metadata, Mapping):
            raise ValueError(f"Problem.metadata: expected an object, got {type(metadata).__name__}")
        return cls(prompt=str(_require(d, "prompt", "Problem")), answer=str(_require(d, "answer", "Problem")),
                   metadata=dict(metadata))


@dataclass(frozen=True)
class RewardSpec:
    """The reward environment's constructor argument: the tokenizer's checkpoint and the function to call."""

    model_path: str
    function: str
    code_path: list[str] = field(default_factory=list)

    def to_wire(self) -> dict[str, Any]:
        return {"model_path": self.model_path, "function": self.function, "code_path": list(self.code_path)}

    @classmethod
    def from_wire(cls, d: Mapping[str, Any]) -> RewardSpec:
        code_path = d.get("code_path") or []
        if not isinstance(code_path, list):
            raise ValueError("RewardSpec.code_path: expected a list of folders")
        return cls(model_path=str(_require(d, "model_path", "RewardSpec")),
                   function=str(_require(d, "function", "RewardSpec")), code_path=[str(p) for p in code_path])


@dataclass(frozen=True)
class GenerationWorkerSpec:
    """The generation worker's constructor argument."""

    model: ModelConfig
    seed: int
    eos_token: int
    model_name: str = "ravel-policy"
    engine: str = names.ENGINES[0]
    max_running_requests: int = 64
    device: str = "auto"

    def to_wire(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["model"] = self.model.to_wire()
        return d

    @classmethod
    def from_wire(cls, d: Mapping[str, Any]) -> GenerationWorkerSpec:
        engine = str(d.get("engine", names.ENGINES[0]))
        if engine not in names.ENGINES:
            raise ValueError(f"engine: unknown engine '{engine}' (valid: {', '.join(names.ENGINES)})")
        spec = cls(model=ModelConfig.from_wire(_require(d, "model", "GenerationWorkerSpec")),
                   seed=int(d.get("seed", 0)), eos_token=int(_require(d, "eos_token", "GenerationWorkerSpec")),
                   model_name=str(d.get("model_name", "ravel-policy")), engine=engine,
                   max_running_requests=int(d.get("max_running_requests", 64)), device=_device(d))
        if not 0 <= spec.eos_token < spec.model.vocab_size:
            raise ValueError(f"eos_token: {spec.eos_token} is outside the vocabulary [0, {spec.model.vocab_size})")
        if spec.max_running_requests < 1:
            raise ValueError(f"max_running_requests: must be >= 1, got {spec.max_running_requests}")
        return spec


@dataclass(frozen=True)
class GrpoSettings:
    """The GRPO hyper-parameters the trainer needs (names as in the Java GrpoConfig)."""

    group_size: int = int(names.GRPO_DEFAULTS["group_size"])
    clip_epsilon: float = float(names.GRPO_DEFAULTS["clip_epsilon"])
    kl_beta: float = float(names.GRPO_DEFAULTS["kl_beta"])
    learning_rate: float = float(names.GRPO_DEFAULTS["learning_rate"])
    weight_decay: float = float(names.GRPO_DEFAULTS["weight_decay"])
    max_grad_norm: float = float(names.GRPO_DEFAULTS["max_grad_norm"])
    temperature: float = float(names.GRPO_DEFAULTS["temperature"])
    advantage_eps: float = float(names.GRPO_DEFAULTS["advantage_eps"])

    def to_wire(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_wire(cls, d: Mapping[str, Any]) -> GrpoSettings:
        defaults = cls()
        g = cls(group_size=int(d.get("group_size", defaults.group_size)),
                **{f.name: float(d.get(f.name, getattr(defaults, f.name)))
                   for f in dataclasses.fields(cls) if f.name != "group_size"})
        if g.group_size < 1:
            raise ValueError(f"grpo.group_size: must be >= 1, got {g.group_size}")
        return g


@dataclass(frozen=True)
class TrainerSpec:
    """The policy trainer's constructor argument."""

    model: ModelConfig
    seed: int
    grpo: GrpoSettings
    device: str = "auto"

    def to_wire(self) -> dict[str, Any]:
        return {"model": self.model.to_wire(), "seed": self.seed, "device": self.device,
                "grpo": self.grpo.to_wire()}

    @classmethod
    def from_wire(cls, d: Mapping[str, Any]) -> TrainerSpec:
        return cls(model=ModelConfig.from_wire(_require(d, "model", "TrainerSpec")), seed=int(d.get("seed", 0)),
                   grpo=GrpoSettings.from_wire(d.get("grpo", {})), device=_device(d))


def _device(d: Mapping[str, Any]) -> str:
    device = str(d.get("device", "auto"))
    if device not in ("auto", "cpu", "cuda") and not device.startswith("cuda:"):
        raise ValueError(f"device: unknown device '{device}' (valid: auto, cpu, cuda)")
    return device
