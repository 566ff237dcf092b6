"""The binary wire form of a generate call's results (``contract.json``, ``result_wire``; Java ``ResultWire``).

A Python generation worker answers ``generate`` with these bytes rather than JSON: token ids and log-probs go as
packed little-endian arrays, so neither side builds a number object per token, and a Java and a Python worker
answer the driver with the same bytes. Layout, all little-endian: the magic ``RVG1``, ``i32`` count, then per
result: string request id; ``i32 n, i32[n]`` prompt tokens; ``i32 n, i32[n]`` completion tokens; ``i32 n,
f32[n]`` log-probs; string finish reason; ``i64`` weight version; ``i64`` arrival, scheduled, first-token and finish
epoch nanoseconds, prefill and decode nanoseconds; ``i32`` preemptions, prompt tokens, completion tokens; ``u8``
traced; string error (``i32 -1``: none); ``i32 n`` version spans, each ``i64`` version, ``i32`` start, ``i32`` end
(a Python worker sends none). A string is ``i32`` byte length and its UTF-8 bytes.
"""

from __future__ import annotations

import array
import struct
import sys
from collections.abc import Sequence

from .. import names
from .values import FINISH_REASONS, GenerationResult, RequestStats

MAGIC: bytes = names.RESULT_WIRE_MAGIC

_I32 = struct.Struct("<i")
_TAIL = struct.Struct("<q6q3iB")  # weight version, the six stats times, three stats counts, traced
_SPAN = struct.Struct("<qii")
_LITTLE = sys.byteorder == "little"


def _string(out: bytearray, s: str | None) -> None:
    if s is None:
        out += _I32.pack(-1)
        return
    b = s.encode("utf-8")
    out += _I32.pack(len(b))
    out += b


def _packed(out: bytearray, code: str, values: Sequence[int] | Sequence[float]) -> None:
    a = array.array(code, values)
    if not _LITTLE:
        a.byteswap()
    out += _I32.pack(len(a))
    out += a.tobytes()


def encode_results(results: Sequence[GenerationResult]) -> bytes:
    """The wire form of ``results``."""
    out = bytearray(MAGIC)
    out += _I32.pack(len(results))
    for r in results:
        _string(out, r.request_id)
        _packed(out, "i", r.prompt_tokens)
        _packed(out, "i", r.completion_tokens)
        _packed(out, "f", r.logprobs)
        _string(out, r.finish_reason)
        s = r.stats
        out += _TAIL.pack(r.weight_version, s.arrival_epoch_nanos, s.scheduled_epoch_nanos, s.first_token_epoch_nanos,
                          s.finish_epoch_nanos, s.prefill_nanos, s.decode_nanos, s.preemptions, s.prompt_tokens,
                          s.completion_tokens, 1 if r.traced else 0)
        _string(out, r.error)
        out += _I32.pack(0)
    return bytes(out)


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.view = memoryview(data)
        self.at = len(MAGIC)

    def take(self, n: int) -> memoryview:
        if n < 0 or self.at + n > len(self.view):
            raise ValueError(f"generation results cut short at byte {self.at} (wanted {n} more)")
        v = self.view[self.at:self.at + n]
        self.at += n
        return v

    def i32(self) -> int:
        return int(_I32.unpack(self.take(4))[0])

    def string(self) -> str | None:
        n = self.i32()
        return None if n == -1 else bytes(self.take(n)).decode("utf-8")

    def packed(self, code: str) -> array.array:  # type: ignore[type-arg]
        n = self.i32()
        a = array.array(code)
        a.frombytes(self.take(4 * n) if n >= 0 else self.take(-1))
        if not _LITTLE:
            a.byteswap()
        return a


def decode_results(data: bytes) -> list[GenerationResult]:
    """The results in ``data`` (version spans are read and dropped: Python results have none)."""
    if not data.startswith(MAGIC):
        raise ValueError(f"not generation results in the binary wire form (no {MAGIC.decode()} header)")
    r = _Reader(data)
    out: list[GenerationResult] = []
    for _ in range(r.i32()):
        request_id = r.string()
        prompt = r.packed("i").tolist()
        completion = r.packed("i").tolist()
        logprobs = r.packed("f").tolist()
        reason = r.string()
        if request_id is None or reason not in FINISH_REASONS:
            raise ValueError(f"generation result with request id {request_id!r}, finish reason {reason!r}")
        (version, arrival, scheduled, first, finish, prefill, decode, preemptions, n_prompt, n_completion,
         traced) = _TAIL.unpack(r.take(_TAIL.size))
        error = r.string()
        for _ in range(r.i32()):
            r.take(_SPAN.size)
        out.append(GenerationResult(
            request_id=request_id, prompt_tokens=prompt, completion_tokens=completion, logprobs=logprobs,
            finish_reason=reason, weight_version=version,
            stats=RequestStats(arrival_epoch_nanos=arrival, scheduled_epoch_nanos=scheduled,
                               first_token_epoch_nanos=first, finish_epoch_nanos=finish, prefill_nanos=prefill,
                               decode_nanos=decode, preemptions=preemptions, prompt_tokens=n_prompt,
                               completion_tokens=n_completion),
            traced=bool(traced), error=error))
    if r.at != len(data):
        raise ValueError(f"{len(data) - r.at} byte(s) after the last of {len(out)} results")
    return out
