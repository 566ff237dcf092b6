"""Prints the scalars of a TensorBoard log folder as TensorBoard itself reads them, for TrackersIT: one JSON object,
tag to a list of [step, value], read with TensorBoard's own EventAccumulator (every event kept)."""

import json
import sys

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from tensorboard.util import tensor_util

acc = EventAccumulator(sys.argv[1], size_guidance={"tensors": 0, "scalars": 0})
acc.Reload()
out = {}
for tag in acc.Tags()["tensors"]:
    out[tag] = [[e.step, float(tensor_util.make_ndarray(e.tensor_proto).item())] for e in acc.Tensors(tag)]
for tag in acc.Tags()["scalars"]:  # simple_value scalars (float32), were there any
    out[tag] = [[e.step, e.value] for e in acc.Scalars(tag)]
print(json.dumps(out))
