package dev.ravel.workers.engine;

import dev.ravel.telemetry.spans.EngineNames;
import dev.ravel.telemetry.spans.SpanNames;
import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanBuilder;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.context.Context;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What the engine records of each request, and its completion. Events (a preemption, a weight update) are
 * kept on the request's {@link Sequence}. When the request finishes, it gets an {@code llm_request} span
 * (kind SERVER, vLLM's attribute names, child of the request's carrier context, from arrival to finish,
 * with those events, and one child per phase of its {@link RequestPhases}: queued, prefill, decode,
 * preempted, ..., tiling it) if tracing is on and the {@link RequestSampler} keeps it: errored, preempted and slow
 * requests always, the others by a hash of the request id. Metrics and the engine's counters are recorded
 * for every request, then its future completes with its {@link GenerationResult}. Telemetry failures are
 * logged and never fail the request.
 *
 * <p>Thread-safe: requests are finished by the scheduler thread, and by submitting threads when the engine
 * is closed.
 */
final class RequestTelemetry {
  // the engine's logger, whichever part of it logs
  private static final Logger LOG = LoggerFactory.getLogger(EmbeddedEngine.class);

  private final String modelName;
  private final Tracer tracer;
  private final RequestSampler sampler;
  private final EngineMetrics metrics;
  private final LongSupplier clock;

  private final AtomicLongArray finished = new AtomicLongArray(FinishReason.values().length);
  private final AtomicLong preemptions = new AtomicLong();
  /** {summed arrival-to-scheduling nanoseconds, count} of the finished requests that were scheduled. */
  private final long[] queue = new long[2];
  private final AtomicLong promptTokens = new AtomicLong();
  private final AtomicLong generationTokens = new AtomicLong();
  private final AtomicLong spansKept = new AtomicLong();
  private final AtomicLong spansSampledOut = new AtomicLong();

  /** Telemetry per {@code config} (model name, tracing, sampling); {@code clock} gives epoch nanoseconds. */
  RequestTelemetry(EngineConfig config, Tracer tracer, EngineMetrics metrics, LongSupplier clock) {
    this.modelName = config.modelName();
    this.tracer = tracer;
    this.sampler = new RequestSampler(config.tracing(), config.sampleRatio(), config.slowRequest().toNanos(),
        config.parentBased());
    this.metrics = metrics;
    this.clock = clock;
  }

  /** Records that {@code s} was preempted at {@code epochNanos}: an event with its completion tokens so far, counts. */
  void preempted(Sequence s, long epochNanos) {
    s.addEvent(EngineNames.EVENT_PREEMPTED, epochNanos,
        Attributes.of(EngineNames.USAGE_COMPLETION_TOKENS, (long) s.generated()));
    preemptions.incrementAndGet();
    try {
      metrics.recordPreemption();
    } catch (RuntimeException e) {
      // telemetry must never break generation
    }
  }

  /** Records that {@code s} moved to weight version {@code version} at {@code epochNanos}: an event. */
  void weightUpdated(Sequence s, long epochNanos, long version) {
    s.addEvent(EngineNames.EVENT_WEIGHT_UPDATE, epochNanos, Attributes.of(EngineNames.WEIGHT_VERSION, version));
  }

  /**
   * Finishes {@code s} now, once (later calls do nothing): its span, metrics and counts, then its future
   * (exceptionally only if building its result itself fails).
   *
   * @param error the reason, kept on the result only when {@code reason} is {@link FinishReason#ERROR}
   */
  void finish(Sequence s, FinishReason reason, String error) {
    if (s.finished) {
      return;
    }
    s.finished = true;
    try {
      complete(s, reason, error);
    } catch (RuntimeException e) {
      LOG.error("could not build the result of {}", s.request.requestId(), e);
      s.future.completeExceptionally(e);
    }
  }

  /** Finished requests by {@link FinishReason#ordinal()}. */
  long[] finishedCounts() {
    long[] f = new long[finished.length()];
    for (int i = 0; i < f.length; i++) {
      f[i] = finished.get(i);
    }
    return f;
  }

  long preemptions() {
    return preemptions.get();
  }

  /** {@return {summed arrival-to-scheduling nanoseconds, count} of the finished requests that were scheduled} */
  long[] queue() {
    synchronized (queue) {
      return queue.clone();
    }
  }

  long promptTokens() {
    return promptTokens.get();
  }

  long generationTokens() {
    return generationTokens.get();
  }

  /** Spans the sampler kept and the SDK recorded as sampled. */
  long spansKept() {
    return spansKept.get();
  }

  /** Requests whose span the sampler dropped while tracing was on. */
  long spansSampledOut() {
    return spansSampledOut.get();
  }

  private void complete(Sequence s, FinishReason reason, String error) {
    long now = clock.getAsLong();
    int completion = s.generated();
    boolean hasToken = s.firstToken != 0;
    RequestStats stats = RequestStats.builder()
        .arrivalEpochNanos(s.arrival)
        .scheduledEpochNanos(s.scheduled)
        .firstTokenEpochNanos(s.firstToken)
        .finishEpochNanos(now)
        .prefillNanos(hasToken ? s.firstToken - s.scheduled : 0)
        .decodeNanos(hasToken ? s.lastToken - s.firstToken : 0)
        .preemptions(s.preemptions)
        .promptTokens(s.promptLength)
        .completionTokens(completion)
        .build();
    boolean traced = false;
    String keep = sampler.keepReason(s.request.requestId(), reason == FinishReason.ERROR, s.preemptions,
        now - s.arrival, parentSampled(s.request));
    if (keep != null) {
      try {
        traced = emitSpan(s, stats, reason, error, keep);
      } catch (RuntimeException e) {
        LOG.warn("could not record the llm_request span of {}", s.request.requestId(), e);
      }
    } else if (sampler.tracing()) {
      spansSampledOut.incrementAndGet();
    }
    if (traced) {
      spansKept.incrementAndGet();
    }
    try {
      metrics.recordFinished(stats, reason, s.lastToken);
    } catch (RuntimeException e) {
      LOG.warn("could not record the metrics of {}", s.request.requestId(), e);
    }
    finished.incrementAndGet(reason.ordinal());
    if (s.scheduled != 0) {
      synchronized (queue) {
        queue[0] += Math.max(0, s.scheduled - s.arrival);
        queue[1]++;
      }
    }
    promptTokens.addAndGet(s.promptLength);
    generationTokens.addAndGet(completion);
    s.future.complete(GenerationResult.builder()
        .requestId(s.request.requestId())
        .promptTokens(s.request.promptRef())
        .completionTokens(s.completion())
        .logprobs(s.completionLogprobs())
        .finishReason(reason)
        .weightVersion(s.lastTokenVersion)
        .versionSpans(s.versionSpans())
        .stats(stats)
        .traced(traced)
        .error(reason == FinishReason.ERROR ? error : null)
        .build());
  }

  /** Records the request's {@code llm_request} span; whether the SDK kept it. */
  /** The caller's sampled flag: its {@code traceparent}'s, or true without one (a root is sampled, as vLLM's). */
  private static boolean parentSampled(GenerationRequest r) {
    io.opentelemetry.api.trace.SpanContext parent = Span.fromContext(r.carrier().extract()).getSpanContext();
    return !parent.isValid() || parent.isSampled();
  }

  private boolean emitSpan(Sequence s, RequestStats stats, FinishReason reason, String error, String keep) {
    SamplingParams p = s.request.params();
    Attributes attributes = Attributes.builder()
        .put(EngineNames.REQUEST_ID, s.request.requestId())
        .put(EngineNames.REQUEST_N, 1L)
        .put(EngineNames.REQUEST_MAX_TOKENS, (long) p.maxTokens())
        .put(EngineNames.REQUEST_TEMPERATURE, p.temperature())
        .put(EngineNames.REQUEST_TOP_P, p.topP())
        .put(EngineNames.REQUEST_MODEL, modelName)
        .put(EngineNames.RESPONSE_MODEL, modelName)
        .put(EngineNames.OPERATION_NAME, EngineNames.OPERATION_TEXT_COMPLETION)
        .put(EngineNames.USAGE_PROMPT_TOKENS, (long) stats.promptTokens())
        .put(EngineNames.USAGE_COMPLETION_TOKENS, (long) stats.completionTokens())
        .put(EngineNames.RESPONSE_FINISH_REASONS, "[\"" + reason.wireName() + "\"]")
        .put(EngineNames.LATENCY_TIME_IN_QUEUE, stats.timeInQueue())
        .put(EngineNames.LATENCY_TIME_TO_FIRST_TOKEN, stats.timeToFirstToken())
        .put(EngineNames.LATENCY_E2E, stats.e2e())
        .put(EngineNames.LATENCY_TIME_IN_MODEL_PREFILL, stats.prefill())
        .put(EngineNames.LATENCY_TIME_IN_MODEL_DECODE, stats.decode())
        .put(EngineNames.LATENCY_TIME_IN_MODEL_INFERENCE, stats.inference())
        .put(EngineNames.ENGINE_PREEMPTIONS, (long) s.preemptions)
        .put(EngineNames.ENGINE_KEEP_REASON, keep)
        .put(EngineNames.WEIGHT_VERSION, s.lastTokenVersion)
        .build();
    Span span = tracer.spanBuilder(SpanNames.LLM_REQUEST)
        .setParent(s.request.carrier().extract())
        .setSpanKind(SpanKind.SERVER)
        .setStartTimestamp(stats.arrivalEpochNanos(), TimeUnit.NANOSECONDS)
        .setAllAttributes(attributes)
        .startSpan();
    if (s.events != null) {
      for (Sequence.Event e : s.events) {
        span.addEvent(e.name(), e.attributes(), e.epochNanos(), TimeUnit.NANOSECONDS);
      }
    }
    if (reason == FinishReason.ERROR) {
      span.setStatus(StatusCode.ERROR, error);
    }
    try {
      if (span.isRecording()) {
        emitPhases(s.phases, span, stats.finishEpochNanos());
      }
    } catch (RuntimeException e) { // the request's own span is kept whatever happens to its children
      LOG.warn("could not record the lifecycle spans of {}", s.request.requestId(), e);
    } finally {
      span.end(stats.finishEpochNanos(), TimeUnit.NANOSECONDS);
    }
    return span.getSpanContext().isSampled();
  }

  /**
   * The children of {@code parent}, one per phase, from the phases' recorded instants: they tile the parent
   * (the first starts at its arrival, the last ends at {@code finish}).
   */
  private void emitPhases(RequestPhases phases, Span parent, long finish) {
    Context context = Context.root().with(parent);
    for (int i = 0; i < phases.size(); i++) {
      RequestPhases.Kind kind = phases.kind(i);
      SpanBuilder b = tracer.spanBuilder(kind.spanName())
          .setParent(context)
          .setSpanKind(SpanKind.INTERNAL)
          .setStartTimestamp(phases.start(i), TimeUnit.NANOSECONDS);
      switch (kind) {
        case PREFILL -> b.setAttribute(EngineNames.USAGE_INPUT_TOKENS, phases.tokens(i))
            .setAttribute(EngineNames.ENGINE_RECOMPUTE, phases.recompute(i))
            .setAttribute(EngineNames.WEIGHT_VERSION, phases.version(i));
        case DECODE -> b.setAttribute(EngineNames.USAGE_OUTPUT_TOKENS, phases.tokens(i))
            .setAttribute(EngineNames.WEIGHT_VERSION, phases.version(i));
        case QUEUED, PREEMPTED -> { }
      }
      b.startSpan().end(phases.end(i, finish), TimeUnit.NANOSECONDS);
    }
  }
}
