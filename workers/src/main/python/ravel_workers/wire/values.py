"""The value types that cross the Java/Python hop (docs/python-workers.md, "Wire forms").

Each is a frozen dataclass with ``to_wire()`` (a JSON-ready dict, snake_case keys) and ``from_wire(dict)``,
which checks what it reads and names the key it finds wrong.
"""

from __future__ import annotations

import dataclasses
import math
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
    if set(map(type, values)) <= {int}:  # the common case, checked in C; else find the offending item
        return list(values)
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
    """One GRPO update: the version of the weights after it, and what it measured (the Java ``TrainMetrics``: the
    contract's ``train_metrics`` lists the fields in order, and a test holds both sides to it)."""

    version: int
    loss: float
    kl: float
    entropy: float
    clip_fraction: float
    clip_low: float
    clip_high: float
    clip_dual: float
    mean_ratio: float
    max_ratio: float
    tis_truncated: float
    grad_norm: float
    learning_rate: float
    zero_advantage_groups: int
    kept_sequences: int
    epochs: int
    mean_reward: float
    tokens: int
    sequences: int

    def to_wire(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_wire(cls, d: Mapping[str, Any]) -> TrainOutcome:
        values: dict[str, Any] = {}
        for f in dataclasses.fields(cls):
            raw = _require(d, f.name, "TrainOutcome")
            values[f.name] = int(raw) if f.type == "int" else float(raw)
        return cls(**values)


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
    #: summed arrival-to-first-scheduling nanoseconds of the finished requests that were scheduled, and their count
    queue_nanos: int = 0
    queue_count: int = 0
    #: the load integrated over ``load_seconds`` of the engine's life: running and waiting requests and KV tokens
    #: held, each times seconds (Java ``EngineStats.loadSeconds`` and the others)
    load_seconds: float = 0.0
    running_seconds: float = 0.0
    waiting_seconds: float = 0.0
    kv_token_seconds: float = 0.0

    def to_wire(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["finished"] = {r: int(self.finished.get(r, 0)) for r in FINISH_REASONS}
        return d

    @classmethod
    def from_wire(cls, d: Mapping[str, Any]) -> EngineStats:
        kw: dict[str, Any] = {f.name: (float if f.type in (float, "float") else int)(d.get(f.name, 0))
                              for f in dataclasses.fields(cls) if f.name != "finished"}
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
    """The reward environment's constructor argument: the tokenizer's checkpoint, the function to call, what a
    raising function does (``on_error``: ``fail`` or ``zero``) and the longest a call may take (``timeout_s``, 0:
    no limit)."""

    model_path: str
    function: str
    code_path: list[str] = field(default_factory=list)
    on_error: str = names.REWARD_ON_ERROR[0]
    timeout_s: float = 0.0

    def __post_init__(self) -> None:
        if self.on_error not in names.REWARD_ON_ERROR:
            raise ValueError(f"RewardSpec.on_error: '{self.on_error}' is not one of {', '.join(names.REWARD_ON_ERROR)}")
        if not (self.timeout_s >= 0 and math.isfinite(self.timeout_s)):
            raise ValueError(f"RewardSpec.timeout_s: {self.timeout_s} is not a number of seconds >= 0")

    def to_wire(self) -> dict[str, Any]:
        return {"model_path": self.model_path, "function": self.function, "code_path": list(self.code_path),
                "on_error": self.on_error, "timeout_s": self.timeout_s}

    @classmethod
    def from_wire(cls, d: Mapping[str, Any]) -> RewardSpec:
        code_path = d.get("code_path") or []
        if not isinstance(code_path, list):
            raise ValueError("RewardSpec.code_path: expected a list of folders")
        return cls(model_path=str(_require(d, "model_path", "RewardSpec")),
                   function=str(_require(d, "function", "RewardSpec")), code_path=[str(p) for p in code_path],
                   on_error=str(d.get("on_error", names.REWARD_ON_ERROR[0])),
                   timeout_s=float(d.get("timeout_s", 0.0)))


@dataclass(frozen=True)
class RewardScores:
    """A reward call's result (the Java ``RewardScores``): one reward per completion, the completions as the
    function read them, each named component (a function returning a mapping; empty otherwise) and how many
    completions were scored 0 because the function raised (``on_error: zero``)."""

    rewards: list[float]
    texts: list[str]
    components: dict[str, list[float]] = field(default_factory=dict)
    failed: int = 0

    def __post_init__(self) -> None:
        n = len(self.rewards)
        if len(self.texts) != n:
            raise ValueError(f"RewardScores: {len(self.texts)} texts for {n} rewards")
        for name, values in self.components.items():
            if len(values) != n:
                raise ValueError(f"RewardScores: component '{name}' has {len(values)} values for {n} rewards")
        if not 0 <= self.failed <= n:
            raise ValueError(f"RewardScores.failed: {self.failed} is not between 0 and {n}")

    def to_wire(self) -> dict[str, Any]:
        return {"rewards": list(self.rewards), "texts": list(self.texts),
                "components": {k: list(v) for k, v in self.components.items()}, "failed": self.failed}


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


def _default(name: str) -> Any:
    return names.GRPO_DEFAULTS[name]


@dataclass(frozen=True)
class GrpoSettings:
    """The GRPO settings the trainer needs (the Java ``GrpoConfig``; names and defaults are the contract's
    ``grpo_defaults``, the named choices its ``grpo_choices``). ``from_wire`` checks each and names the bad one."""

    group_size: int = int(_default("group_size"))
    learning_rate: float = float(_default("learning_rate"))
    weight_decay: float = float(_default("weight_decay"))
    max_grad_norm: float = float(_default("max_grad_norm"))
    temperature: float = float(_default("temperature"))
    advantage_eps: float = float(_default("advantage_eps"))
    kl_beta: float = float(_default("kl_beta"))
    loss_type: str = str(_default("loss_type"))
    scale_rewards: str = str(_default("scale_rewards"))
    filter_zero_advantage: bool = bool(_default("filter_zero_advantage"))
    clip_epsilon_low: float = float(_default("clip_epsilon_low"))
    clip_epsilon_high: float = float(_default("clip_epsilon_high"))
    clip_ratio_c: float = float(_default("clip_ratio_c"))
    kl_estimator: str = str(_default("kl_estimator"))
    kl_in_reward: bool = bool(_default("kl_in_reward"))
    ppo_epochs: int = int(_default("ppo_epochs"))
    micro_batch_size: int = int(_default("micro_batch_size"))
    lr_scheduler: str = str(_default("lr_scheduler"))
    warmup_steps: int = int(_default("warmup_steps"))
    total_steps: int = int(_default("total_steps"))
    tis_cap: float = float(_default("tis_cap"))
    max_new_tokens: int = int(_default("max_new_tokens"))

    @property
    def kl_in_loss(self) -> bool:
        """Whether the loss has a KL term (a penalty that is not in the reward)."""
        return self.kl_beta != 0 and not self.kl_in_reward

    @property
    def tis(self) -> bool:
        """Whether the ratio is against the trainer's log-probs at the step's start, with a truncated IS weight."""
        return self.tis_cap > 0

    def to_wire(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_wire(cls, d: Mapping[str, Any]) -> GrpoSettings:
        defaults = cls()
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise ValueError(f"grpo: unknown setting(s) {', '.join(unknown)} (valid: {', '.join(sorted(known))})")
        values: dict[str, Any] = {}
        for f in dataclasses.fields(cls):
            raw = d.get(f.name, getattr(defaults, f.name))
            what = f"grpo.{f.name}"
            if f.type == "bool":
                values[f.name] = _bool(raw, what)
            elif f.type == "str":
                if raw not in names.GRPO_CHOICES[f.name]:
                    raise ValueError(f"{what}: unknown value {raw!r} (valid: {', '.join(names.GRPO_CHOICES[f.name])})")
                values[f.name] = str(raw)
            elif f.type == "int":
                if isinstance(raw, bool) or not isinstance(raw, int):
                    raise ValueError(f"{what}: expected an int, got {raw!r}")
                values[f.name] = raw
            else:
                if isinstance(raw, bool) or not isinstance(raw, (int, float)):
                    raise ValueError(f"{what}: expected a number, got {raw!r}")
                values[f.name] = float(raw)
        g = cls(**values)
        if g.group_size < 1:
            raise ValueError(f"grpo.group_size: must be >= 1, got {g.group_size}")
        if not 0 < g.clip_epsilon_low < 1:
            raise ValueError(f"grpo.clip_epsilon_low: must be in (0, 1), got {g.clip_epsilon_low}")
        if g.clip_epsilon_high < g.clip_epsilon_low:
            raise ValueError(f"grpo.clip_epsilon_high: {g.clip_epsilon_high} is below clip_epsilon_low "
                             f"{g.clip_epsilon_low}")
        if g.clip_ratio_c != 0 and not g.clip_ratio_c > 1:
            raise ValueError(f"grpo.clip_ratio_c: must be 0 (off) or above 1, got {g.clip_ratio_c}")
        for name in ("ppo_epochs", "total_steps", "max_new_tokens"):
            if getattr(g, name) < 1:
                raise ValueError(f"grpo.{name}: must be >= 1, got {getattr(g, name)}")
        if g.micro_batch_size < 0 or g.tis_cap < 0 or not 0 <= g.warmup_steps <= g.total_steps:
            raise ValueError("grpo.micro_batch_size, tis_cap: must not be negative; warmup_steps: in [0, total_steps]")
        return g


@dataclass(frozen=True)
class TrainerSpec:
    """The policy trainer's constructor argument; ``resume_from`` names a checkpoint's trainer-state file to go on
    from (empty: a new run); ``rank`` and ``world_size`` place it in a trainer group (``trainer.workers``; one
    rank, 0 of 1, trains alone); ``strategy`` is how a group holds the policy (``trainer.strategy``: ``fsdp2``
    shards parameters, gradients and optimizer state, ``ddp`` replicates them)."""

    model: ModelConfig
    seed: int
    grpo: GrpoSettings
    device: str = "auto"
    resume_from: str = ""
    rank: int = 0
    world_size: int = 1
    strategy: str = names.TRAINER_STRATEGIES[0]

    def __post_init__(self) -> None:
        if self.world_size < 1:
            raise ValueError(f"world_size: {self.world_size} is not a positive number of trainer ranks")
        if not 0 <= self.rank < self.world_size:
            raise ValueError(f"rank: {self.rank} is not a rank of a group of world_size {self.world_size}")
        if self.strategy not in names.TRAINER_STRATEGIES:
            raise ValueError(f"strategy: unknown '{self.strategy}' (valid: {', '.join(names.TRAINER_STRATEGIES)})")

    def to_wire(self) -> dict[str, Any]:
        return {"model": self.model.to_wire(), "seed": self.seed, "device": self.device,
                "grpo": self.grpo.to_wire(), "resume_from": self.resume_from, "rank": self.rank,
                "world_size": self.world_size, "strategy": self.strategy}

    @classmethod
    def from_wire(cls, d: Mapping[str, Any]) -> TrainerSpec:
        return cls(model=ModelConfig.from_wire(_require(d, "model", "TrainerSpec")), seed=int(d.get("seed", 0)),
                   grpo=GrpoSettings.from_wire(d.get("grpo", {})), device=_device(d),
                   resume_from=str(d.get("resume_from", "")), rank=int(d.get("rank", 0)),
                   world_size=int(d.get("world_size", 1)),
                   strategy=str(d.get("strategy", names.TRAINER_STRATEGIES[0])))


def _device(d: Mapping[str, Any]) -> str:
    device = str(d.get("device", "auto"))
    if device not in ("auto", "cpu", "cuda") and not device.startswith("cuda:"):
        raise ValueError(f"device: unknown device '{device}' (valid: auto, cpu, cuda)")
    return device
