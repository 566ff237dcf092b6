"""Your reward function, found by name and called with a batch of completions.

``reward.function`` is ``"package.module:function"`` (imported with the ``reward.code_path`` folders first on
``sys.path``) or a built-in: ``exact_match`` (the completion, trimmed, equals the answer), ``math`` (the last
number or ``\\boxed{}`` of the completion against the answer, through Hugging Face's ``math-verify``).
The function is called with keyword arguments ``prompts``, ``completions``, ``answers``, ``metadata`` and
``step`` (lists of equal length but ``step``; a function that takes fewer is given only those it names, unless
it takes ``**kwargs``) and returns one number per completion, or a mapping of named components, each a list of
numbers, whose sum is the reward. Anything else is a :class:`RewardError` naming the function.
"""

from __future__ import annotations

import importlib
import inspect
import math
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ARGUMENTS = ("prompts", "completions", "answers", "metadata", "step")


class RewardError(ValueError):
    """A reward function that cannot be found, called, or whose result is not one number per completion."""


class RewardRaisedError(RewardError):
    """The reward function raised (``reward.on_error`` decides whether the step fails); the message names it."""


def exact_match(completions: Sequence[str], answers: Sequence[str], **_: Any) -> list[float]:
    """1 where the completion, trimmed, is the answer, trimmed; else 0."""
    return [1.0 if c.strip() == a.strip() else 0.0 for c, a in zip(completions, answers, strict=True)]


_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def math_answer(completions: Sequence[str], answers: Sequence[str], **_: Any) -> list[float]:
    """1 where the completion's final answer (``\\boxed{}``, else its last number) equals the answer."""
    from math_verify import parse, verify

    out = []
    for c, a in zip(completions, answers, strict=True):
        boxed = "\\boxed{" in c
        numbers = _NUMBER.findall(c)
        if not boxed and not numbers:
            out.append(0.0)
            continue
        target = parse(c) if boxed else parse(numbers[-1])
        out.append(1.0 if target and verify(parse(a), target) else 0.0)
    return out


BUILT_IN: dict[str, Callable[..., Any]] = {"exact_match": exact_match, "math": math_answer}


@dataclass(frozen=True)
class Scores:
    """The rewards of a batch and, for a function that returns components, each component's values."""

    rewards: list[float]
    components: dict[str, list[float]]


class RewardFunction:
    """A resolved reward function: its name (as configured), the callable and the arguments it takes."""

    def __init__(self, name: str, code_path: Sequence[str] = ()) -> None:
        self.name = name
        self.fn = resolve(name, code_path)
        params: Mapping[str, inspect.Parameter]
        try:
            params = inspect.signature(self.fn).parameters
        except (TypeError, ValueError):
            params = {}
        takes_all = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()) or not params
        self.arguments = ARGUMENTS if takes_all else tuple(a for a in ARGUMENTS if a in params)
        if not takes_all and "completions" not in self.arguments:
            raise RewardError(f"reward.function {name}: takes no 'completions' argument")

    def __call__(self, prompts: Sequence[str], completions: Sequence[str], answers: Sequence[str],
                 metadata: Sequence[Mapping[str, Any]], step: int) -> Scores:
        n = len(completions)
        given: dict[str, Any] = {"prompts": list(prompts), "completions": list(completions),
                                 "answers": list(answers), "metadata": [dict(m) for m in metadata], "step": step}
        try:
            result = self.fn(**{k: given[k] for k in self.arguments})
        except Exception as e:
            raise RewardRaisedError(f"reward.function {self.name}: raised {type(e).__name__}: {e}") from e
        if isinstance(result, Mapping):
            components = {str(k): _numbers(self.name, f"component '{k}'", v, n) for k, v in result.items()}
            if not components:
                raise RewardError(f"reward.function {self.name}: returned an empty mapping")
            rewards = [math.fsum(c[i] for c in components.values()) for i in range(n)]
            return Scores(rewards, components)
        return Scores(_numbers(self.name, "result", result, n), {})


def _numbers(name: str, what: str, values: Any, n: int) -> list[float]:
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        try:
            values = list(values)
        except TypeError:
            raise RewardError(f"reward.function {name}: its {what} is a {type(values).__name__}, not a list of "
                              f"{n} numbers") from None
    if len(values) != n:
        raise RewardError(f"reward.function {name}: its {what} has {len(values)} values for {n} completions")
    out = []
    for i, v in enumerate(values):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(float(v)):
            raise RewardError(f"reward.function {name}: its {what}[{i}] is {v!r}, not a finite number")
        out.append(float(v))
    return out


def resolve(name: str, code_path: Sequence[str] = ()) -> Callable[..., Any]:
    """The callable ``name`` names: a built-in, or ``module:function`` imported with ``code_path`` first."""
    if name in BUILT_IN:
        return BUILT_IN[name]
    if ":" not in name:
        raise RewardError(f"reward.function '{name}': not a built-in ({', '.join(BUILT_IN)}) nor"
                          " 'package.module:function'")
    module_name, _, attr = name.partition(":")
    for folder in reversed(list(code_path)):
        p = str(Path(folder).expanduser().resolve())
        if not Path(p).is_dir():
            raise RewardError(f"reward.code_path: {folder} is not a folder")
        if p not in sys.path:
            sys.path.insert(0, p)
    try:
        module = importlib.import_module(module_name)
    except Exception as e:
        raise RewardError(f"reward.function {name}: cannot import {module_name} ({type(e).__name__}: {e};"
                          " reward.code_path lists the folders searched first)") from e
    fn = module
    for part in attr.split("."):
        if not hasattr(fn, part):
            raise RewardError(f"reward.function {name}: {module_name} has no '{attr}'")
        fn = getattr(fn, part)
    if not callable(fn):
        raise RewardError(f"reward.function {name}: {attr} is a {type(fn).__name__}, not callable")
    return fn
