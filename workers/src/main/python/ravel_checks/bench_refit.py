"""``python -m ravel_checks.bench_refit``: the Python refit's bandwidth against plain Ray, plain torch and memcpy.

Issue 32's refit benchmark (docs/benchmarks.md). A Ray cluster of its own (``ray.init`` on loopback, no dashboard)
runs Ravel's own actor classes, a ``PolicyTrainer`` and a ``GenerationWorker`` of one model (``--hidden``,
``--layers``, ``--heads``; GPT-2 family, a few tokens of vocabulary: the bytes are the blocks'), and two plain
receiver actors holding the same model. Each round times, with the same bytes (the state dict's tensors):

* **Ravel**: the refit as a run does it: the trainer's gather (``weights.gather``: its state dict copied into one
  buffer, timed in this process on a model of the same width, as the trainer caches the weights of a version),
  then ``trainer.weights`` into the object store (the buffer out of band: one copy) and the worker's
  ``update_weights`` on that reference (Ray's fetch, a mapping of shared memory; ``load_state_dict`` from views
  into it and the engine's swap between batches), through the wire methods the Java driver calls;
* **plain Ray, NumPy** (``ray_numpy``, the best plain path): ``ray.put`` of the state dict as NumPy arrays (each
  tensor's ``.numpy()``, a tensor sharing another's storage as the same array object), which Ray stores out of
  band (pickle protocol 5: one copy), then a plain actor's ``ray.get`` of it (zero-copy views of shared memory)
  and ``load_state_dict`` from ``torch.from_numpy`` views (the one copy on that side);
* **plain Ray, pickled** (``ray``): ``ray.put`` of the state dict's tensors as they are (pickled in band: torch's
  own reduction), then a plain actor's ``ray.get`` of it and ``load_state_dict``; favourable to Ravel by
  construction, kept for comparison with earlier reports;
* **plain torch**: ``torch.save`` of the state dict into memory, ``torch.load`` and ``load_state_dict``, in this
  process;
* **memcpy**: one ``numpy.copyto`` of the gathered buffer (the bytes the refit moves) into a buffer allocated
  once: the memory bandwidth that bounds every side (Ravel's refit copies the bytes three times: gather, object
  store, load).

GB/s is the state dict's bytes over a round's wall seconds, on every side; a round's ratio is Ravel's GB/s over
another side's. After one unrecorded warm-up of each, the rounds alternate their order. The report (``--json``)
gives ``bytes``, every round's GB/s of each side (``gb_per_s``) and, under ``ravel_over_ray_numpy``,
``ravel_over_memcpy`` and ``ravel_over_ray``, the per-round ratios (``per_round``), their mean (``value``) with its
Student-t 95% interval over the rounds (``ci95``, ``[null, null]`` for one round), their ``median`` and the ratio
of each side's fastest round (``fastest``: noise only ever adds time). Timings of a shared machine are noisy: read
the ratios of one invocation, not the seconds.

The receivers start from other weights than the trainer's (another seed), and after the rounds the benchmark
checks what each one holds: the SHA-256 of the worker's weights (:func:`policy.weights_sha256`, asked of the
worker actor) must equal the trainer's (asked of the trainer actor), and each plain receiver's must equal that of
the state dict it was sent; the digests are in the report (``digests``) and a mismatch is an error.
"""

from __future__ import annotations

import argparse
import io
import json
import math
import os
import statistics
import tempfile
import time
import warnings
from typing import Any

import numpy as np
import ray
import torch

from ravel_workers import actors, policy
from ravel_workers.weights import gather
from ravel_workers.wire import ModelConfig

CARRIER = json.dumps({"traceparent": "", "tracestate": "", "baggage": ""})
REF_ARG = json.dumps([{"$ref": 0}])


@ray.remote(num_cpus=0)
class Receiver:
    """A plain actor holding the model: what a refit without Ravel would load into."""

    def __init__(self, model: dict[str, Any], seed: int) -> None:
        self.model = policy.build_model(ModelConfig.from_wire(model), seed)

    def load_state(self, state: dict[str, torch.Tensor]) -> int:
        self.model.load_state_dict(state, strict=True)
        return len(state)

    def load_arrays(self, arrays: dict[str, np.ndarray]) -> int:
        """Loads a state dict sent as NumPy arrays (read-only views of the object store: only ever read)."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # torch warns that the arrays are not writable
            state = {k: torch.from_numpy(v) for k, v in arrays.items()}
        self.model.load_state_dict(state, strict=True)
        return len(state)

    def weights_sha256(self) -> str:
        return policy.weights_sha256(self.model)


def as_arrays(state: dict[str, torch.Tensor]) -> dict[str, np.ndarray]:
    """The state dict as NumPy arrays sharing its memory; tensors that share storage (tied embeddings) are one
    array object, so that pickle stores their bytes once, as Ravel's buffer does."""
    seen: dict[tuple[int, tuple[int, ...], tuple[int, ...], torch.dtype], np.ndarray] = {}
    out: dict[str, np.ndarray] = {}
    for name, t in state.items():
        key = (t.data_ptr(), tuple(t.shape), tuple(t.stride()), t.dtype)
        if key not in seen:
            seen[key] = t.detach().numpy()
        out[name] = seen[key]
    return out


def _held_sha256(actor: Any) -> str:
    """The SHA-256 of the weights a Ravel actor holds (a trainer's model, or a transformers worker's engine's),
    computed in the actor's own process."""

    def digest(impl: Any) -> str:
        model = impl.model if hasattr(impl, "model") else impl.engine.model
        return policy.weights_sha256(model)

    return str(ray.get(actor.__ray_call__.remote(digest), timeout=600))


def _grpo() -> dict[str, Any]:
    return {"group_size": 4, "clip_epsilon_low": 0.2, "clip_epsilon_high": 0.2, "kl_beta": 0.04,
            "learning_rate": 0.01, "weight_decay": 0.0, "max_grad_norm": 1.0, "temperature": 1.0,
            "advantage_eps": 1e-6}


def state_bytes(state: dict[str, torch.Tensor]) -> int:
    return sum(t.numel() * t.element_size() for t in state.values())


#: Student's t, two-sided 95% (the 0.975 quantile), for 1 to 30 degrees of freedom.
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
         2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042)


def t975(df: int) -> float:
    """Student's t 0.975 quantile for ``df`` degrees of freedom (a table to 30, Cornish-Fisher beyond)."""
    if df < 1:
        raise ValueError(f"degrees of freedom must be at least 1, got {df}")
    if df <= len(_T975):
        return _T975[df - 1]
    z = 1.959964
    return z + (z ** 3 + z) / (4 * df) + (5 * z ** 5 + 16 * z ** 3 + 3 * z) / (96 * df ** 2)


def summary(ratios: list[float]) -> dict[str, Any]:
    """``value`` (the mean), ``ci95`` (Student-t 95% interval of the mean; ``[None, None]`` for one value),
    ``per_round`` and ``median`` of per-round ratios."""
    mean = statistics.fmean(ratios)
    if len(ratios) < 2:
        ci: list[float | None] = [None, None]
    else:
        half = t975(len(ratios) - 1) * statistics.stdev(ratios) / math.sqrt(len(ratios))
        ci = [mean - half, mean + half]
    return {"value": mean, "ci95": ci, "per_round": list(ratios), "median": statistics.median(ratios)}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(prog="python -m ravel_checks.bench_refit", description=__doc__.splitlines()[0])
    ap.add_argument("--hidden", type=int, default=1024)
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--json", help="also write the report here")
    ap.add_argument("--temp-dir", help="Ray's temp folder (its logs under session_latest/logs; default a new folder"
                    " under /tmp; its path must stay short: Ray's socket paths must stay under 108 bytes)")
    a = ap.parse_args(argv)
    if a.rounds < 1 or a.hidden < 1 or a.layers < 1 or a.heads < 1 or a.hidden % a.heads:
        ap.error("--rounds, --hidden, --layers, --heads must be at least 1 and --hidden a multiple of --heads")
    model = {"family": "gpt2", "vocab_size": 16, "layers": a.layers, "hidden": a.hidden, "heads": a.heads,
             "max_positions": 16}
    # the sent weights' seed, and the receivers' own: a receiver holds the sent weights only if the refit moved them
    seed, receiver_seed = 7, 8
    local = policy.build_model(ModelConfig.from_wire(model), seed)
    state = policy.state_dict_cpu(local)
    arrays = as_arrays(state)
    nbytes = state_bytes(state)
    sent_sha256 = policy.weights_sha256(local)
    source = gather(local, 1).data.numpy()  # the bytes the refit moves, for the memcpy side
    target = np.empty_like(source)

    # a local ray.init() would otherwise switch on token auth and write ~/.ray/auth_token for every later `ray start`
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    ray_dir = a.temp_dir or tempfile.mkdtemp(prefix="rv-", dir="/tmp")  # Ray's socket paths: under 108 bytes
    ray.init(address="local", num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1",
             _temp_dir=ray_dir, log_to_driver=False,
             runtime_env={"env_vars": {"RAVEL_TELEMETRY_ENABLED": "false"}})
    try:
        spec = {"model": model, "device": "cpu"}
        trainer = actors.PolicyTrainer.options(num_cpus=0).remote(
            json.dumps({**spec, "seed": seed, "grpo": _grpo()}))
        worker = actors.GenerationWorker.options(num_cpus=0, max_concurrency=4).remote(json.dumps(
            {**spec, "seed": receiver_seed, "eos_token": 13, "model_name": "bench", "engine": "transformers",
             "max_running_requests": 8}))
        receiver = Receiver.remote(model, receiver_seed)  # type: ignore[attr-defined]
        receiver_np = Receiver.remote(model, receiver_seed)  # type: ignore[attr-defined]
        worker_before = _held_sha256(worker)

        def ravel_round() -> float:
            t0 = time.perf_counter()
            gather(local, 1)  # the trainer's gather, on a model of the same width
            weights_ref = trainer.weights.remote(CARRIER, "[]")
            ray.get(worker.update_weights.remote(CARRIER, REF_ARG, weights_ref), timeout=600)
            return time.perf_counter() - t0

        def ray_numpy_round() -> float:
            t0 = time.perf_counter()
            ref = ray.put(arrays)
            ray.get(receiver_np.load_arrays.remote(ref), timeout=600)
            return time.perf_counter() - t0

        def ray_round() -> float:
            t0 = time.perf_counter()
            ref = ray.put(state)
            ray.get(receiver.load_state.remote(ref), timeout=600)
            return time.perf_counter() - t0

        def torch_round() -> float:
            t0 = time.perf_counter()
            buf = io.BytesIO()
            torch.save(state, buf)
            local.load_state_dict(torch.load(io.BytesIO(buf.getvalue()), weights_only=True), strict=True)
            return time.perf_counter() - t0

        def memcpy_round() -> float:
            t0 = time.perf_counter()
            np.copyto(target, source)
            return time.perf_counter() - t0

        sides = {"ravel": ravel_round, "ray_numpy": ray_numpy_round, "ray": ray_round, "torch": torch_round,
                 "memcpy": memcpy_round}
        for run in sides.values():  # warm-up: actors built, imports done, the trainer's weights gathered
            run()
        times: dict[str, list[float]] = {k: [] for k in sides}
        for r in range(a.rounds):
            for k in (list(sides) if r % 2 == 0 else list(reversed(list(sides)))):
                times[k].append(sides[k]())
        digests = {"sent": sent_sha256, "trainer": _held_sha256(trainer), "worker_before": worker_before,
                   "worker": _held_sha256(worker),
                   "ray_numpy": str(ray.get(receiver_np.weights_sha256.remote(), timeout=600)),
                   "ray": str(ray.get(receiver.weights_sha256.remote(), timeout=600))}
    finally:
        ray.shutdown()
    check_digests(digests)
    gbps = {k: [nbytes / t / 1e9 for t in v] for k, v in times.items()}

    def ravel_over(side: str) -> dict[str, Any]:
        ratios = [r / p for r, p in zip(gbps["ravel"], gbps[side], strict=True)]
        return {**summary(ratios), "fastest": max(gbps["ravel"]) / max(gbps[side])}

    report = {"bytes": nbytes, "rounds": a.rounds, "gb_per_s": gbps, "digests": digests,
              "ravel_over_ray_numpy": ravel_over("ray_numpy"), "ravel_over_memcpy": ravel_over("memcpy"),
              "ravel_over_ray": ravel_over("ray"),
              "torch_over_ray": {"median": statistics.median(
                  [t / p for t, p in zip(gbps["torch"], gbps["ray"], strict=True)])}}
    print(f"refit of {nbytes / 1e6:.1f} MB, {a.rounds} rounds; the worker holds the trainer's weights "
          f"(SHA-256 {digests['worker'][:12]}...)")
    for k, v in gbps.items():
        print(f"  {k:9s} GB/s median {statistics.median(v):.3f}  rounds {', '.join(f'{x:.3f}' for x in v)}")
    for key, name in (("ravel_over_ray_numpy", "plain Ray, NumPy out of band"), ("ravel_over_memcpy", "memcpy"),
                      ("ravel_over_ray", "plain Ray, pickled in band")):
        r = report[key]
        low, high = r["ci95"]
        interval = f"[{low:.3f}, {high:.3f}]" if low is not None else "[n/a]"
        print(f"  Ravel / {name}: mean {r['value']:.3f} (95% CI {interval}), median {r['median']:.3f}, "
              f"fastest rounds {r['fastest']:.3f}; rounds {', '.join(f'{x:.3f}' for x in r['per_round'])}")
    if a.json:
        with open(a.json, "w", encoding="utf-8") as f:
            json.dump(report, f, indent=2)
    return report


def check_digests(d: dict[str, str]) -> None:
    """Raises ``RuntimeError`` unless every receiver holds what was sent to it and the worker started elsewhere
    (so that its equality with the trainer's weights is the refit's doing)."""
    wrong = [f"{k} holds {d[k][:12]}..., expected {d[want][:12]}... ({want})"
             for k, want in (("worker", "trainer"), ("ray_numpy", "sent"), ("ray", "sent")) if d[k] != d[want]]
    if d["worker_before"] == d["trainer"]:
        wrong.append("the worker held the trainer's weights before any refit: the check would prove nothing")
    if wrong:
        raise RuntimeError("refit benchmark: the receivers do not hold the sent weights: " + "; ".join(wrong))


if __name__ == "__main__":
    main()
