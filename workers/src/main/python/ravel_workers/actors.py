"""The actors the Java driver creates: ``GenerationWorker`` and ``PolicyTrainer`` (docs/python-workers.md).

``GenerationWorkerImpl`` and ``PolicyTrainerImpl`` are plain classes (usable and tested without Ray);
``GenerationWorker = ray.remote(GenerationWorkerImpl)`` and ``PolicyTrainer = ray.remote(PolicyTrainerImpl)``
are what Java names with ``PyActorClass.of("ravel_workers.actors", "GenerationWorker")``. Every method Java
calls is a :func:`~ravel_workers.role.role_method`: ``(carrier, args, *refs) -> bytes``. Both classes are
thread-safe, so they may run as threaded actors (``max_concurrency > 1``).
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import io
import json
import math
import os
import queue
import shutil
import tempfile
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol

import torch
from opentelemetry import context as otel_context
from opentelemetry import trace

from . import group, hf, names, policy, rewards
from .api import RoleActor
from .engine import TransformersEngine
from .grpo import (
    Measures,
    advantages,
    completion_logprobs,
    completion_logprobs_entropy,
    grpo_loss,
    kl_estimate,
    loss_scales,
    lr_factor,
    pad,
)
from .role import role_method
from .telemetry import ProcessTelemetry, process_telemetry, startup_span
from .weights import Weights, gather_state
from .wire import (
    EngineStats,
    GenerationRequest,
    GenerationResult,
    GenerationWorkerSpec,
    LogProbSummary,
    Problem,
    RewardScores,
    RewardSpec,
    TrainerSpec,
    TrainOutcome,
    Trajectory,
)


class _Engine(Protocol):
    """What a generation worker needs of its engine (``TransformersEngine`` and ``VllmEngine`` both are one)."""

    def submit(self, requests: Sequence[GenerationRequest],
               parent_context: otel_context.Context | None = None) -> list[GenerationResult]: ...

    def update_weights(self, weights: Weights) -> int: ...

    def stats(self) -> EngineStats: ...

    def close(self) -> None: ...


@contextlib.contextmanager
def refit_stage(telemetry: ProcessTelemetry, name: str, size: int) -> Iterator[trace.Span]:
    """A refit stage's span (``rl.refit.*`` with ``rl.refit.bytes``) under the current context when the refit
    span group is on; a non-recording span otherwise."""
    if not telemetry.refit_spans:
        yield trace.INVALID_SPAN
        return
    with telemetry.tracer.start_as_current_span(name, attributes={names.REFIT_BYTES: size}) as span:
        yield span


def _spec(spec: str | bytes | dict[str, Any]) -> dict[str, Any]:
    return json.loads(spec) if isinstance(spec, (str, bytes)) else dict(spec)


class GenerationWorkerImpl(RoleActor):
    """A generation worker: the policy behind an inference engine (transformers, or vLLM when asked)."""

    ROLE = "generation_worker"
    SPANS = "worker"

    def __init__(self, spec: str | bytes | dict[str, Any], telemetry: ProcessTelemetry | None = None) -> None:
        self.spec = GenerationWorkerSpec.from_wire(_spec(spec))
        self.telemetry = telemetry or process_telemetry(self.ROLE)
        self.device = policy.resolve_device(self.spec.device)
        # the run's start-up trace: the engine built, under the workers' rl.run.actors (docs/design.md)
        with startup_span(self.telemetry, names.WORKER_START_BACKEND):
            if self.spec.engine == "vllm":
                from .vllm_engine import VllmEngine

                self.engine: _Engine = VllmEngine(self.spec, self.telemetry)
            else:
                model = policy.build_model(self.spec.model, self.spec.seed, self.device, self.spec.eos_token)
                self.engine = TransformersEngine(model, vocab_size=self.spec.model.vocab_size,
                                                 eos_token=self.spec.eos_token,
                                                 max_positions=self.spec.model.max_positions,
                                                 max_running_requests=self.spec.max_running_requests,
                                                 device=self.device, model_name=self.spec.model_name,
                                                 telemetry=self.telemetry, weight_version=0)

    @role_method()
    def generate(self, requests: list[GenerationRequest]) -> list[GenerationResult]:
        """Sync mode: a whole batch, results in request order."""
        return self.engine.submit(requests, otel_context.get_current())

    @role_method()
    def generate_async(self, requests: list[GenerationRequest]) -> list[GenerationResult]:
        """Async mode: a chunk of one target step's groups; several such calls run at once and the engine
        batches all their requests together. Results in request order."""
        return self.engine.submit(requests, otel_context.get_current())

    @role_method()
    def update_weights(self, weights: Weights) -> int:
        """Loads the trainer's weights (the resolved object reference) between batches; returns their version.

        The load is the refit stage ``rl.refit.load`` (its bytes the weights' buffer); the fetch from the object
        store is Ray's resolution of the argument, done before this method (and its span) starts: on the
        trainer's node a mapping of shared memory, not a copy (:mod:`ravel_workers.weights`)."""
        with refit_stage(self.telemetry, names.REFIT_LOAD, weights.nbytes):
            return self.engine.update_weights(weights)

    @role_method(traced=False)
    def engine_stats(self) -> EngineStats:
        return self.engine.stats()

    def close(self) -> None:
        """Stops the engine (queued requests finish with ``abort``)."""
        self.engine.close()


class PolicyTrainerImpl(RoleActor):
    """The GRPO policy trainer: policy, AdamW state and the frozen reference (its initial weights).

    ``logprobs`` caches the batch's reference log-probs; the ``train`` call that follows on the same batch
    (same request ids, same policy version) reuses them, so the reference pass runs once per step.

    In a trainer group (:mod:`ravel_workers.group`) every rank takes ``logprobs``, ``train`` and ``checkpoint``: each
    computes the log-probs of its shard of the batch and the ranks sum them into the whole batch's rows (so every
    rank has the whole batch's advantages and reference log-probs); with ``fsdp2`` each holds a shard of the policy,
    the reference and the AdamW state, and the whole weights are gathered onto rank 0 at the end of each update, which
    rank 0 alone then publishes for the refit.
    """

    ROLE = "policy_trainer"
    SPANS = "trainer"

    def __init__(self, spec: str | bytes | dict[str, Any], telemetry: ProcessTelemetry | None = None) -> None:
        self.spec = TrainerSpec.from_wire(_spec(spec))
        self.grpo = self.spec.grpo
        self.telemetry = telemetry or process_telemetry(self.ROLE)
        self.device = policy.resolve_device(self.spec.device)
        self.version = 0
        self.optimizer_steps = 0  # the learning-rate schedule's position
        self._lock = threading.RLock()
        self._cache: tuple[list[str], int, torch.Tensor] | None = None
        self._published: Weights | None = None
        self._published_file: dict[str, Any] | None = None
        # fsdp2: the whole weights of a version, gathered onto rank 0 (empty elsewhere) after each update
        self._whole: tuple[int, dict[str, torch.Tensor]] | None = None
        self._trained: torch.nn.Module | None = None  # ddp: the wrapper the passes run through
        self.reference_passes = 0  # how many reference forward passes ran (the cache is meant to save them)
        # the run's start-up trace: policy, reference, optimiser and a resumed run's state, under the trainers'
        # rl.run.actors (docs/design.md)
        with startup_span(self.telemetry, names.TRAINER_LOAD_MODEL):
            self.model = policy.build_model(self.spec.model, self.spec.seed, self.device)
            self.reference = policy.build_model(self.spec.model, self.spec.seed, self.device)
            self.reference.requires_grad_(False)
            self.optimizer = self._new_optimizer()
            if self.spec.resume_from:
                self._restore(Path(self.spec.resume_from))
            # a checkpoint of your model is written as one too (save_pretrained), with its tokenizer
            self.tokenizer = hf.load_tokenizer(self.spec.model.path) if self.spec.model.path else None

    def _new_optimizer(self) -> torch.optim.Optimizer:
        params = [p for p in self.model.parameters() if p.requires_grad]
        return torch.optim.AdamW(params, lr=self.grpo.learning_rate, betas=(0.9, 0.99), eps=1e-8,
                                 weight_decay=self.grpo.weight_decay)

    def _parameters(self) -> list[torch.Tensor]:
        """The parameters the optimizer steps (an fsdp2 group's: this rank's shards)."""
        return [p for pg in self.optimizer.param_groups for p in pg["params"]]

    @property
    def _grouped(self) -> bool:
        return self.spec.world_size > 1

    @property
    def _sharded(self) -> bool:
        return self._grouped and self.spec.strategy == group.FSDP2

    # ------------------------------------------------------------------------------------------ maths

    def _check(self, batch: list[Trajectory]) -> None:
        g = self.grpo.group_size
        if not batch or len(batch) % g != 0:
            raise ValueError(f"batch: size {len(batch)} is not a positive multiple of group_size {g}")
        for i, tr in enumerate(batch):
            first = batch[i - i % g]
            if tr.prompt != first.prompt:
                raise ValueError(f"batch: trajectory {i} does not share the prompt of trajectory {i - i % g}; "
                                 f"each run of group_size={g} must be one prompt's group")
            for j, t in enumerate(tr.prompt + tr.completion):
                if not 0 <= t < self.spec.model.vocab_size:
                    raise ValueError(f"batch: trajectory {i} token {j} = {t} is outside the vocabulary")

    def _logprobs(self, model: torch.nn.Module, batch: list[Trajectory]) -> tuple[torch.Tensor, torch.Tensor]:
        """The batch's completion log-probs and mask under ``model``; in a group, each rank computes its shard's and
        the ranks sum them into the whole batch's rows."""
        if not self._grouped:
            return completion_logprobs(model, [t.prompt for t in batch], [t.completion for t in batch],
                                       self.grpo.temperature, self.device)
        n = len(batch)
        mine = group.shard(n, self.spec.rank, self.spec.world_size)
        part = batch[mine.start:mine.stop] or batch[:1]  # a rank without sequences still takes part in the pass
        lp, mask = completion_logprobs(model, [t.prompt for t in part], [t.completion for t in part],
                                       self.grpo.temperature, self.device)
        width = max(1, max(len(t.completion) for t in batch))
        return (group.whole_batch_rows(lp.detach(), mine, n, width),
                group.whole_batch_rows(mask, mine, n, width))

    def _reference(self, batch: list[Trajectory]) -> torch.Tensor:
        with torch.no_grad():
            self.reference_passes += 1
            return self._logprobs(self.reference, batch)[0].detach()

    # ------------------------------------------------------------------------------------------ role

    @role_method()
    def logprobs(self, batch: list[Trajectory]) -> LogProbSummary:
        """Per-token log-probs of the batch under the policy and the reference, summarised."""
        with self._lock:
            if not batch:
                return LogProbSummary(0.0, 0.0, 0.0, 0)
            with torch.no_grad():
                pol, mask = self._logprobs(self.model, batch)
            ref = self._reference(batch)
            self._cache = ([t.request_id for t in batch], self.version, ref)
            tokens = int(mask.sum().item())
            n = max(tokens, 1)
            d = kl_estimate(pol, ref, self.grpo.kl_estimator) * mask
            per_seq = d.sum(dim=1) / mask.sum(dim=1).clamp(min=1)
            return LogProbSummary(policy=float(pol.sum().item() / n), reference=float(ref.sum().item() / n),
                                  kl=float(per_seq.mean().item()), tokens=tokens)

    @role_method()
    def train(self, batch: list[Trajectory]) -> TrainOutcome:
        """One GRPO update on the batch; returns the new version (+1) and what the update measured."""
        with self._lock:
            self._check(batch)
            ids = [t.request_id for t in batch]
            cached, self._cache = self._cache, None
            if cached is not None and cached[0] == ids and cached[1] == self.version:
                ref = cached[2]
            elif self.grpo.kl_beta == 0:
                ref = None  # no KL term, so no reference pass (the driver skips the log-probs phase too)
            else:
                ref = self._reference(batch)
            return self._update(batch, ref)

    def _update(self, batch: list[Trajectory], ref: torch.Tensor | None) -> TrainOutcome:
        """The step's passes (``ppo_epochs``) over its micro-batches (``micro_batch_size``), one optimizer step per
        pass, as the Java ``GrpoTrainer``: advantages, normalisers and (with TIS) the step's starting log-probs are
        computed once for the whole batch."""
        g = self.grpo
        n = len(batch)
        behaviour_rows = [list(t.logprobs) for t in batch]
        ref_rows = None if ref is None else [ref[i, :len(t.completion)].tolist() for i, t in enumerate(batch)]
        adv = advantages([t.reward for t in batch], g.group_size, behaviour_rows, ref_rows, g)
        scales = torch.tensor(loss_scales([len(t.completion) for t in batch], adv.kept, g, g.micro_batch_size),
                              dtype=torch.float32, device=self.device)
        adv_t = torch.tensor(adv.advantages, dtype=torch.float32, device=self.device)
        behaviour, _ = pad(behaviour_rows, dtype=torch.float32, device=self.device)
        old = None
        if g.tis:
            with torch.no_grad():
                old = self._logprobs(self.model, batch)[0].detach()
        update = adv.kept_count > 0
        mb = g.micro_batch_size if g.micro_batch_size > 0 else n
        # the optimizer's: an fsdp2 model lists its root's unsharded parameters between a forward pass and the next
        # backward pass, not the shards that hold the gradients
        params = self._parameters()
        first_lr = self._learning_rate()
        measures = Measures()
        loss_total = 0.0
        norm_total = 0.0
        grouped = self._grouped
        world = self.spec.world_size
        # a trainer alone: the whole batch; in a group, this rank's shard, as many micro-batches as every rank
        parts = group.micro_batches(n, self.spec.rank, world, mb)
        # ddp's wrapper only when a backward pass follows: it expects one after each forward pass it syncs
        trained = self._trained if self._trained is not None and update else self.model
        self.model.train()
        try:
            for _ in range(g.ppo_epochs):
                self.optimizer.zero_grad(set_to_none=True)
                for i, rows in enumerate(parts):
                    last = i == len(parts) - 1
                    a, e = (rows.start, rows.stop) if rows is not None else (0, 1)  # a stand-in: weight 0
                    part = batch[a:e]
                    with self._gradient_sync(last):
                        pol, mask, ent = completion_logprobs_entropy(
                            trained, [t.prompt for t in part], [t.completion for t in part], g.temperature,
                            self.device)
                        w = pol.shape[1]
                        result = grpo_loss(pol, behaviour[a:e, :w], None if old is None else old[a:e, :w],
                                           None if ref is None else ref[a:e, :w], mask, adv_t[a:e], scales[a:e], g)
                        if update:
                            # the group's gradient is the sum of the ranks'; a stand-in pass adds nothing
                            weight = 0.0 if rows is None else group.loss_weight(self.spec.strategy, world)
                            (result.loss * weight).backward()  # type: ignore[no-untyped-call]  # unannotated
                    if rows is not None:
                        loss_total += float(result.loss.item())
                        measures = measures.plus(result.measures).plus(Measures(entropy_sum=float(ent.sum().item())))
                if not update:
                    break  # no sequence in the update: no optimizer step (the weights are published unchanged)
                with_grad = [p for p in params if p.grad is not None]
                max_norm = g.max_grad_norm if g.max_grad_norm > 0 else float("inf")
                if self._sharded:
                    grad_norm = group.clip_sharded_gradients(with_grad, max_norm)
                else:
                    grad_norm = float(torch.nn.utils.clip_grad_norm_(with_grad, max_norm))
                if not math.isfinite(grad_norm):
                    raise ValueError(f"grad: global norm is not finite: {grad_norm}")
                for param_group in self.optimizer.param_groups:
                    param_group["lr"] = self._learning_rate()
                self.optimizer.step()
                self.optimizer_steps += 1
                norm_total += grad_norm
        finally:
            self.model.eval()
        if grouped:
            measures, loss_total = group.all_reduce_measures(measures, loss_total, self.device)
        epochs = g.ppo_epochs if update else 0
        passes = max(1, epochs)
        self.version += 1
        self._gather_whole()
        span = trace.get_current_span()
        if grouped:
            span.set_attribute(names.TRAINER_STRATEGY, self.spec.strategy)
        span.set_attribute(names.TRAINER_PARAM_BYTES, group.local_bytes(self._parameters()))
        span.set_attribute(names.TRAINER_OPTIMIZER_BYTES, group.local_bytes(group.optimizer_tensors(self.optimizer)))
        return TrainOutcome(
            version=self.version, loss=loss_total / passes, kl=measures.kl, entropy=measures.entropy,
            clip_fraction=measures.clip_fraction, clip_low=measures.clip_low, clip_high=measures.clip_high,
            clip_dual=measures.clip_dual, mean_ratio=measures.mean_ratio, max_ratio=measures.ratio_max,
            tis_truncated=measures.tis_truncated, grad_norm=norm_total / passes, learning_rate=first_lr,
            zero_advantage_groups=adv.zero_advantage_groups, kept_sequences=adv.kept_count, epochs=epochs,
            mean_reward=sum(t.reward for t in batch) / n, tokens=measures.tokens // passes, sequences=n)

    def _gradient_sync(self, last: bool) -> contextlib.AbstractContextManager[Any]:
        """Around a micro-batch's passes: the ranks' gradients are reduced on the last one only (accumulated
        locally before it)."""
        if self._trained is not None and not last:
            no_sync: contextlib.AbstractContextManager[Any] = self._trained.no_sync()  # type: ignore[operator]
            return no_sync
        if self._sharded:
            self.model.set_requires_gradient_sync(last)  # type: ignore[operator]  # FSDPModule's, added in place
        return contextlib.nullcontext()

    def _gather_whole(self, traced: bool = True) -> None:
        """fsdp2: gathers the whole weights of the current version onto rank 0 (every rank takes part), in the span
        ``rl.trainer.gather`` with the bytes this rank holds after it (``traced``: inside a step's call)."""
        if not self._sharded:
            return
        if not traced:  # the group's set-up, in no step's trace
            self._whole = (self.version, group.full_state_dict(self.model))
            return
        with refit_stage(self.telemetry, names.TRAINER_GATHER, 0) as stage:
            whole = group.full_state_dict(self.model)
            stage.set_attribute(names.REFIT_BYTES, group.local_bytes(whole.values()))
        self._whole = (self.version, whole)

    def _state(self) -> dict[str, torch.Tensor]:
        """The current version's whole weights on the CPU (rank 0's; a rank of an fsdp2 group holds them only there)."""
        if not self._sharded:
            return policy.state_dict_cpu(self.model)
        if self._whole is None or self._whole[0] != self.version or not self._whole[1]:
            raise RuntimeError(f"rank {self.spec.rank} of an fsdp2 trainer group holds no whole weights of version"
                               f" {self.version}: rank 0 publishes them")
        return self._whole[1]

    @role_method(traced=False)  # set-up, before any step: in no step's trace
    def rendezvous(self) -> str:
        """Rank 0 of a trainer group: ``host:port`` where the ranks meet (this node's address, a free port)."""
        if self.spec.rank != 0 or self.spec.world_size == 1:
            raise ValueError(f"rendezvous: asked of rank {self.spec.rank} of {self.spec.world_size}; only rank 0 of a"
                             " trainer group answers it")
        return group.rendezvous_address(group.node_ip())

    @role_method(traced=False)
    def join_group(self, address: str) -> int:
        """Joins the trainer group meeting at ``address`` (rank 0's :meth:`rendezvous`); returns once every rank
        has joined and holds rank 0's weights. Returns the group's size."""
        if self.spec.world_size == 1:
            return 1
        with self._lock:
            group.join(address, self.spec.rank, self.spec.world_size, self.device, self.model)
            if self.spec.strategy == group.FSDP2:
                # a resumed run's AdamW state (read only when there is one: torch's reader of a fresh optimizer's state
                # takes a step of its own to make one, and the first real step's bias correction would be off)
                state = (group.optimizer_state(self.model, self.optimizer, sharded=False) if self.optimizer.state
                         else None)
                group.shard_fsdp2(self.model, self.device, self.spec.world_size)
                group.shard_fsdp2(self.reference, self.device, self.spec.world_size)
                self.optimizer = self._new_optimizer()  # over the shards
                if state is not None:
                    group.load_optimizer_state(self.model, self.optimizer, state, sharded=True)
                self._gather_whole(traced=False)
            else:
                from torch.nn.parallel import DistributedDataParallel

                self._trained = DistributedDataParallel(
                    self.model, device_ids=[self.device.index or 0] if self.device.type == "cuda" else None)
            self._published = None
            self._published_file = None
        return self.spec.world_size

    def _learning_rate(self) -> float:
        """The learning rate of the next optimizer step (``lr_scheduler`` over ``total_steps x ppo_epochs`` steps)."""
        g = self.grpo
        return g.learning_rate * lr_factor(self.optimizer_steps, g.warmup_steps * g.ppo_epochs,
                                           g.total_steps * g.ppo_epochs, g.lr_scheduler)

    def published(self) -> Weights:
        """The current version's weights, gathered into one CPU buffer once per version (the refit stage
        ``rl.refit.gather``, its bytes the buffer's)."""
        with self._lock:
            if self._published is None or self._published.version != self.version:
                with refit_stage(self.telemetry, names.REFIT_GATHER, 0) as stage:
                    self._published = gather_state(self._state(), self.version)
                    stage.set_attribute(names.REFIT_BYTES, self._published.nbytes)
            return self._published

    @role_method(traced=False, raw_result=True)
    def weights(self) -> dict[str, Any]:
        """The current weights as :mod:`ravel_workers.weights`' wire dict: Ray stores its buffer out of band (one
        copy into the object store), and the Java driver passes the reference on to the workers unread."""
        return self.published().to_wire()

    @role_method()
    def publish_file(self, directory: str) -> str:
        """The current weights as one safetensors file in Hugging Face names, for inference servers that load
        files (vLLM with Ravel's ``ravel-file`` weight-transfer backend, README "Real vLLM"): written once per
        version as ``<directory>/weights-v<version>.safetensors`` (a temp file, then a rename; the version before
        it stays, a server may still be reading it; older ones are removed). Every tensor is written, tied ones
        too (``lm_head.weight`` beside the embedding it shares), so no server is left with a stale head. The
        stage is ``rl.refit.gather`` with the file's bytes. Returns the JSON of the ``update_info`` servers take:
        ``{"path", "sha256", "bytes"}`` and the ``version``."""
        with self._lock:
            if self._published_file is None or self._published_file["version"] != self.version:
                with refit_stage(self.telemetry, names.REFIT_GATHER, 0) as stage:
                    self._published_file = _write_weights_file(self._state(), self.version, Path(directory))
                    stage.set_attribute(names.REFIT_BYTES, int(self._published_file["bytes"]))
            return json.dumps(self._published_file)

    def _restore(self, file: Path) -> None:
        """Goes on from a checkpoint's trainer state: weights, AdamW state, optimizer steps (the learning-rate
        schedule's position) and version; the reference stays the run's initial policy."""
        if not file.is_file():
            raise FileNotFoundError(f"resume_from: no trainer state at {file}")
        state = torch.load(file, map_location="cpu", weights_only=True)
        missing = [k for k in ("version", "state_dict", "optimizer", "optimizer_steps") if k not in state]
        if missing:
            raise ValueError(f"resume_from: {file} holds no {', '.join(missing)} (not a trainer state)")
        self.model.load_state_dict(state["state_dict"], strict=True)
        optimizer = state["optimizer"]
        if any(isinstance(k, str) for k in optimizer.get("state", {})):  # keyed by parameter name (an fsdp2 group's)
            group.load_optimizer_state(self.model, self.optimizer, optimizer, sharded=False)
        else:
            self.optimizer.load_state_dict(optimizer)
        self.version = int(state["version"])
        self.optimizer_steps = int(state["optimizer_steps"])

    @role_method()
    def checkpoint(self, directory: str) -> str:
        """Writes ``<directory>/weights-v<version>.pt`` atomically (a temp file, then a rename) and returns its path:
        the weights' ``version`` and ``state_dict`` (:func:`policy.read_blob` reads them) with the AdamW state and
        the optimizer steps taken, all a resumed trainer needs to go on bit for bit; beside it
        ``weights-v<version>.pt.sha256``, the weights' digest (:func:`policy.state_sha256`). A policy loaded from
        ``model.path`` is also written as ``<directory>/hf/``, ``save_pretrained`` with its tokenizer, which
        ``AutoModelForCausalLM.from_pretrained`` loads.

        In a group every rank is called: an fsdp2 group gathers the AdamW state onto rank 0 (its whole weights are
        gathered already), and rank 0 writes the whole state, which a group of any size (or a trainer alone) goes on
        from; the other ranks return the same path."""
        folder = Path(directory)
        with self._lock:
            version = self.version
            target = (folder / f"weights-v{version}.pt").absolute()
            # an fsdp2 group's AdamW state, keyed by parameter name, gathered whole onto rank 0 (every rank takes part)
            optimizer = group.optimizer_state(self.model, self.optimizer, sharded=True) if self._sharded else None
            if self.spec.rank != 0:
                return str(target)
            if optimizer is None:
                optimizer = self.optimizer.state_dict()
            weights = self._state()
            state = {"version": version, "state_dict": weights, "optimizer": optimizer,
                     "optimizer_steps": self.optimizer_steps}
            buf = io.BytesIO()
            torch.save(state, buf)
            blob = buf.getvalue()
            digest = policy.state_sha256(weights)
        folder.mkdir(parents=True, exist_ok=True)
        if self.tokenizer is not None:
            with self._lock:
                staging = Path(tempfile.mkdtemp(prefix=".hf.", dir=folder))
                try:
                    hf.save(self.model, self.tokenizer, staging, weights)
                    final = folder / "hf"
                    if final.exists():
                        shutil.rmtree(final)
                    os.replace(staging, final)
                except BaseException:
                    shutil.rmtree(staging, ignore_errors=True)
                    raise
        _write_atomically(target, blob)
        _write_atomically(Path(f"{target}.sha256"), (digest + "\n").encode())
        return str(target)


def _write_weights_file(state: dict[str, torch.Tensor], version: int, folder: Path) -> dict[str, Any]:
    """The weights ``state`` as ``folder/weights-v<version>.safetensors`` (atomically); removes the files of versions
    before ``version - 1``. Returns ``{"path", "sha256", "bytes", "version"}``."""
    from safetensors.torch import save

    folder.mkdir(parents=True, exist_ok=True)
    # every tensor its own CPU copy, tied ones too: safetensors refuses tensors that share memory
    blob = save({name: t.detach().to("cpu", copy=True).contiguous() for name, t in state.items()})
    target = (folder / f"weights-v{version}.safetensors").absolute()
    _write_atomically(target, blob)
    for old in folder.glob("weights-v*.safetensors"):
        v = old.name.removeprefix("weights-v").removesuffix(".safetensors")
        if v.isdigit() and int(v) < version - 1:
            old.unlink(missing_ok=True)
    return {"path": str(target), "sha256": hashlib.sha256(blob).hexdigest(), "bytes": len(blob), "version": version}


class RewardEnvironmentImpl(RoleActor):
    """The reward environment of a run on your data: your reward function (``reward.function``) over the decoded
    completions, with the prompts, the reference answers and each row's metadata.

    A function that returns the wrong count or a non-number fails the call with its name and message (the step
    fails, saying so); one that raises does the same, or with ``on_error: zero`` has the call's completions
    scored 0 and counted (``failed``); a call that takes longer than ``timeout_s`` fails naming the function
    (its thread cannot be stopped, so every later call fails too: the run ends). The call's span
    (``rl.reward.score``) names the function and counts the failed completions.
    """

    ROLE = "reward_environment"
    SPANS = "reward"

    def __init__(self, spec: str | bytes | dict[str, Any], telemetry: ProcessTelemetry | None = None) -> None:
        self.spec = RewardSpec.from_wire(_spec(spec))
        self.telemetry = telemetry or process_telemetry(self.ROLE)
        self.tokenizer = hf.load_tokenizer(self.spec.model_path)
        self.function = rewards.RewardFunction(self.spec.function, self.spec.code_path)
        self.calls = 0
        self._hung: str | None = None

    @role_method()
    def score(self, problems: list[Problem], completions: list[list[int]], step: int) -> RewardScores:
        """The reward of each completion (token ids, decoded without special tokens) for its problem, of training
        step ``step`` (numbered from 1; your function's ``step``)."""
        if len(problems) != len(completions):
            raise ValueError(f"score: {len(problems)} problems for {len(completions)} completions")
        span = trace.get_current_span()
        span.set_attribute(names.REWARD_FUNCTION, self.spec.function)
        texts = [str(t) for t in self.tokenizer.batch_decode(completions, skip_special_tokens=True)]
        self.calls += 1
        try:
            scores = self._call([p.prompt for p in problems], texts, [p.answer for p in problems],
                                [p.metadata for p in problems], step)
        except rewards.RewardRaisedError:
            if self.spec.on_error != "zero":
                raise
            span.set_attribute(names.REWARD_FAILED, len(texts))
            return RewardScores([0.0] * len(texts), texts, {}, len(texts))
        return RewardScores(scores.rewards, texts, scores.components, 0)

    def _call(self, prompts: list[str], texts: list[str], answers: list[str], metadata: list[dict[str, Any]],
              step: int) -> rewards.Scores:
        """The function's scores, in a thread of their own when calls have a time limit."""
        if self.spec.timeout_s <= 0:
            return self.function(prompts, texts, answers, metadata, step)
        if self._hung is not None:
            raise rewards.RewardError(self._hung)
        done: queue.Queue[tuple[rewards.Scores | None, BaseException | None]] = queue.Queue(maxsize=1)
        call = contextvars.copy_context()

        def run() -> None:
            try:
                done.put((call.run(self.function, prompts, texts, answers, metadata, step), None))
            except BaseException as e:  # handed to the caller, raised there
                done.put((None, e))

        # a daemon thread: one that never returns must not hold the process open when the run ends
        threading.Thread(target=run, name=f"reward-{step}", daemon=True).start()
        try:
            scores, error = done.get(timeout=self.spec.timeout_s)
        except queue.Empty:
            self._hung = (f"reward.function {self.function.name}: a call took more than reward.timeout_s ="
                          f" {self.spec.timeout_s:g} s ({len(texts)} completions)")
            raise rewards.RewardError(self._hung) from None
        if error is not None:
            raise error
        assert scores is not None
        return scores


def _write_atomically(target: Path, data: bytes) -> None:
    """Writes ``target`` whole or not at all: a temporary file beside it, synced, then renamed over it."""
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _remote(cls: type) -> Any:
    """``ray.remote(cls)``, or ``cls`` itself where Ray is not installed (so the module imports anyway)."""
    try:
        import ray
    except ImportError:  # pragma: no cover - the Ray virtualenv always has Ray
        return cls
    return ray.remote(cls)


GenerationWorker = _remote(GenerationWorkerImpl)
PolicyTrainer = _remote(PolicyTrainerImpl)
RewardEnvironment = _remote(RewardEnvironmentImpl)
