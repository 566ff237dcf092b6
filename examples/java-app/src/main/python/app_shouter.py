"""The example's Python actor: shouts each word and has the Java echo actor answer it."""

from __future__ import annotations

import os
from dataclasses import dataclass

import ray
from ravel_workers.api import RoleActor, java_actor, role_method


@dataclass
class Words:
    """``Words`` of the Java side (a record): the same fields, in snake case."""

    items: list[str]
    hops: list[str]


@ray.remote
class Shouter(RoleActor):
    ROLE, SPANS = "shouter", "shouter"

    def __init__(self, spec: str) -> None:
        super().__init__()

    @role_method()
    def shout(self, words: Words) -> Words:
        echo = java_actor("app-echo")
        return Words([echo.call("echo", w.upper(), returns=str) for w in words.items], [*words.hops, "shouter"])

    @role_method()
    def environment(self, names: list[str]) -> dict[str, str]:
        return {n: os.environ[n] for n in names if n in os.environ}
