"""The refit's weights (ravel_workers.weights): one buffer and its index, out of band through pickle 5."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import torch

from ravel_workers import names, policy
from ravel_workers.weights import ALIGN, FORMAT, KEYS, Weights, gather
from ravel_workers.wire import ModelConfig


class Mixed(torch.nn.Module):
    """Tensors of several dtypes and shapes, a 0-d one, a non-contiguous one and two names for one storage."""

    def __init__(self) -> None:
        super().__init__()
        self.a = torch.nn.Parameter(torch.randn(3, 5))
        self.b = torch.nn.Parameter(torch.randn(7).to(torch.bfloat16))
        self.register_buffer("scalar", torch.tensor(2.5, dtype=torch.float64))
        self.register_buffer("mask", torch.tensor([True, False, True]))
        self.register_buffer("steps", torch.arange(6, dtype=torch.int64).reshape(2, 3).t())
        self.register_buffer("empty", torch.empty(0, 4))
        self.tied = self.a  # a second name for a's storage


def test_gather_round_trips_every_dtype_and_shape():
    m = Mixed()
    w = gather(m, 4)
    state = w.state_dict()
    assert w.version == 4 and list(state) == list(m.state_dict())
    for k, v in m.state_dict().items():
        assert state[k].dtype == v.dtype and state[k].shape == v.shape and torch.equal(state[k], v), k
    assert all(e.offset % ALIGN == 0 for e in w.entries)
    offsets = {e.name: e.offset for e in w.entries}
    assert offsets["a"] == offsets["tied"]  # one storage, its bytes once
    assert w.nbytes == sum(-(-e.nbytes // ALIGN) * ALIGN for e in {e.offset: e for e in w.entries}.values())


def test_gather_is_a_snapshot():
    m = Mixed()
    w = gather(m, 1)
    with torch.no_grad():
        m.a.add_(1.0)
    assert not torch.equal(w.state_dict()["a"], m.a)


def test_the_wire_dict_is_the_contracts_and_crosses_pickle_5_out_of_band():
    m = policy.build_model(ModelConfig("gpt2", 14, 1, 16, 2, 8), 3)
    wire = gather(m, 2).to_wire()
    assert tuple(wire) == KEYS == names.WEIGHTS_KEYS and wire["format"] == FORMAT == names.WEIGHTS_FORMAT
    buffers: list[pickle.PickleBuffer] = []
    head = pickle.dumps(wire, protocol=5, buffer_callback=buffers.append)
    assert len(buffers) == 1 and len(head) < 4096  # the bytes travel beside the pickle, not in it
    view = buffers[0].raw()
    readonly = np.frombuffer(view.tobytes(), dtype=np.uint8)  # read-only, as Ray hands the worker its array
    back = Weights.from_wire(pickle.loads(head, buffers=[readonly]))
    other = policy.build_model(ModelConfig("gpt2", 14, 1, 16, 2, 8), 4)
    other.load_state_dict(back.state_dict(), strict=True)
    assert all(torch.equal(v, m.state_dict()[k]) for k, v in other.state_dict().items())
    assert back.version == 2


@pytest.mark.parametrize("change, message", [
    (lambda d: d.update(format="ravel.weights.other"), "format"),
    (lambda d: d.pop("tensors"), "keys"),
    (lambda d: d.update(data=np.zeros(4, dtype=np.float32)), "uint8"),
    (lambda d: d["tensors"].__setitem__(0, ["x", "torch.nope", [1], 0]), "dtype"),
    (lambda d: d["tensors"].__setitem__(0, ["x", "torch.float32", [10 ** 6], 0]), "outside"),
    (lambda d: d["tensors"].__setitem__(0, ["x", "torch.float32", [1], 3]), "outside"),
    (lambda d: d["tensors"].__setitem__(0, ["x", "torch.float32"]), "entry"),
])
def test_from_wire_names_what_is_wrong(change, message):
    wire = gather(Mixed(), 1).to_wire()
    change(wire)
    with pytest.raises(ValueError, match=message):
        Weights.from_wire(wire)
    with pytest.raises(TypeError, match=FORMAT):
        Weights.from_wire(b"a torch.save blob")
