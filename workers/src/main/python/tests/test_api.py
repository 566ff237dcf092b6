"""Python actors of a user's own: the RoleActor base, the wire of their dataclasses, and calls into Java actors."""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass
from typing import Any

import pytest

from ravel_workers import api
from ravel_workers.api import JavaActor, JavaWorkerError, RoleActor, role_method
from ravel_workers.role import extract_carrier
from ravel_workers.wire.codec import decode_args, encode_result, from_wire, to_wire

from support import spans_of


@dataclass
class Words:
    items: list[str]
    hops: list[str]


@dataclass
class Bag:
    words: Words
    counts: dict[str, int]
    note: str | None


class Colour(enum.Enum):
    RED = 1
    BLUE = 2


class Shouter(RoleActor):
    ROLE, SPANS = "shouter", "shouter"

    @role_method()
    def shout(self, words: Words, colour: Colour) -> Bag:
        return Bag(Words([w.upper() for w in words.items], [*words.hops, colour.name]), {"n": len(words.items)}, None)


def test_fromWire_userDataclass_nestedFieldsTakeTheirAnnotatedTypes() -> None:
    bag = from_wire(Bag, {"words": {"items": ["a"], "hops": []}, "counts": {"x": 2}, "note": None})
    assert bag == Bag(Words(["a"], []), {"x": 2}, None)


def test_fromWire_missingField_namesTheFieldAndTheClass() -> None:
    with pytest.raises(ValueError, match=r"Words: field\(s\) \['hops'\] missing"):
        from_wire(Words, {"items": ["a"]})


def test_fromWire_enum_byNameAndRefusesAStranger() -> None:
    assert from_wire(Colour, "BLUE") is Colour.BLUE
    with pytest.raises(ValueError, match="'GREEN' is not a member of Colour"):
        from_wire(Colour, "GREEN")


def test_toWire_dataclassAndEnum_fieldByFieldAsJavaRecordsRead() -> None:
    assert json.loads(encode_result(Bag(Words(["a"], ["b"]), {"k": 1}, "n"))) == {
        "words": {"items": ["a"], "hops": ["b"]}, "counts": {"k": 1}, "note": "n"}
    assert to_wire(Colour.RED) == "RED"


def test_roleMethod_userRole_decodesDataclassesEncodesTheResultAndOpensItsSpan(make_telemetry: Any) -> None:
    t = make_telemetry("shouter")
    s = Shouter(t)
    out = s.shout(None, json.dumps([{"items": ["hi"], "hops": []}, "RED"]))
    assert json.loads(out) == {"words": {"items": ["HI"], "hops": ["RED"]}, "counts": {"n": 1}, "note": None}
    assert [x["name"] for x in spans_of(t)] == ["rl.shouter.shout"]
    assert json.loads(s.flush_telemetry(None, "[1000]"))["ended"] == 1
    assert decode_args("[]") == []


def test_roleActor_withoutRoleOrSpans_refusedNamingTheClass() -> None:
    class Nameless(RoleActor):
        pass

    with pytest.raises(TypeError, match="Nameless must set the class attributes ROLE and SPANS"):
        Nameless()


class _Remote:
    def __init__(self, answer: dict[str, Any]) -> None:
        self.answer = answer
        self.sent: tuple[str, str, str] | None = None

    def remote(self, carrier: str, method: str, args: str) -> bytes:
        self.sent = (carrier, method, args)
        return json.dumps(self.answer).encode()


class _Handle:
    def __init__(self, answer: dict[str, Any]) -> None:
        self.invokeJson = _Remote(answer)


def test_javaActorCall_sendsCarrierAndWireArgsAndDecodesTheAnswer(monkeypatch: pytest.MonkeyPatch) -> None:
    import ray

    monkeypatch.setattr(ray, "get", lambda ref, timeout=None: ref)
    handle = _Handle({"ok": {"items": ["X!"], "hops": ["echo"]}})
    got = JavaActor("echo", handle).call("echo", Words(["x"], []), 3, returns=Words)
    assert got == Words(["X!"], ["echo"])
    assert handle.invokeJson.sent is not None
    carrier, method, args = handle.invokeJson.sent
    assert method == "echo"
    assert json.loads(args) == [{"items": ["x"], "hops": []}, 3]
    assert set(json.loads(carrier)) == {"traceparent", "tracestate", "baggage"}
    extract_carrier(carrier)  # a carrier the receiving side can read


def test_javaActorCall_javaException_raisedWithItsTypeAndMessage(monkeypatch: pytest.MonkeyPatch) -> None:
    import ray

    monkeypatch.setattr(ray, "get", lambda ref, timeout=None: ref)
    handle = _Handle({"error": {"type": "java.lang.IllegalArgumentException", "message": "no"}})
    with pytest.raises(JavaWorkerError, match=r"java.lang.IllegalArgumentException: no \(in Java echo.echo\)") as e:
        JavaActor("echo", handle).call("echo", "x")
    assert e.value.java_type == "java.lang.IllegalArgumentException"


def test_javaActorCall_nanArgument_refusedBeforeSending(monkeypatch: pytest.MonkeyPatch) -> None:
    handle = _Handle({"ok": None})
    with pytest.raises(ValueError, match="echo.echo: an argument is not valid JSON"):
        JavaActor("echo", handle).call("echo", float("nan"))
    assert handle.invokeJson.sent is None


def test_javaActor_noSuchActor_namesIt(monkeypatch: pytest.MonkeyPatch) -> None:
    import ray

    def missing(name: str, namespace: str | None = None) -> Any:
        raise ValueError(f"Failed to look up actor with name '{name}'")

    monkeypatch.setattr(ray, "get_actor", missing)
    with pytest.raises(ValueError, match="no Java actor named 'echo' is alive"):
        api.java_actor("echo")
