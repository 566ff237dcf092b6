"""The refit's weights on the wire: a state dict as one flat byte buffer and its index, for Ray's zero-copy path.

The Python trainer's ``weights`` call returns :meth:`Weights.to_wire`, a dict of plain values and one NumPy
``uint8`` array. Ray serialises that array out of band (pickle protocol 5): the return is one copy of the bytes
into the object store, and a worker on the node reads the array straight from shared memory (read-only, no
copy), so :meth:`Weights.state_dict` is views into it and ``load_state_dict`` is the one copy on that side.
The Java driver passes the object's reference from the trainer to every worker without reading it.

The dict (``refit_weights`` in ``contract.json``, Java ``PythonWorkers.WEIGHTS_FORMAT``)::

    {"format": "ravel.weights.flat/1", "version": 3,
     "tensors": [[name, dtype, shape, offset], ...],   # dtype as torch prints it: "torch.float32"
     "data": numpy.ndarray(uint8, 1-D)}

A tensor is ``data[offset : offset + numel * itemsize]`` seen as ``dtype`` and ``shape``; offsets are multiples of
:data:`ALIGN`. Tensors that share storage (tied embeddings) share their bytes: one offset, written once.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import torch

from . import names

#: The format tag of the wire dict (``contract.json`` ``refit_weights.format``).
FORMAT: Final[str] = names.WEIGHTS_FORMAT
#: The wire dict's keys, in order.
KEYS: Final[tuple[str, ...]] = names.WEIGHTS_KEYS
#: Every tensor starts at a multiple of this many bytes (any dtype can view it; cache-line aligned).
ALIGN: Final[int] = 64


@dataclass(frozen=True)
class Entry:
    """One tensor of the state dict: where its bytes lie in the buffer."""

    name: str
    dtype: torch.dtype
    shape: tuple[int, ...]
    offset: int

    @property
    def nbytes(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n * _itemsize(self.dtype)


@dataclass(frozen=True)
class Weights:
    """A state dict at ``version`` as one ``uint8`` buffer (``data``) and the index of its tensors."""

    version: int
    entries: tuple[Entry, ...]
    data: torch.Tensor  # uint8, 1-D, on the CPU

    @property
    def nbytes(self) -> int:
        """The buffer's bytes: what the refit moves (``rl.refit.bytes``)."""
        return int(self.data.numel())

    def state_dict(self) -> dict[str, torch.Tensor]:
        """The state dict, every tensor a view into the buffer (no copy; read-only when the buffer is)."""
        return {e.name: self.data[e.offset:e.offset + e.nbytes].view(e.dtype).view(e.shape) for e in self.entries}

    def to_wire(self) -> dict[str, Any]:
        """The wire dict (module docstring); its array shares the buffer's memory."""
        return {"format": FORMAT, "version": self.version,
                "tensors": [[e.name, str(e.dtype), list(e.shape), e.offset] for e in self.entries],
                "data": self.data.numpy()}

    @classmethod
    def from_wire(cls, d: Any) -> Weights:
        """The weights of a wire dict (its array not copied); a ``TypeError``/``ValueError`` naming what is wrong."""
        if not isinstance(d, dict):
            raise TypeError(f"weights: expected the trainer's {FORMAT} dict, got {type(d).__name__}")
        if d.get("format") != FORMAT or any(k not in d for k in KEYS):
            raise ValueError(f"weights: expected a {FORMAT} dict with keys {list(KEYS)}, got format "
                             f"{d.get('format')!r} and keys {sorted(d)}")
        array = d["data"]
        if not isinstance(array, np.ndarray) or array.dtype != np.uint8 or array.ndim != 1:
            raise ValueError("weights: 'data' must be a 1-D uint8 NumPy array")
        with warnings.catch_warnings():  # the object store's array is read-only; the views are only ever read
            warnings.simplefilter("ignore", UserWarning)
            data = torch.from_numpy(array)
        entries = tuple(_entry(t) for t in d["tensors"])
        for e in entries:
            if e.offset < 0 or e.offset % ALIGN or e.offset + e.nbytes > array.size:
                raise ValueError(f"weights: tensor '{e.name}' lies outside the buffer of {array.size} bytes")
        return cls(version=int(d["version"]), entries=entries, data=data)


def gather(model: torch.nn.Module, version: int) -> Weights:
    """``model``'s state dict at ``version`` copied into one new CPU buffer (each tensor once, storage shared by
    several names once)."""
    return gather_state(model.state_dict(), version)


def gather_state(state: dict[str, torch.Tensor], version: int) -> Weights:
    """The weights ``state`` (a state dict) at ``version`` copied into one new CPU buffer, as :func:`gather`."""
    placed: dict[tuple[int, int, tuple[int, ...], tuple[int, ...], torch.dtype], int] = {}
    entries: list[Entry] = []
    todo: list[tuple[int, torch.Tensor]] = []
    size = 0
    for name, t in state.items():
        key = (t.untyped_storage().data_ptr(), int(t.storage_offset()), tuple(t.shape), tuple(t.stride()), t.dtype)
        offset = placed.get(key)
        if offset is None:
            offset = placed[key] = size
            todo.append((offset, t))
            size += -(-t.numel() * t.element_size() // ALIGN) * ALIGN
        entries.append(Entry(name, t.dtype, tuple(t.shape), offset))
    data = torch.empty(size, dtype=torch.uint8)
    with torch.no_grad():
        for offset, t in todo:
            data[offset:offset + t.numel() * t.element_size()].view(t.dtype).view(t.shape).copy_(t.detach())
    return Weights(version=int(version), entries=tuple(entries), data=data)


def _itemsize(dtype: torch.dtype) -> int:
    return torch.empty((), dtype=dtype).element_size()


def _entry(item: Any) -> Entry:
    if not isinstance(item, (list, tuple)) or len(item) != 4:
        raise ValueError(f"weights: a tensor entry must be [name, dtype, shape, offset], got {item!r}")
    name, dtype, shape, offset = item
    found = getattr(torch, str(dtype).removeprefix("torch."), None)
    if not isinstance(found, torch.dtype):
        raise ValueError(f"weights: tensor '{name}' has an unknown dtype {dtype!r}")
    return Entry(str(name), found, tuple(int(s) for s in shape), int(offset))
