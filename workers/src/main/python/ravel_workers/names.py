"""Every name, key and default the Python workers share with Java, read from the one contract file.

``contract.json`` (beside this module) is the single definition; telemetry-core ships the same file to Java,
whose tests hold each Java constant equal to it. Nothing here is written twice: a module that needs a span
name, an attribute key, a preset or a default imports it from here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final

CONTRACT_FILE: Final[Path] = Path(__file__).with_name("contract.json")


def _load() -> dict[str, Any]:
    try:
        data = json.loads(CONTRACT_FILE.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:  # a broken install: say which file
        raise RuntimeError(f"Ravel's contract file {CONTRACT_FILE} cannot be read: {e}") from e
    if not isinstance(data, dict):
        raise RuntimeError(f"Ravel's contract file {CONTRACT_FILE} does not hold a JSON object")
    return data


CONTRACT: Final[dict[str, Any]] = _load()

_ENGINE: Final[dict[str, str]] = CONTRACT["engine_attributes"]
_ROLE: Final[dict[str, str]] = CONTRACT["role_attributes"]
_RESOURCE: Final[dict[str, str]] = CONTRACT["resource_attributes"]

#: Instrumentation scope of the role spans (Java ``Spans.SCOPE``).
SCOPE: Final[str] = CONTRACT["scopes"]["role"]
#: Instrumentation scope of the engine's ``llm_request`` spans (Java ``EngineNames.INSTRUMENTATION_SCOPE``).
ENGINE_SCOPE: Final[str] = CONTRACT["scopes"]["engine"]

#: The engine's per-request span (vLLM's name).
LLM_REQUEST: Final[str] = CONTRACT["spans"]["llm_request"]
#: Refit stages a Python actor opens (Java ``SpanNames``): the trainer's gather-and-serialise, an engine's load.
REFIT_GATHER: Final[str] = CONTRACT["refit_spans"]["REFIT_GATHER"]
REFIT_LOAD: Final[str] = CONTRACT["refit_spans"]["REFIT_LOAD"]
#: The weights a Python trainer publishes for a refit: the wire dict's format tag and keys (ravel_workers.weights).
WEIGHTS_FORMAT: Final[str] = CONTRACT["refit_weights"]["format"]
WEIGHTS_KEYS: Final[tuple[str, ...]] = tuple(CONTRACT["refit_weights"]["keys"])
#: The children of ``llm_request`` that tile it, one per stage of the request's lifecycle (Java ``SpanNames``).
LLM_REQUEST_QUEUED: Final[str] = CONTRACT["spans"]["llm_request_queued"]
LLM_REQUEST_PREFILL: Final[str] = CONTRACT["spans"]["llm_request_prefill"]
LLM_REQUEST_DECODE: Final[str] = CONTRACT["spans"]["llm_request_decode"]
LLM_REQUEST_PREEMPTED: Final[str] = CONTRACT["spans"]["llm_request_preempted"]
#: An actor's start-up spans in the run's start-up trace (Java ``SpanNames``): a generation worker's engine built,
#: a trainer's model loaded; children of the span the driver names in :data:`STARTUP_TRACEPARENT_ENV`.
WORKER_START_BACKEND: Final[str] = CONTRACT["spans"]["worker_start_backend"]
TRAINER_LOAD_MODEL: Final[str] = CONTRACT["spans"]["trainer_load_model"]
#: An fsdp2 group's gather of the whole weights onto rank 0 after an update, a child of ``rl.trainer.train``.
TRAINER_GATHER: Final[str] = CONTRACT["spans"]["trainer_gather"]
#: Role spans are ``<prefix><spans>.<method>``, as ``RavelActor`` names them.
ROLE_SPAN_PREFIX: Final[str] = CONTRACT["spans"]["role_span_prefix"]

# the llm_request span's attributes (vLLM's names where vLLM has them; Java EngineNames)
REQUEST_ID: Final[str] = _ENGINE["REQUEST_ID"]
REQUEST_N: Final[str] = _ENGINE["REQUEST_N"]
REQUEST_MAX_TOKENS: Final[str] = _ENGINE["REQUEST_MAX_TOKENS"]
REQUEST_TEMPERATURE: Final[str] = _ENGINE["REQUEST_TEMPERATURE"]
REQUEST_TOP_P: Final[str] = _ENGINE["REQUEST_TOP_P"]
REQUEST_MODEL: Final[str] = _ENGINE["REQUEST_MODEL"]
RESPONSE_MODEL: Final[str] = _ENGINE["RESPONSE_MODEL"]
OPERATION_NAME: Final[str] = _ENGINE["OPERATION_NAME"]
USAGE_PROMPT_TOKENS: Final[str] = _ENGINE["USAGE_PROMPT_TOKENS"]
USAGE_COMPLETION_TOKENS: Final[str] = _ENGINE["USAGE_COMPLETION_TOKENS"]
RESPONSE_FINISH_REASONS: Final[str] = _ENGINE["RESPONSE_FINISH_REASONS"]
LATENCY_TIME_IN_QUEUE: Final[str] = _ENGINE["LATENCY_TIME_IN_QUEUE"]
LATENCY_TIME_TO_FIRST_TOKEN: Final[str] = _ENGINE["LATENCY_TIME_TO_FIRST_TOKEN"]
LATENCY_E2E: Final[str] = _ENGINE["LATENCY_E2E"]
LATENCY_TIME_IN_MODEL_PREFILL: Final[str] = _ENGINE["LATENCY_TIME_IN_MODEL_PREFILL"]
LATENCY_TIME_IN_MODEL_DECODE: Final[str] = _ENGINE["LATENCY_TIME_IN_MODEL_DECODE"]
LATENCY_TIME_IN_MODEL_INFERENCE: Final[str] = _ENGINE["LATENCY_TIME_IN_MODEL_INFERENCE"]
ENGINE_PREEMPTIONS: Final[str] = _ENGINE["ENGINE_PREEMPTIONS"]
ENGINE_KEEP_REASON: Final[str] = _ENGINE["ENGINE_KEEP_REASON"]
WEIGHT_VERSION: Final[str] = _ENGINE["WEIGHT_VERSION"]
# the lifecycle children's attributes (GenAI names; Java EngineNames)
USAGE_INPUT_TOKENS: Final[str] = _ENGINE["USAGE_INPUT_TOKENS"]
USAGE_OUTPUT_TOKENS: Final[str] = _ENGINE["USAGE_OUTPUT_TOKENS"]
ENGINE_RECOMPUTE: Final[str] = _ENGINE["ENGINE_RECOMPUTE"]
OPERATION_TEXT_COMPLETION: Final[str] = CONTRACT["engine_values"]["OPERATION_TEXT_COMPLETION"]

# the role spans' attributes (Java RavelAttributes)
ACTOR_ROLE: Final[str] = _ROLE["ACTOR_ROLE"]
ACTOR_METHOD: Final[str] = _ROLE["ACTOR_METHOD"]
REWARD_FUNCTION: Final[str] = _ROLE["REWARD_FUNCTION"]
REWARD_FAILED: Final[str] = _ROLE["REWARD_FAILED"]
REFIT_BYTES: Final[str] = _ROLE["REFIT_BYTES"]
#: On a trainer rank's ``rl.trainer.train``: its strategy, and the bytes of parameters and optimizer state it holds.
TRAINER_STRATEGY: Final[str] = _ROLE["TRAINER_STRATEGY"]
TRAINER_PARAM_BYTES: Final[str] = _ROLE["TRAINER_PARAM_BYTES"]
TRAINER_OPTIMIZER_BYTES: Final[str] = _ROLE["TRAINER_OPTIMIZER_BYTES"]

# resource attributes every process carries (Java RavelAttributes)
RUN_ID: Final[str] = _RESOURCE["RUN_ID"]
PROCESS_ROLE: Final[str] = _RESOURCE["PROCESS_ROLE"]
PROCESS_PID: Final[str] = _RESOURCE["PROCESS_PID"]
RAY_JOB_ID: Final[str] = _RESOURCE["RAY_JOB_ID"]
RAY_ACTOR_ID: Final[str] = _RESOURCE["RAY_ACTOR_ID"]
RAY_NODE_ID: Final[str] = _RESOURCE["RAY_NODE_ID"]
RAY_NODE_IP: Final[str] = _RESOURCE["RAY_NODE_IP"]
HOST_NAME: Final[str] = _RESOURCE["HOST_NAME"]

#: Span groups, in the Java ``SpanGroup`` order.
SPAN_GROUPS: Final[tuple[str, ...]] = tuple(CONTRACT["span_groups"])
#: Each preset's span groups (Java ``Preset``).
PRESETS: Final[dict[str, frozenset[str]]] = {k: frozenset(v) for k, v in CONTRACT["presets"].items()}
#: Where spans go (Java ``ExporterKind``).
EXPORTERS: Final[tuple[str, ...]] = tuple(CONTRACT["exporters"])
#: The Python generation worker's engines (Java ``PythonWorkers.ENGINES``).
ENGINES: Final[tuple[str, ...]] = tuple(CONTRACT["engines"])
#: Why a request ended, as the wire and the spans spell it (Java ``FinishReason``).
FINISH_REASONS: Final[tuple[str, ...]] = tuple(CONTRACT["finish_reasons"])
#: The first bytes of a generate call's results in their binary wire form (Java ``ResultWire.MAGIC``).
RESULT_WIRE_MAGIC: Final[bytes] = CONTRACT["result_wire"]["magic"].encode("ascii")
#: Why an engine span was kept, in the sampler's order (Java ``RequestSampler``).
KEEP_REASONS: Final[tuple[str, ...]] = tuple(CONTRACT["keep_reasons"])

#: Prefix of the telemetry settings the driver passes to every worker (Java ``WorkerEnvironment``).
TELEMETRY_ENV_PREFIX: Final[str] = CONTRACT["environment"]["telemetry_prefix"]
#: Prefix of the OTLP settings the driver passes to every worker (Java ``OtlpSettings``).
OTLP_ENV_PREFIX: Final[str] = CONTRACT["environment"]["otlp_prefix"]
#: The variable that names the parent of an actor's start-up spans: its role's ``rl.run.actors.<role>`` span, as a W3C
#: ``traceparent`` (Java ``TraceCarrier.STARTUP_ENV``).
STARTUP_TRACEPARENT_ENV: Final[str] = CONTRACT["environment"]["startup_traceparent"]

#: GRPO hyper-parameter defaults both trainers share (Java ``GrpoConfig.Builder``).
GRPO_DEFAULTS: Final[dict[str, float | int | str | bool]] = dict(CONTRACT["grpo_defaults"])
#: The named choices of the GRPO settings (``loss_type``, ``scale_rewards``, ``kl_estimator``, ``lr_scheduler``).
GRPO_CHOICES: Final[dict[str, tuple[str, ...]]] = {k: tuple(v) for k, v in CONTRACT["grpo_choices"].items()}
#: What the reward environment does when your reward function raises (``reward.on_error``), the first the default.
REWARD_ON_ERROR: Final[tuple[str, ...]] = tuple(CONTRACT["reward_on_error"])
#: How a trainer group (``trainer.workers`` > 1) holds the policy (``trainer.strategy``), the first the default.
TRAINER_STRATEGIES: Final[tuple[str, ...]] = tuple(CONTRACT["trainer_strategies"])
#: The fields of a trainer's ``TrainOutcome`` on the wire, in order (the Java ``TrainMetrics`` components).
TRAIN_METRICS: Final[tuple[str, ...]] = tuple(CONTRACT["train_metrics"])
