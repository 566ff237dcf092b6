"""The JSON form of every value that crosses the Java/Python hop (docs/python-workers.md, "Wire forms").

Each value type is a dataclass with ``to_wire()`` (a JSON-ready dict, snake_case keys) and
``from_wire(dict)`` (:mod:`.values`). :func:`decode_args` turns a call's ``args`` JSON into Python values
(``{"$ref": i}`` replaced by the i-th resolved object reference), :func:`from_wire` converts one of them to
an annotated type, and :func:`encode_result` turns a result into the UTF-8 JSON bytes Java reads
(:mod:`.codec`). Every public name is re-exported here.

Non-finite floats (NaN, infinities) are not JSON: encoding them fails with a :class:`ValueError` naming the
problem rather than sending something Java cannot parse.
"""

from __future__ import annotations

from .codec import decode_args, encode_result, from_wire, to_wire
from .results import decode_results, encode_results
from .values import (
    FINISH_REASONS,
    EngineStats,
    ExportStats,
    GenerationRequest,
    GenerationResult,
    GenerationWorkerSpec,
    GrpoSettings,
    LogProbSummary,
    ModelConfig,
    Problem,
    RequestStats,
    RewardScores,
    RewardSpec,
    SamplingParams,
    TrainerSpec,
    TrainOutcome,
    Trajectory,
)

__all__ = [
    "FINISH_REASONS",
    "EngineStats",
    "ExportStats",
    "GenerationRequest",
    "GenerationResult",
    "GenerationWorkerSpec",
    "GrpoSettings",
    "LogProbSummary",
    "ModelConfig",
    "Problem",
    "RequestStats",
    "RewardScores",
    "RewardSpec",
    "SamplingParams",
    "TrainOutcome",
    "TrainerSpec",
    "Trajectory",
    "decode_args",
    "decode_results",
    "encode_result",
    "encode_results",
    "from_wire",
    "to_wire",
]
