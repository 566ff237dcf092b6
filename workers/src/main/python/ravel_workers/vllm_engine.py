"""Generation through vLLM's async engine: the :class:`~ravel_workers.engine.TransformersEngine` API over vLLM.

Selected by the worker spec's ``"engine": "vllm"``, for GPU nodes. vLLM is imported only here, when asked
for; without it the worker fails to start with a clear error. **Untested in this repository** (no vLLM and
no GPU where its tests run): kept small, against vLLM's public API (``AsyncLLMEngine``,
``AsyncEngineArgs``, ``SamplingParams``, ``collective_rpc``; vLLM >= 0.10).

- The policy is built exactly as for transformers (:func:`~ravel_workers.policy.build_model`, same config
  and seed), saved with ``save_pretrained`` into a temp folder, and loaded by vLLM with
  ``skip_tokenizer_init`` (prompts are token ids).
- Each request becomes ``engine.generate(TokensPrompt, SamplingParams(seed, temperature, top_p,
  max_tokens, stop_token_ids=[eos], logprobs=0), request_id, trace_headers={"traceparent", "tracestate"})``,
  so vLLM's own ``llm_request`` span is a child of the ``rl.worker.*`` span (when vLLM's tracing is
  configured: ``otlp_traces_endpoint`` here, the rest from ``OTEL_EXPORTER_OTLP_TRACES_*``, which the
  driver's environment policy sets for engine tracing). vLLM keeps every request's span; Ravel's
  :class:`~ravel_workers.engine.RequestSampler` does not apply.
- Behaviour log-probs: vLLM's ``processed_logprobs`` mode (after temperature, and after top-p truncation,
  so they equal the contract's "before top-p" values only when ``top_p`` is 1).
- Weight updates go through ``collective_rpc`` to :class:`WeightLoader`, a worker extension that loads the
  trainer's weights (:mod:`ravel_workers.weights`, views into one buffer) with the model's ``load_weights``.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import threading
import time
from collections.abc import Sequence
from typing import Any

from opentelemetry import context as otel_context

from . import policy
from .role import TRACE_CONTEXT
from .telemetry import OtlpConfig, ProcessTelemetry
from .weights import Weights
from .wire import FINISH_REASONS, EngineStats, GenerationRequest, GenerationResult, GenerationWorkerSpec, RequestStats


def _import_vllm() -> Any:
    try:
        import vllm
    except ImportError as e:
        raise RuntimeError("engine 'vllm' was asked for, but vLLM is not importable in this Python "
                           f"environment ({e}); install vllm on the GPU nodes or use engine 'transformers'") from e
    return vllm


class WeightLoader:
    """vLLM worker extension (``worker_extension_cls``): loads the trainer's weights (:mod:`ravel_workers.weights`'
    wire dict) into the running model."""

    def ravel_load_weights(self, wire: dict[str, Any]) -> int:
        weights = Weights.from_wire(wire)
        version, state = weights.version, weights.state_dict()
        # model_runner is the vLLM worker's, which this class extends (vLLM mixes it into its worker class)
        self.model_runner.model.load_weights(weights=list(state.items()))  # type: ignore[attr-defined]
        return version


class VllmEngine:
    """``submit``/``update_weights``/``stats``/``close`` over ``vllm.AsyncLLMEngine`` (module docstring)."""

    def __init__(self, spec: GenerationWorkerSpec, telemetry: ProcessTelemetry) -> None:
        from transformers import PreTrainedModel

        vllm = _import_vllm()
        self.spec = spec
        self.telemetry = telemetry
        self._folder = tempfile.TemporaryDirectory(prefix="ravel-vllm-")
        model = policy.build_model(spec.model, spec.seed, "cpu", spec.eos_token)
        assert isinstance(model, PreTrainedModel)  # build_model makes a transformers model
        model.save_pretrained(self._folder.name)
        kwargs: dict[str, Any] = dict(model=self._folder.name, skip_tokenizer_init=True, seed=spec.seed,
                                      max_num_seqs=spec.max_running_requests, max_model_len=spec.model.max_positions,
                                      worker_extension_cls=f"{__name__}.WeightLoader",
                                      logprobs_mode="processed_logprobs", enforce_eager=True)
        if telemetry.engine_tracing and telemetry.settings.exporter in ("otlp", "both"):
            kwargs["otlp_traces_endpoint"] = OtlpConfig.from_env(os.environ).endpoint
        kwargs = {k: v for k, v in kwargs.items() if v is not None}
        self._vllm = vllm
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="ravel-vllm-loop", daemon=True)
        self._thread.start()
        self._engine = self._run(self._start(vllm.AsyncEngineArgs(**kwargs)))
        self._version = 0
        self._lock = threading.Lock()
        self._finished = {r: 0 for r in FINISH_REASONS}
        self._tokens = [0, 0]
        self._running = 0

    async def _start(self, args: Any) -> Any:
        return self._vllm.AsyncLLMEngine.from_engine_args(args)

    def _run(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()

    @property
    def weight_version(self) -> int:
        return self._version

    def submit(self, requests: Sequence[GenerationRequest],
               parent_context: otel_context.Context | None = None) -> list[GenerationResult]:
        """Generates ``requests`` concurrently in vLLM; results in request order."""
        headers: dict[str, str] = {}
        TRACE_CONTEXT.inject(headers, context=parent_context)
        futures = [asyncio.run_coroutine_threadsafe(self._one(r, headers), self._loop) for r in requests]
        return [f.result() for f in futures]

    async def _one(self, r: GenerationRequest, headers: dict[str, str]) -> GenerationResult:
        arrival = time.time_ns()
        p = r.params
        first = last = 0
        final: Any = None  # the last vllm.RequestOutput (vllm's types are not checked: it is not installed here)
        version = self._version
        try:
            params = self._vllm.SamplingParams(n=1, max_tokens=p.max_tokens, temperature=p.temperature,
                                               top_p=p.top_p, seed=p.seed, logprobs=0,
                                               stop_token_ids=[] if p.ignore_eos else [self.spec.eos_token],
                                               ignore_eos=p.ignore_eos, detokenize=False)
            with self._lock:
                self._running += 1
            try:
                async for out in self._engine.generate({"prompt_token_ids": list(r.prompt_tokens)}, params,
                                                       r.request_id, trace_headers=headers or None):
                    now = time.time_ns()
                    if out.outputs and out.outputs[0].token_ids:
                        first = first or now
                        last = now
                    final = out
            finally:
                with self._lock:
                    self._running -= 1
            o = final.outputs[0]
            tokens = list(o.token_ids)
            logprobs = [float(lp[t].logprob) for t, lp in zip(tokens, o.logprobs or [], strict=False)]
            reason = o.finish_reason if o.finish_reason in FINISH_REASONS else "stop"
            error = None
        except Exception as e:  # noqa: BLE001 - one request fails, not the batch
            tokens, logprobs, reason, error = [], [], "error", f"{type(e).__name__}: {e}"
        finish = time.time_ns()
        stats = RequestStats(arrival_epoch_nanos=arrival, scheduled_epoch_nanos=arrival if first else 0,
                             first_token_epoch_nanos=first, finish_epoch_nanos=finish,
                             prefill_nanos=first - arrival if first else 0, decode_nanos=last - first if first else 0,
                             prompt_tokens=len(r.prompt_tokens), completion_tokens=len(tokens))
        with self._lock:
            self._finished[reason] += 1
            self._tokens[0] += len(r.prompt_tokens)
            self._tokens[1] += len(tokens)
        return GenerationResult(request_id=r.request_id, prompt_tokens=list(r.prompt_tokens), completion_tokens=tokens,
                                logprobs=logprobs, finish_reason=reason, weight_version=version if tokens else -1,
                                stats=stats, traced=self.telemetry.engine_tracing and reason != "error", error=error)

    def update_weights(self, weights: Weights) -> int:
        """Loads the trainer's weights into every vLLM worker (their wire dict, as vLLM passes arguments on);
        returns their version."""
        versions = self._run(self._engine.collective_rpc("ravel_load_weights", args=(weights.to_wire(),)))
        self._version = int(versions[0])
        return self._version

    def stats(self) -> EngineStats:
        with self._lock:
            return EngineStats(finished=dict(self._finished), running=self._running,
                               prompt_tokens=self._tokens[0], generation_tokens=self._tokens[1])

    def close(self) -> None:
        try:
            shutdown = getattr(self._engine, "shutdown", None)
            if shutdown is not None:
                shutdown()
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._folder.cleanup()
