package dev.ravel.telemetry.spans;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import dev.ravel.telemetry.config.SpanGroup;
import dev.ravel.telemetry.context.SpanLink;
import dev.ravel.telemetry.context.TraceCarrier;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.context.Context;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.EventData;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import java.io.IOException;
import java.util.EnumSet;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

final class SpansTest {
  private final InMemorySpanExporter exporter = InMemorySpanExporter.create();
  private final OpenTelemetrySdk otel = OpenTelemetrySdk.builder()
      .setTracerProvider(SdkTracerProvider.builder().addSpanProcessor(SimpleSpanProcessor.create(exporter)).build())
      .build();
  private final Spans spans = Spans.create(otel, EnumSet.of(SpanGroup.STEP, SpanGroup.GENERATION, SpanGroup.REWARD));

  @AfterEach
  void tearDown() {
    otel.close();
  }

  // ---------------------------------------------------------------- groups on

  @Test
  void startChild_underAValidParentIsItsChild_withoutOneNothingStartsAndTheContextStays() {
    SpanContext parent;
    try (ScopedSpan root = spans.start(SpanGroup.STEP, SpanNames.RUN_STARTUP)) {
      parent = root.spanContext();
    }
    Context remote = TraceCarrier.of("00-" + parent.getTraceId() + "-" + parent.getSpanId() + "-01", "", "").extract();

    try (ScopedSpan s = spans.startChild(SpanGroup.STEP, SpanNames.TRAINER_LOAD_MODEL, remote)) {
      assertThat(s.isRecording()).isTrue();
    }
    try (ScopedSpan none = spans.startChild(SpanGroup.STEP, SpanNames.WORKER_START_BACKEND, null);
        ScopedSpan invalid = spans.startChild(SpanGroup.STEP, SpanNames.WORKER_START_BACKEND, Context.root());
        ScopedSpan off = spans.startChild(SpanGroup.WORKER, SpanNames.WORKER_START_BACKEND, remote)) {
      assertThat(List.of(none, invalid, off)).noneMatch(ScopedSpan::isRecording);
      assertThat(Span.current().getSpanContext().isValid()).isFalse();
    }

    SpanData child = finished(SpanNames.TRAINER_LOAD_MODEL);
    assertThat(child.getParentSpanContext().getSpanId()).isEqualTo(parent.getSpanId());
    assertThat(child.getTraceId()).isEqualTo(parent.getTraceId());
    assertThat(exporter.getFinishedSpanItems()).extracting(SpanData::getName)
        .containsExactlyInAnyOrder(SpanNames.RUN_STARTUP, SpanNames.TRAINER_LOAD_MODEL);
  }

  @Test
  void start_groupOnCreatesASpanThatIsCurrentInsideTheTryAndEndsOnClose() {
    SpanContext inside;
    try (ScopedSpan s = spans.start(SpanGroup.STEP, SpanNames.GRPO_STEP)) {
      inside = Span.current().getSpanContext();
      assertThat(s.isRecording()).isTrue();
      assertThat(s.spanContext().isValid()).isTrue();
      assertThat(inside).isEqualTo(s.spanContext());
      assertThat(exporter.getFinishedSpanItems()).isEmpty();
    }

    assertThat(Span.current().getSpanContext().isValid()).isFalse();
    List<SpanData> done = exporter.getFinishedSpanItems();
    assertThat(done).hasSize(1);
    SpanData step = done.get(0);
    assertThat(step.getName()).isEqualTo("rl.grpo.step");
    assertThat(step.hasEnded()).isTrue();
    assertThat(step.getSpanContext()).isEqualTo(inside);
    assertThat(step.getParentSpanContext().isValid()).isFalse();
    assertThat(step.getKind()).isEqualTo(SpanKind.INTERNAL);
    assertThat(step.getInstrumentationScopeInfo().getName()).isEqualTo(Spans.SCOPE);
  }

  @Test
  void start_nestedStartsFormParentAndChild() {
    try (ScopedSpan step = spans.start(SpanGroup.STEP, SpanNames.GRPO_STEP)) {
      try (ScopedSpan gen = spans.start(SpanGroup.GENERATION, SpanNames.GRPO_GENERATION)) {
        assertThat(Span.current().getSpanContext()).isEqualTo(gen.spanContext());
      }
      assertThat(Span.current().getSpanContext()).isEqualTo(step.spanContext());
    }

    SpanData step = finished(SpanNames.GRPO_STEP);
    SpanData gen = finished(SpanNames.GRPO_GENERATION);
    assertThat(gen.getTraceId()).isEqualTo(step.getTraceId());
    assertThat(gen.getParentSpanId()).isEqualTo(step.getSpanId());
  }

  @Test
  void start_withExplicitParentFromCarrierBecomesItsChild() {
    TraceCarrier carrier;
    SpanContext caller;
    try (ScopedSpan step = spans.start(SpanGroup.STEP, SpanNames.GRPO_STEP)) {
      carrier = step.carrier();
      caller = step.spanContext();
    }

    try (ScopedSpan worker = spans.start(SpanGroup.GENERATION, SpanNames.VLLM_GENERATE, carrier.extract())) {
      assertThat(worker.isRecording()).isTrue();
    }

    SpanData worker = finished(SpanNames.VLLM_GENERATE);
    assertThat(worker.getTraceId()).isEqualTo(caller.getTraceId());
    assertThat(worker.getParentSpanId()).isEqualTo(caller.getSpanId());
  }

  @Test
  void start_withKindSetsTheKind() {
    spans.start(SpanGroup.GENERATION, "client", SpanKind.CLIENT, null).close();

    assertThat(finished("client").getKind()).isEqualTo(SpanKind.CLIENT);
  }

  @Test
  void set_attributesAndEventsAreRecorded() {
    try (ScopedSpan s = spans.start(SpanGroup.STEP, SpanNames.GRPO_STEP)) {
      s.set(RavelAttributes.STEP, 3L).set(RavelAttributes.ALGORITHM_MODE, "sync")
          .set(AttributeKey.doubleKey("k.double"), 0.5).set(AttributeKey.booleanKey("k.bool"), true)
          .set(AttributeKey.longKey("k.long"), 9L).set(AttributeKey.stringKey("k.null"), (String) null).event("checkpoint");
    }

    SpanData d = finished(SpanNames.GRPO_STEP);
    assertThat(d.getAttributes().get(RavelAttributes.STEP)).isEqualTo(3L);
    assertThat(d.getAttributes().get(AttributeKey.stringKey("rl.mode"))).isEqualTo("sync");
    assertThat(d.getAttributes().get(AttributeKey.doubleKey("k.double"))).isEqualTo(0.5);
    assertThat(d.getAttributes().get(AttributeKey.booleanKey("k.bool"))).isTrue();
    assertThat(d.getAttributes().get(AttributeKey.longKey("k.long"))).isEqualTo(9L);
    assertThat(d.getAttributes().get(AttributeKey.stringKey("k.null"))).isNull();
    assertThat(d.getEvents()).extracting(EventData::getName).containsExactly("checkpoint");
  }

  // ---------------------------------------------------------------- groups off

  @Test
  void start_groupOffReturnsANonRecordingSpanAndCreatesNothing() {
    Context before = Context.current();
    try (ScopedSpan s = spans.start(SpanGroup.TRAINING, SpanNames.GRPO_TRAINING)) {
      assertThat(s.isRecording()).isFalse();
      assertThat(s.spanContext().isValid()).isFalse();
      assertThat(Context.current()).isSameAs(before);
      s.set(AttributeKey.stringKey("k"), "v").set(RavelAttributes.STEP, 1L).event("e").error(new IllegalStateException("x"))
          .link(SpanContext.getInvalid());
    }

    assertThat(exporter.getFinishedSpanItems()).isEmpty();
    assertThat(Context.current()).isSameAs(before);
  }

  @Test
  void start_spanInsideAnOffGroupIsParentedToTheOuterRecordingSpan() {
    try (ScopedSpan step = spans.start(SpanGroup.STEP, SpanNames.GRPO_STEP)) {
      try (ScopedSpan off = spans.start(SpanGroup.TRAINING, SpanNames.GRPO_TRAINING)) {
        assertThat(Span.current().getSpanContext()).isEqualTo(step.spanContext());
        try (ScopedSpan reward = spans.start(SpanGroup.REWARD, SpanNames.GRPO_REWARD)) {
          assertThat(reward.isRecording()).isTrue();
        }
        assertThat(off.carrier()).isEqualTo(step.carrier());
      }
    }

    assertThat(exporter.getFinishedSpanItems()).extracting(SpanData::getName)
        .containsExactlyInAnyOrder(SpanNames.GRPO_STEP, SpanNames.GRPO_REWARD);
    assertThat(finished(SpanNames.GRPO_REWARD).getParentSpanId())
        .isEqualTo(finished(SpanNames.GRPO_STEP).getSpanId());
  }

  @Test
  void start_offGroupWithExplicitParentMakesThatParentCurrentUntilClose() {
    TraceCarrier carrier;
    SpanContext remote;
    try (ScopedSpan step = spans.start(SpanGroup.STEP, SpanNames.GRPO_STEP)) {
      carrier = step.carrier();
      remote = step.spanContext();
    }
    exporter.reset();

    try (ScopedSpan off = spans.start(SpanGroup.WORKER, "rl.worker.generate", carrier.extract())) {
      assertThat(off.isRecording()).isFalse();
      assertThat(Span.current().getSpanContext().getSpanId()).isEqualTo(remote.getSpanId());
      spans.start(SpanGroup.GENERATION, SpanNames.VLLM_GENERATE).close();
    }

    assertThat(Span.current().getSpanContext().isValid()).isFalse();
    assertThat(finished(SpanNames.VLLM_GENERATE).getParentSpanId()).isEqualTo(remote.getSpanId());
  }

  @Test
  void noop_createsNothingForAnyGroup() {
    Spans off = Spans.noop();
    for (SpanGroup g : SpanGroup.values()) {
      assertThat(off.isOn(g)).isFalse();
      try (ScopedSpan s = off.start(g, "x")) {
        assertThat(s.isRecording()).isFalse();
      }
    }

    assertThat(exporter.getFinishedSpanItems()).isEmpty();
  }

  @Test
  void isOn_reflectsTheGroupsGiven() {
    assertThat(spans.isOn(SpanGroup.STEP)).isTrue();
    assertThat(spans.isOn(SpanGroup.ENGINE)).isFalse();
    assertThat(Spans.create(otel, EnumSet.noneOf(SpanGroup.class)).isOn(SpanGroup.STEP)).isFalse();
  }

  // ---------------------------------------------------------------- call and run

  @Test
  void call_returnsTheBodysValueInsideACurrentSpan() {
    AtomicReference<SpanContext> inside = new AtomicReference<>();

    int n = spans.call(SpanGroup.REWARD, SpanNames.GRPO_REWARD, s -> {
      inside.set(Span.current().getSpanContext());
      return 42;
    });

    assertThat(n).isEqualTo(42);
    SpanData d = finished(SpanNames.GRPO_REWARD);
    assertThat(d.getSpanContext()).isEqualTo(inside.get());
    assertThat(d.getStatus().getStatusCode()).isEqualTo(StatusCode.UNSET);
    assertThat(d.getEvents()).isEmpty();
  }

  @Test
  void call_recordsARuntimeExceptionAndRethrowsTheSameInstance() {
    IllegalStateException boom = new IllegalStateException("reward model down");

    Throwable thrown = catchThrowable(() -> spans.call(SpanGroup.REWARD, SpanNames.GRPO_REWARD, s -> {
      throw boom;
    }));

    assertThat(thrown).isSameAs(boom);
    assertFailed(finished(SpanNames.GRPO_REWARD), "reward model down", IllegalStateException.class);
  }

  @Test
  void call_recordsACheckedExceptionAndRethrowsTheSameInstance() {
    IOException boom = new IOException("disk full");

    Throwable thrown = catchThrowable(() -> spans.<Integer, IOException>call(SpanGroup.STEP, SpanNames.GRPO_STEP,
        s -> {
          throw boom;
        }));

    assertThat(thrown).isSameAs(boom);
    assertFailed(finished(SpanNames.GRPO_STEP), "disk full", IOException.class);
  }

  @Test
  void call_recordsAnErrorAndRethrowsIt() {
    AssertionError boom = new AssertionError("bad state");

    Throwable thrown = catchThrowable(() -> spans.call(SpanGroup.STEP, SpanNames.GRPO_STEP, s -> {
      throw boom;
    }));

    assertThat(thrown).isSameAs(boom);
    assertFailed(finished(SpanNames.GRPO_STEP), "bad state", AssertionError.class);
  }

  @Test
  void call_groupOffStillRunsTheBodyAndRethrows() {
    String result = spans.call(SpanGroup.TRAINING, SpanNames.GRPO_TRAINING, s -> "ran");

    assertThat(result).isEqualTo("ran");

    IllegalStateException boom = new IllegalStateException("x");
    Throwable thrown = catchThrowable(() -> spans.call(SpanGroup.TRAINING, SpanNames.GRPO_TRAINING, s -> {
      throw boom;
    }));

    assertThat(thrown).isSameAs(boom);
    assertThat(exporter.getFinishedSpanItems()).isEmpty();
  }

  @Test
  void run_runsTheBodyInASpan() {
    AtomicReference<SpanContext> inside = new AtomicReference<>();

    spans.run(SpanGroup.GENERATION, SpanNames.GRPO_GENERATION, s -> {
      inside.set(Span.current().getSpanContext());
      s.set(RavelAttributes.NUM_PROMPTS, 8L);
    });

    SpanData d = finished(SpanNames.GRPO_GENERATION);
    assertThat(d.getSpanContext()).isEqualTo(inside.get());
    assertThat(d.getAttributes().get(RavelAttributes.NUM_PROMPTS)).isEqualTo(8L);
  }

  @Test
  void run_recordsAndRethrowsAnException() {
    IllegalArgumentException boom = new IllegalArgumentException("bad batch");

    Throwable thrown = catchThrowable(() -> spans.run(SpanGroup.GENERATION, SpanNames.GRPO_GENERATION, s -> {
      throw boom;
    }));

    assertThat(thrown).isSameAs(boom);
    assertFailed(finished(SpanNames.GRPO_GENERATION), "bad batch", IllegalArgumentException.class);
  }

  @Test
  void recordError_marksTheCurrentSpanFailed() {
    ScopedSpan s = spans.start(SpanGroup.STEP, SpanNames.GRPO_STEP);
    try {
      Spans.recordError(new IllegalStateException("caught"));
    } finally {
      s.close();
    }

    assertFailed(finished(SpanNames.GRPO_STEP), "caught", IllegalStateException.class);
  }

  @Test
  void error_withDescriptionSetsErrorStatusWithoutEvent() {
    try (ScopedSpan s = spans.start(SpanGroup.STEP, SpanNames.GRPO_STEP)) {
      s.error("timed out");
    }

    SpanData d = finished(SpanNames.GRPO_STEP);
    assertThat(d.getStatus().getStatusCode()).isEqualTo(StatusCode.ERROR);
    assertThat(d.getStatus().getDescription()).isEqualTo("timed out");
    assertThat(d.getEvents()).isEmpty();
  }

  // ---------------------------------------------------------------- links

  @Test
  void link_addsALinkToAnotherSpan() {
    SpanContext rollout;
    try (ScopedSpan gen = spans.start(SpanGroup.GENERATION, SpanNames.GRPO_GENERATION)) {
      rollout = gen.spanContext();
    }

    try (ScopedSpan step = spans.start(SpanGroup.STEP, SpanNames.GRPO_STEP)) {
      step.link(rollout).link(SpanContext.getInvalid()).link((SpanContext) null);
    }

    SpanData step = finished(SpanNames.GRPO_STEP);
    assertThat(step.getLinks()).hasSize(1);
    assertThat(step.getLinks().get(0).getSpanContext()).isEqualTo(rollout);
  }

  @Test
  void link_spanLinkHandedOverBecomesALinkWithTheProducersIdsAndFlags() {
    SpanLink producer;
    try (ScopedSpan gen = spans.start(SpanGroup.GENERATION, SpanNames.VLLM_GENERATE)) {
      producer = gen.asLink();
    }
    SpanContext produced = finished(SpanNames.VLLM_GENERATE).getSpanContext();

    try (ScopedSpan step = spans.start(SpanGroup.STEP, SpanNames.GRPO_STEP)) {
      step.link(producer).link(SpanLink.NONE).link((SpanLink) null);
    }

    SpanData step = finished(SpanNames.GRPO_STEP);
    assertThat(step.getLinks()).hasSize(1);
    SpanContext linked = step.getLinks().get(0).getSpanContext();
    assertThat(linked.getTraceId()).isEqualTo(produced.getTraceId());
    assertThat(linked.getSpanId()).isEqualTo(produced.getSpanId());
    assertThat(linked.getTraceFlags()).isEqualTo(produced.getTraceFlags());
  }

  @Test
  void asLink_groupOffIsNone() {
    try (ScopedSpan off = spans.start(SpanGroup.TRAINING, SpanNames.GRPO_TRAINING)) {
      assertThat(off.asLink()).isEqualTo(SpanLink.NONE);
      assertThat(off.asLink().isValid()).isFalse();
    }
  }

  // ---------------------------------------------------------------- phases

  @Test
  void startPhase_groupOnNamesTheSpanAndWritesItsBucket() {
    try (ScopedSpan s = spans.start(Phase.REWARD)) {
      assertThat(s.isRecording()).isTrue();
    }
    try (ScopedSpan s = spans.start(Phase.GENERATION, Context.root())) {
      assertThat(s.isRecording()).isTrue();
    }

    assertThat(finished(SpanNames.GRPO_REWARD).getAttributes().get(RavelAttributes.BUCKET)).isEqualTo("productive");
    assertThat(finished(SpanNames.GRPO_GENERATION).getAttributes().get(RavelAttributes.BUCKET))
        .isEqualTo("productive");
  }

  @Test
  void startPhase_groupOffCreatesNothing() {
    try (ScopedSpan s = spans.start(Phase.CHECKPOINTING)) {
      assertThat(s.isRecording()).isFalse();
    }

    assertThat(exporter.getFinishedSpanItems()).isEmpty();
  }

  @Test
  void callPhase_exceptionIsRecordedOnThePhaseSpanAndRethrown() {
    Throwable thrown = catchThrowable(() -> spans.call(Phase.REWARD, s -> {
      throw new IllegalStateException("reward service down");
    }));

    assertThat(thrown).isInstanceOf(IllegalStateException.class).hasMessage("reward service down");
    SpanData d = finished(SpanNames.GRPO_REWARD);
    assertThat(d.getStatus().getStatusCode()).isEqualTo(StatusCode.ERROR);
    assertThat(d.getAttributes().get(RavelAttributes.BUCKET)).isEqualTo("productive");
  }

  // ---------------------------------------------------------------- carrier

  @Test
  void carrier_ofARecordingSpanNamesThatSpan() {
    try (ScopedSpan s = spans.start(SpanGroup.STEP, SpanNames.GRPO_STEP)) {
      SpanContext extracted = Span.fromContext(s.carrier().extract()).getSpanContext();

      assertThat(extracted.getTraceId()).isEqualTo(s.spanContext().getTraceId());
      assertThat(extracted.getSpanId()).isEqualTo(s.spanContext().getSpanId());
    }
  }

  @Test
  void carrier_outsideAnySpanIsEmpty() {
    try (ScopedSpan off = spans.start(SpanGroup.TRAINING, SpanNames.GRPO_TRAINING)) {
      assertThat(off.carrier().isEmpty()).isTrue();
    }
  }

  // ---------------------------------------------------------------- SpanNames

  @Test
  void actorCall_turnsCamelCaseMethodIntoSnakeCase() {
    assertThat(SpanNames.actorCall("worker", "updateWeights")).isEqualTo("rl.worker.update_weights");
    assertThat(SpanNames.actorCall("policy", "generate")).isEqualTo("rl.policy.generate");
    assertThat(SpanNames.actorCall("worker", "GetLogProbs")).isEqualTo("rl.worker.get_log_probs");
  }

  // ---------------------------------------------------------------- helpers

  private SpanData finished(String name) {
    List<SpanData> done = exporter.getFinishedSpanItems();
    return done.stream().filter(s -> s.getName().equals(name)).findFirst()
        .orElseThrow(() -> new AssertionError("no finished span " + name + " in " + done));
  }

  private static void assertFailed(SpanData d, String message, Class<? extends Throwable> type) {
    assertThat(d.hasEnded()).isTrue();
    assertThat(d.getStatus().getStatusCode()).isEqualTo(StatusCode.ERROR);
    assertThat(d.getStatus().getDescription()).isEqualTo(message);
    assertThat(d.getEvents()).extracting(EventData::getName).containsExactly("exception");
    EventData event = d.getEvents().get(0);
    assertThat(event.getAttributes().get(AttributeKey.stringKey("exception.type"))).isEqualTo(type.getName());
    assertThat(event.getAttributes().get(AttributeKey.stringKey("exception.message"))).isEqualTo(message);
  }
}
