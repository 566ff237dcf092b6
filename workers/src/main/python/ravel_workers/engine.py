"""Generation through a transformers model: a batching engine thread, sampling, ``llm_request`` spans.

:meth:`TransformersEngine.submit` queues requests and blocks until they finish; it is safe to call from
many threads at once (a threaded Ray actor serving ``generate`` and many ``generate_async`` calls). One
engine thread takes whatever is queued, up to ``max_running_requests``, and runs it as a batch: requests
of equal prompt length together (no padding; all task prompts have 4 tokens), a prefill then one decode
step per token through the KV cache. Weight updates are applied by the engine thread between batches, so
every token of a request comes from one weight version (results carry it).

Sampling per request: a CPU ``torch.Generator`` seeded with ``params.seed`` draws one uniform number per
sampled token (none for greedy decoding, ``temperature`` 0, which takes the arg max, lowest id on ties);
the token is found by inverse CDF over ``softmax(logits / T)`` restricted to the top-p nucleus (the
smallest set of most likely tokens, ties by id, whose probabilities sum to at least ``top_p``),
computed in float64 on the device. A request's tokens thus depend only on its seed and the model, not on
what it was batched with. The behaviour log-prob of each token is ``log softmax(logits / T)[token]`` over
the whole vocabulary, T = 0 counting as 1, before top-p. A request stops on EOS (included in its
completion, finish ``stop``) or after ``max_tokens`` tokens (``length``). An invalid request (a token
outside the vocabulary, ...) or a failed forward pass finishes with ``error`` and its message; the other
requests of the batch are unaffected by an invalid one.

Each finished request gets an ``llm_request`` span (kind SERVER, child of the context given to
``submit``, from arrival to finish, vLLM's attribute names) when engine tracing is on and the
:class:`RequestSampler` keeps it, with the children that tile it as the Java engine's do: ``llm_request.queued``
(arrival to the start of its group's prefill, ``scheduled``), ``llm_request.prefill`` (to the first token; its
input tokens, ``rl.engine.recompute`` false, the weight version) and ``llm_request.decode`` (to the finish; its
output tokens, the first included, and the weight version). This engine never preempts and never changes
weights inside a request, so there is no ``llm_request.preempted`` and never more than one prefill and decode.
A request that never runs (invalid, aborted, ``max_tokens`` 0) has only ``queued``.
"""

from __future__ import annotations

import inspect
import logging
import threading
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from opentelemetry import context as otel_context
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, set_span_in_context
from opentelemetry.util.types import AttributeValue

from . import names
from .telemetry import ProcessTelemetry
from .weights import Weights
from .wire import FINISH_REASONS, EngineStats, GenerationRequest, GenerationResult, RequestStats

LOG = logging.getLogger(__name__)

_MASK64 = (1 << 64) - 1


def unit_hash(request_id: str) -> float:
    """The request id mapped to [0, 1): FNV-1a 64 over its UTF-8 bytes, the SplitMix64 finalizer, top 53 bits.

    Bit for bit the Java ``RequestSampler.unitHash``, so every process decides the same id the same way.
    """
    h = 0xCBF29CE484222325
    for b in request_id.encode("utf-8"):
        h ^= b
        h = (h * 0x100000001B3) & _MASK64
    h = ((h ^ (h >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    h = ((h ^ (h >> 27)) * 0x94D049BB133111EB) & _MASK64
    h ^= h >> 31
    return (h >> 11) * 2.0 ** -53


@dataclass(frozen=True)
class RequestSampler:
    """Which finished requests keep their ``llm_request`` span: errored, preempted, slow, else by id hash."""

    tracing: bool
    ratio: float
    slow_nanos: int

    def keep_reason(self, request_id: str, error: bool, preemptions: int, e2e_nanos: int) -> str | None:
        """``error``, ``preempted``, ``slow`` or ``ratio``; None when dropped (always with tracing off)."""
        if not self.tracing:
            return None
        if error:
            return "error"
        if preemptions > 0:
            return "preempted"
        if e2e_nanos >= self.slow_nanos:
            return "slow"
        return "ratio" if unit_hash(request_id) < self.ratio else None


@dataclass
class _Sequence:
    """A request in the engine, and what happened to it."""

    request: GenerationRequest
    parent: otel_context.Context
    arrival: int
    done: threading.Event = field(default_factory=threading.Event)
    scheduled: int = 0
    first_token: int = 0
    last_token: int = 0
    version: int = -1
    completion: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    result: GenerationResult | None = None


@dataclass
class _WeightUpdate:
    """A weights update handed to the engine thread, and its outcome."""

    version: int
    state: dict[str, torch.Tensor]
    done: threading.Event = field(default_factory=threading.Event)
    error: BaseException | None = None


@dataclass
class _Counts:
    """What the engine has finished since it started (``stats``)."""

    finished: dict[str, int] = field(default_factory=lambda: {r: 0 for r in FINISH_REASONS})
    prompt_tokens: int = 0
    generation_tokens: int = 0
    spans_kept: int = 0
    spans_sampled_out: int = 0
    queue_nanos: int = 0
    queue_count: int = 0


def _cache_kwarg(model: torch.nn.Module) -> str:
    """The forward's KV-cache argument: ``cache`` (transformers >= 5.x) or ``past_key_values``."""
    params = inspect.signature(model.forward).parameters
    return "cache" if "cache" in params else "past_key_values"


def _output_cache(out: Any) -> Any:
    cache = getattr(out, "cache", None)
    return cache if cache is not None else out.past_key_values


def sample_tokens(logits: torch.Tensor, temperatures: torch.Tensor, top_ps: torch.Tensor,
                  uniforms: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Tokens for ``[B, V]`` logits and their behaviour log-probs (see the module docstring).

    ``uniforms`` holds one number in [0, 1) per row (ignored for greedy rows, ``temperature`` 0).
    """
    x = logits.double()
    greedy = temperatures == 0
    t = torch.where(greedy, torch.ones_like(temperatures), temperatures).double().unsqueeze(1)
    logp_all = torch.log_softmax(x / t, dim=-1)
    probs = torch.softmax(x / t, dim=-1)
    sorted_p, order = torch.sort(probs, dim=-1, descending=True, stable=True)
    before = torch.cumsum(sorted_p, dim=-1) - sorted_p
    keep = before < top_ps.double().unsqueeze(1)
    keep[:, 0] = True
    kept = sorted_p * keep
    cum = torch.cumsum(kept, dim=-1)
    u = uniforms.double().to(x.device).unsqueeze(1) * cum[:, -1:]
    idx = torch.searchsorted(cum, u, right=True)
    idx = torch.minimum(idx, keep.sum(dim=-1, keepdim=True) - 1)
    sampled = torch.gather(order, 1, idx).squeeze(1)
    tokens = torch.where(greedy, torch.argmax(x, dim=-1), sampled)
    return tokens, torch.gather(logp_all, 1, tokens.unsqueeze(1)).squeeze(1)


class TransformersEngine:
    """A batching generation engine over a transformers causal LM (module docstring)."""

    def __init__(self, model: torch.nn.Module, *, vocab_size: int, eos_token: int, max_positions: int,
                 max_running_requests: int = 64, device: torch.device | str = "cpu", model_name: str = "ravel-policy",
                 telemetry: ProcessTelemetry | None = None, weight_version: int = 0) -> None:
        self.model = model
        self.vocab_size = vocab_size
        self.eos_token = eos_token
        self.max_positions = max_positions
        self.max_running_requests = max_running_requests
        self.device = torch.device(device)
        self.model_name = model_name
        self.telemetry = telemetry or ProcessTelemetry.disabled("generation_worker")
        settings = self.telemetry.settings
        self.sampler = RequestSampler(self.telemetry.engine_tracing, settings.engine_sample_ratio,
                                      settings.engine_slow_request_ms * 1_000_000)
        self._cache_kwarg = _cache_kwarg(model)
        self._version = weight_version
        self._cond = threading.Condition(threading.RLock())  # re-entrant: _finish runs under it too
        self._waiting: deque[_Sequence] = deque()
        self._running: list[_Sequence] = []
        self._active: list[_Sequence] = []  # the group of the batch the model steps with now (load integrals)
        self._update: _WeightUpdate | None = None
        self._update_lock = threading.Lock()
        self._closed = False
        self._counts = _Counts()
        # the load integrated over time (under _cond): since, last accrual, running, waiting and KV token seconds
        self._load_since = self._load_at = time.monotonic_ns()
        self._load = [0.0, 0.0, 0.0]
        self._thread = threading.Thread(target=self._loop, name="ravel-engine", daemon=True)
        self._thread.start()

    # ------------------------------------------------------------------------------------------ API

    @property
    def weight_version(self) -> int:
        return self._version

    def submit(self, requests: Sequence[GenerationRequest],
               parent_context: otel_context.Context | None = None) -> list[GenerationResult]:
        """Generates ``requests`` (batched with whatever else is queued); results in request order."""
        parent = otel_context.get_current() if parent_context is None else parent_context
        now = time.time_ns()
        seqs = [_Sequence(request=r, parent=parent, arrival=now) for r in requests]
        with self._cond:
            if self._closed:
                for s in seqs:
                    self._finish(s, "abort", "the engine is closed")
            else:
                self._accrue()
                self._waiting.extend(seqs)
                self._cond.notify_all()
        results: list[GenerationResult] = []
        for s in seqs:
            while not s.done.wait(1.0):
                if not self._thread.is_alive():  # never wait on a dead engine
                    self._finish(s, "abort", "the engine thread is not running")
            assert s.result is not None  # _finish sets it before ``done``
            results.append(s.result)
        return results

    def update_weights(self, weights: Weights) -> int:
        """Loads the trainer's weights between batches (waits for the running batch); returns their version.

        ``load_state_dict`` copies each tensor from its view into ``weights``' buffer: the load's only copy."""
        if not isinstance(weights, Weights):
            raise TypeError(f"update_weights: expected Weights, got {type(weights).__name__}")
        version, state = weights.version, weights.state_dict()
        with self._update_lock:
            update = _WeightUpdate(version=version, state=state)
            with self._cond:
                if self._closed:
                    raise RuntimeError("the engine is closed")
                self._update = update
                self._cond.notify_all()
            while not update.done.wait(1.0):
                if not self._thread.is_alive():
                    raise RuntimeError("the engine thread is not running")
            if update.error is not None:
                raise update.error
            return self.weight_version  # what the engine serves now, not what was asked for

    def stats(self) -> EngineStats:
        with self._cond:
            self._accrue()
            c = self._counts
            return EngineStats(finished=dict(c.finished), preemptions=0, running=len(self._running),
                               waiting=len(self._waiting),
                               kv_tokens_used=sum(len(s.request.prompt_tokens) + len(s.completion)
                                                  for s in self._running),
                               kv_token_budget=self.max_running_requests * self.max_positions,
                               prompt_tokens=c.prompt_tokens, generation_tokens=c.generation_tokens,
                               spans_kept=c.spans_kept, spans_sampled_out=c.spans_sampled_out,
                               queue_nanos=c.queue_nanos, queue_count=c.queue_count,
                               load_seconds=(self._load_at - self._load_since) / 1e9, running_seconds=self._load[0],
                               waiting_seconds=self._load[1], kv_token_seconds=self._load[2])

    def _accrue(self) -> None:
        """Adds the running and waiting counts and the KV tokens held, times the seconds since the last change
        (under ``_cond``, before each change)."""
        now = time.monotonic_ns()
        dt = (now - self._load_at) / 1e9
        if dt > 0:
            active = [s for s in self._active if s.result is None]
            # the batch's later groups wait for the one stepping, as the queue does
            self._load[0] += len(active) * dt
            self._load[1] += (len(self._waiting) + max(0, len(self._running) - len(active))) * dt
            self._load[2] += sum(len(s.request.prompt_tokens) + len(s.completion) for s in active) * dt
            self._load_at = now

    def close(self) -> None:
        """Stops the engine thread after its batch; queued requests finish with ``abort``."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self._thread.join(timeout=60)

    # ------------------------------------------------------------------------------------------ loop

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._waiting and self._update is None and not self._closed:
                    self._cond.wait()
                if self._closed:
                    for s in list(self._waiting):
                        self._finish(s, "abort", "the engine was closed")
                    self._waiting.clear()
                    if self._update is not None:
                        self._update.error = RuntimeError("the engine was closed")
                        self._update.done.set()
                    return
                update, self._update = self._update, None
                batch: list[_Sequence] = []
                if update is None:
                    self._accrue()
                    while self._waiting and len(batch) < self.max_running_requests:
                        batch.append(self._waiting.popleft())
                    self._running = list(batch)  # a request leaves it when it finishes
            if update is not None:
                self._apply(update)
                continue
            try:
                self._run(batch)
            except BaseException as e:  # noqa: BLE001 - never lose a request
                LOG.exception("engine batch failed")
                for s in batch:
                    self._finish(s, "error", f"{type(e).__name__}: {e}")
            finally:
                with self._cond:
                    self._accrue()
                    self._running = []
                    self._active = []

    def _apply(self, update: _WeightUpdate) -> None:
        try:
            with torch.no_grad():
                self.model.load_state_dict(update.state, strict=True)
            self._version = int(update.version)
        except BaseException as e:  # noqa: BLE001 - handed to the caller
            update.error = e
        finally:
            update.done.set()

    def _invalid(self, r: GenerationRequest) -> str | None:
        p = r.params
        if not r.prompt_tokens:
            return "prompt_tokens must not be empty"
        for i, t in enumerate(r.prompt_tokens):
            if not 0 <= t < self.vocab_size:
                return f"prompt_tokens[{i}] = {t} is outside the vocabulary [0, {self.vocab_size})"
        if p.max_tokens < 0:
            return f"max_tokens must be >= 0, got {p.max_tokens}"
        if not (p.temperature >= 0) or p.temperature == float("inf"):
            return f"temperature must be finite and >= 0, got {p.temperature}"
        if not 0 < p.top_p <= 1:
            return f"top_p must be in (0, 1], got {p.top_p}"
        if len(r.prompt_tokens) + max(p.max_tokens, 1) - 1 > self.max_positions:
            return (f"prompt ({len(r.prompt_tokens)} tokens) + max_tokens ({p.max_tokens}) exceeds the model's "
                    f"{self.max_positions} positions")
        return None

    def _run(self, batch: list[_Sequence]) -> None:
        groups: dict[int, list[_Sequence]] = {}
        for s in batch:
            problem = self._invalid(s.request)
            if problem is not None:
                self._finish(s, "error", problem)
                continue
            if s.request.params.max_tokens == 0:  # never runs: never scheduled
                self._finish(s, "length", None)
                continue
            groups.setdefault(len(s.request.prompt_tokens), []).append(s)
        for seqs in groups.values():
            try:
                with torch.inference_mode():
                    self._generate(seqs)
            except Exception as e:  # noqa: BLE001 - the group's requests fail, the engine lives on
                LOG.warning("generation failed for %d request(s): %s", len(seqs), e)
                for s in seqs:
                    if s.result is None:
                        self._finish(s, "error", f"{type(e).__name__}: {e}")

    def _generate(self, seqs: list[_Sequence]) -> None:
        dev = self.device
        gens = [torch.Generator().manual_seed(int(s.request.params.seed) & _MASK64) for s in seqs]
        temps = torch.tensor([s.request.params.temperature for s in seqs], dtype=torch.float64, device=dev)
        top_ps = torch.tensor([s.request.params.top_p for s in seqs], dtype=torch.float64, device=dev)
        ids = torch.tensor([s.request.prompt_tokens for s in seqs], dtype=torch.long, device=dev)
        steps = max(s.request.params.max_tokens for s in seqs)
        alive = [True] * len(seqs)
        version = self._version
        now = time.time_ns()  # the group's prefill starts: until now its requests waited (for earlier groups too)
        for s in seqs:
            s.scheduled = now
            s.version = version
        with self._cond:
            self._accrue()
            self._active = list(seqs)
        # each request's uniform draws for all its steps at once: the same numbers as one draw per step (a
        # generator's stream does not depend on how it is read), without a Python call per request per token
        sampled = torch.tensor([s.request.params.temperature != 0 for s in seqs])
        draws = torch.stack([torch.rand(steps, generator=g, dtype=torch.float64) for g in gens])
        draws[~sampled] = 0.0
        out = self.model(input_ids=ids, use_cache=True)
        for step in range(steps):
            logits = out.logits[:, -1, :]
            u = draws[:, step]
            tokens, logps = sample_tokens(logits, temps, top_ps, u)
            token_list, logp_list = tokens.tolist(), logps.tolist()
            with self._cond:  # the KV held grows a token a step: the integrals follow it
                self._accrue()
            now = time.time_ns()
            for i, s in enumerate(seqs):
                if not alive[i]:
                    continue
                s.completion.append(int(token_list[i]))
                s.logprobs.append(float(logp_list[i]))
                s.first_token = s.first_token or now
                s.last_token = now
                s.version = version
                if token_list[i] == self.eos_token and not s.request.params.ignore_eos:
                    alive[i] = False
                    self._finish(s, "stop", None)
                elif len(s.completion) >= s.request.params.max_tokens:
                    alive[i] = False
                    self._finish(s, "length", None)
            if not any(alive) or step == steps - 1:
                break
            feed = torch.tensor([[t if a else self.eos_token] for t, a in zip(token_list, alive, strict=True)],
                                dtype=torch.long, device=dev)
            out = self.model(input_ids=feed, use_cache=True, **{self._cache_kwarg: _output_cache(out)})

    # ------------------------------------------------------------------------------------------ finish

    def _finish(self, s: _Sequence, reason: str, error: str | None) -> None:
        if s.result is not None:
            return
        now = time.time_ns()
        has_token = s.first_token != 0
        stats = RequestStats(arrival_epoch_nanos=s.arrival, scheduled_epoch_nanos=s.scheduled,
                             first_token_epoch_nanos=s.first_token, finish_epoch_nanos=now,
                             prefill_nanos=s.first_token - s.scheduled if has_token else 0,
                             decode_nanos=s.last_token - s.first_token if has_token else 0, preemptions=0,
                             prompt_tokens=len(s.request.prompt_tokens), completion_tokens=len(s.completion))
        version = s.version if s.completion else -1
        traced = False
        keep = self.sampler.keep_reason(s.request.request_id, reason == "error", 0, now - s.arrival)
        if keep is not None:
            try:
                traced = self._emit_span(s, stats, reason, error, keep, version)
            except Exception as e:  # noqa: BLE001 - telemetry never fails a request
                LOG.warning("could not record the llm_request span of %s: %s", s.request.request_id, e)
        with self._cond:
            if s in self._running:  # so that stats never count a finished request as running
                self._accrue()
                self._running.remove(s)
            c = self._counts
            if s.scheduled:
                c.queue_nanos += max(0, s.scheduled - s.arrival)
                c.queue_count += 1
            c.finished[reason] += 1
            c.prompt_tokens += stats.prompt_tokens
            c.generation_tokens += stats.completion_tokens
            if traced:
                c.spans_kept += 1
            elif keep is None and self.sampler.tracing:
                c.spans_sampled_out += 1
        s.result = GenerationResult(request_id=s.request.request_id, prompt_tokens=list(s.request.prompt_tokens),
                                    completion_tokens=list(s.completion), logprobs=list(s.logprobs),
                                    finish_reason=reason, weight_version=version, stats=stats, traced=traced,
                                    error=error if reason == "error" else None)
        s.done.set()

    def _emit_span(self, s: _Sequence, stats: RequestStats, reason: str, error: str | None, keep: str,
                   version: int) -> bool:
        p = s.request.params
        attributes: dict[str, AttributeValue] = {
            names.REQUEST_ID: s.request.request_id,
            names.REQUEST_N: 1,
            names.REQUEST_MAX_TOKENS: int(p.max_tokens),
            names.REQUEST_TEMPERATURE: float(p.temperature),
            names.REQUEST_TOP_P: float(p.top_p),
            names.REQUEST_MODEL: self.model_name,
            names.RESPONSE_MODEL: self.model_name,
            names.OPERATION_NAME: names.OPERATION_TEXT_COMPLETION,
            names.USAGE_PROMPT_TOKENS: stats.prompt_tokens,
            names.USAGE_COMPLETION_TOKENS: stats.completion_tokens,
            names.RESPONSE_FINISH_REASONS: f'["{reason}"]',
            names.LATENCY_TIME_IN_QUEUE: stats.time_in_queue(),
            names.LATENCY_TIME_TO_FIRST_TOKEN: stats.time_to_first_token(),
            names.LATENCY_E2E: stats.e2e(),
            names.LATENCY_TIME_IN_MODEL_PREFILL: stats.prefill(),
            names.LATENCY_TIME_IN_MODEL_DECODE: stats.decode(),
            names.LATENCY_TIME_IN_MODEL_INFERENCE: stats.inference(),
            names.ENGINE_PREEMPTIONS: stats.preemptions,
            names.ENGINE_KEEP_REASON: keep,
            names.WEIGHT_VERSION: version,
        }
        span = self.telemetry.engine_tracer.start_span(names.LLM_REQUEST, context=s.parent, kind=SpanKind.SERVER,
                                                       attributes=attributes, start_time=stats.arrival_epoch_nanos)
        if reason == "error":
            span.set_status(Status(StatusCode.ERROR, error or ""))
        if span.is_recording():
            self._emit_phases(span, s, stats)
        span.end(end_time=stats.finish_epoch_nanos)
        return bool(span.get_span_context().trace_flags.sampled) and span.get_span_context().is_valid

    def _emit_phases(self, parent: Span, s: _Sequence, stats: RequestStats) -> None:
        """The children of ``parent`` that tile it: queued, then prefill and decode when the request ran."""
        phases: list[tuple[str, int, dict[str, AttributeValue]]] = [(names.LLM_REQUEST_QUEUED, s.arrival, {})]
        if s.scheduled:
            phases.append((names.LLM_REQUEST_PREFILL, s.scheduled, {
                names.USAGE_INPUT_TOKENS: len(s.request.prompt_tokens), names.ENGINE_RECOMPUTE: False,
                names.WEIGHT_VERSION: s.version}))
        if s.first_token:
            phases.append((names.LLM_REQUEST_DECODE, s.first_token, {
                names.USAGE_OUTPUT_TOKENS: len(s.completion), names.WEIGHT_VERSION: s.version}))
        context = set_span_in_context(parent)
        tracer = self.telemetry.engine_tracer
        starts = [p[1] for p in phases]
        for i in range(1, len(starts)):  # the wall clock may step back: no phase starts before the previous one
            starts[i] = max(starts[i], starts[i - 1])
        for i, (name, _, attributes) in enumerate(phases):
            start = starts[i]
            end = starts[i + 1] if i + 1 < len(starts) else max(stats.finish_epoch_nanos, start)
            child = tracer.start_span(name, context=context, kind=SpanKind.INTERNAL, attributes=attributes,
                                      start_time=start)
            child.end(end_time=end)
