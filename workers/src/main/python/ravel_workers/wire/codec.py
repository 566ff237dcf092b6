"""Coding the calls: :func:`decode_args` turns a call's ``args`` JSON into Python values (``{"$ref": i}``
replaced by the i-th resolved object reference), :func:`from_wire` converts one of them to an annotated
type, and :func:`encode_result` turns a result into the UTF-8 JSON bytes Java reads.

Non-finite floats (NaN, infinities) are not JSON: encoding them fails with a :class:`ValueError` naming the
problem rather than sending something Java cannot parse.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import reprlib
import types
import typing
from collections.abc import Mapping, Sequence
from typing import Any

from .results import encode_results
from .values import GenerationResult

_REPR = reprlib.Repr()
_REPR.maxstring = 60
_REPR.maxother = 60


def _short(value: Any) -> str:
    """A short repr of ``value`` for an error message: messages end up on spans, so values are not copied whole."""
    return _REPR.repr(value)


def to_wire(value: Any) -> Any:
    """``value`` as JSON-ready data: Ravel's dataclasses by their ``to_wire``, other dataclasses field by field
    (a Java record's components in snake case), enums by name, sequences, sets and mappings recursively."""
    if hasattr(value, "to_wire"):
        return value.to_wire()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_wire(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, enum.Enum):
        return value.name
    if isinstance(value, (list, tuple, set, frozenset)):
        return [to_wire(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): to_wire(v) for k, v in value.items()}
    return value


def encode_result(value: Any) -> bytes:
    """The UTF-8 JSON bytes of ``value``'s wire form (strict JSON: no NaN or infinities); a non-empty list of
    :class:`~.values.GenerationResult` (a generate call's answer) in its binary form instead (:mod:`.results`)."""
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, GenerationResult) for v in value):
        return encode_results(value)
    try:
        return json.dumps(to_wire(value), separators=(",", ":"), allow_nan=False, ensure_ascii=False).encode()
    except ValueError as e:
        raise ValueError(f"result is not valid JSON (a NaN or infinite number?): {e}") from e


def decode_args(args: str | bytes, refs: Sequence[Any] = ()) -> list[Any]:
    """The positional arguments of a call: the JSON array ``args`` with each ``{"$ref": i}`` replaced by ``refs[i]``."""
    decoded = json.loads(args) if args else []
    if not isinstance(decoded, list):
        raise ValueError(f"args: expected a JSON array, got {type(decoded).__name__}")

    def resolve(v: Any) -> Any:
        if isinstance(v, dict):
            if set(v) == {"$ref"}:
                i = v["$ref"]
                if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < len(refs):
                    raise ValueError(f"args: {{\"$ref\": {i!r}}} but the call has {len(refs)} ref(s)")
                return refs[i]
            return {k: resolve(x) for k, x in v.items()}
        if isinstance(v, list):
            return [resolve(x) for x in v]
        return v

    return [resolve(v) for v in decoded]


def from_wire(tp: Any, value: Any) -> Any:
    """``value`` (decoded JSON) as the type ``tp``: wire dataclasses, ``list[X]``, optionals and scalars."""
    if tp is Any or tp is None:
        return value
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        targs = [a for a in typing.get_args(tp) if a is not type(None)]
        if value is None:
            return None
        return from_wire(targs[0], value) if len(targs) == 1 else value
    if origin in (list, Sequence):
        (item,) = typing.get_args(tp) or (Any,)
        if not isinstance(value, list):
            raise ValueError(f"expected a JSON array for {tp}, got {type(value).__name__}")
        return [from_wire(item, v) for v in value]
    if origin in (dict, Mapping):
        key, item = typing.get_args(tp) or (str, Any)
        if not isinstance(value, dict):
            raise ValueError(f"expected a JSON object for {tp}, got {type(value).__name__}")
        return {k: from_wire(item, v) for k, v in value.items()}
    if isinstance(tp, type) and hasattr(tp, "from_wire"):
        return tp.from_wire(value)
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        if not isinstance(value, dict):
            raise ValueError(f"expected a JSON object for {tp.__name__}, got {type(value).__name__}")
        hints = typing.get_type_hints(tp)
        fields = {f.name for f in dataclasses.fields(tp) if f.init}
        missing = [f for f in fields if f not in value]
        if missing:
            given = _short(sorted(value))
            raise ValueError(f"{tp.__name__}: field(s) {sorted(missing)} missing (fields given: {given})")
        return tp(**{f: from_wire(hints.get(f, Any), value[f]) for f in fields})
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        if not isinstance(value, str) or value not in tp.__members__:
            raise ValueError(f"{_short(value)} is not a member of {tp.__name__}")
        return tp[value]
    if tp is bytes:
        if isinstance(value, (bytes, bytearray, memoryview)):
            return bytes(value)
        raise ValueError(f"expected bytes (an object reference), got {type(value).__name__}")
    if tp in (int, float, str, bool):
        if tp is int and isinstance(value, float) and value.is_integer():
            return int(value)
        if not isinstance(value, tp) and not (tp is float and isinstance(value, int)):
            raise ValueError(f"expected {tp.__name__}, got {_short(value)}")
        return tp(value)
    return value
