package dev.ravel.workers.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ravel.telemetry.context.TraceCarrier;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.time.Duration;
import org.junit.jupiter.api.Test;

final class EngineValuesTest {
  @Test
  void engineConfig_defaults_matchTheDocumentedOnes() {
    EngineConfig c = EngineConfig.builder().eosToken(2).build();

    assertThat(c.kvTokenBudget()).isEqualTo(4096);
    assertThat(c.maxRunningRequests()).isEqualTo(64);
    assertThat(c.modelName()).isEqualTo("ravel-tiny");
    assertThat(c.tracing()).isFalse();
    assertThat(c.sampleRatio()).isEqualTo(1.0);
    assertThat(c.slowRequest()).isEqualTo(Duration.ofSeconds(2));
    assertThat(c.toBuilder().build().toString()).isEqualTo(c.toString());
  }

  @Test
  void engineConfig_invalidValues_areRejectedNamingTheField() {
    assertThatThrownBy(() -> EngineConfig.builder().build()).hasMessageStartingWith("eosToken:");
    assertThatThrownBy(() -> EngineConfig.builder().eosToken(-1).build()).hasMessageStartingWith("eosToken:");
    assertThatThrownBy(() -> EngineConfig.builder().eosToken(0).kvTokenBudget(0).build())
        .isInstanceOf(IllegalArgumentException.class).hasMessageStartingWith("kvTokenBudget:");
    assertThatThrownBy(() -> EngineConfig.builder().eosToken(0).maxRunningRequests(0).build())
        .hasMessageStartingWith("maxRunningRequests:");
    assertThatThrownBy(() -> EngineConfig.builder().eosToken(0).sampleRatio(1.5).build())
        .hasMessageStartingWith("sampleRatio:").hasMessageContaining("1.5");
    assertThatThrownBy(() -> EngineConfig.builder().eosToken(0).sampleRatio(Double.NaN).build())
        .hasMessageStartingWith("sampleRatio:");
    assertThatThrownBy(() -> EngineConfig.builder().eosToken(0).modelName(" ").build())
        .hasMessageStartingWith("modelName:");
    assertThatThrownBy(() -> EngineConfig.builder().eosToken(0).slowRequest(Duration.ofMillis(-1)).build())
        .hasMessageStartingWith("slowRequest:");
  }

  @Test
  void samplingParams_invalidValues_areRejectedNamingTheField() {
    assertThatThrownBy(() -> SamplingParams.builder().maxTokens(0).build()).hasMessageStartingWith("maxTokens:");
    assertThatThrownBy(() -> SamplingParams.builder().temperature(-0.1).build())
        .hasMessageStartingWith("temperature:");
    assertThatThrownBy(() -> SamplingParams.builder().temperature(Double.NaN).build())
        .hasMessageStartingWith("temperature:");
    assertThatThrownBy(() -> SamplingParams.builder().topP(0).build()).hasMessageStartingWith("topP:");
    assertThatThrownBy(() -> SamplingParams.builder().topP(1.01).build()).hasMessageStartingWith("topP:");
    assertThat(SamplingParams.builder().temperature(0).topP(1).seed(-5).build().seed()).isEqualTo(-5);
  }

  @Test
  void generationRequest_invalidValues_areRejectedAndThePromptIsCopied() {
    SamplingParams p = SamplingParams.builder().build();
    assertThatThrownBy(() -> GenerationRequest.of(" ", new int[] {1}, p, null)).hasMessageStartingWith("requestId:");
    assertThatThrownBy(() -> GenerationRequest.of("a", new int[0], p, null)).hasMessageStartingWith("promptTokens:");
    assertThatThrownBy(() -> GenerationRequest.of("a", new int[] {1, -2}, p, null))
        .hasMessageStartingWith("promptTokens:").hasMessageContaining("index 1");
    assertThatThrownBy(() -> GenerationRequest.of("a", new int[] {1}, null, null)).hasMessageStartingWith("params:");

    int[] prompt = {1, 2, 3};
    GenerationRequest r = GenerationRequest.of("a", prompt, p, null);
    prompt[0] = 9;
    r.promptTokens()[1] = 9;
    assertThat(r.promptTokens()).containsExactly(1, 2, 3);
    assertThat(r.carrier()).isEqualTo(TraceCarrier.EMPTY);
  }

  @Test
  void generationResult_build_checksConsistencyNamingTheField() {
    RequestStats stats = RequestStats.builder().arrivalEpochNanos(10).finishEpochNanos(20).build();
    GenerationResult.Builder ok = GenerationResult.builder().requestId("a").promptTokens(new int[] {1})
        .completionTokens(new int[] {2, 3}).logprobs(new float[] {-1f, -2f}).finishReason(FinishReason.LENGTH)
        .stats(stats);

    assertThat(ok.build().weightVersion()).isEqualTo(GenerationResult.NO_VERSION);
    assertThatThrownBy(() -> ok.logprobs(new float[] {-1f}).build()).hasMessageStartingWith("logprobs:");
    assertThatThrownBy(() -> ok.logprobs(new float[] {-1f, -2f}).finishReason(FinishReason.ERROR).build())
        .hasMessageStartingWith("error:");
    assertThatThrownBy(() -> ok.finishReason(FinishReason.STOP).error("x").build()).hasMessageStartingWith("error:");
    assertThatThrownBy(() -> RequestStats.builder().arrivalEpochNanos(10).finishEpochNanos(5).build())
        .hasMessageStartingWith("finishEpochNanos:");
    assertThatThrownBy(() -> RequestStats.builder().arrivalEpochNanos(10).scheduledEpochNanos(30)
        .finishEpochNanos(20).build()).hasMessageStartingWith("scheduledEpochNanos:");
  }

  @Test
  void requestStats_derivedSeconds_followVllmDefinitions() {
    RequestStats s = RequestStats.builder().arrivalEpochNanos(1_000_000_000L).scheduledEpochNanos(1_500_000_000L)
        .firstTokenEpochNanos(1_750_000_000L).finishEpochNanos(3_000_000_000L).prefillNanos(250_000_000L)
        .decodeNanos(1_250_000_000L).build();

    assertThat(s.timeInQueue()).isEqualTo(0.5);
    assertThat(s.timeToFirstToken()).isEqualTo(0.75);
    assertThat(s.e2e()).isEqualTo(2.0);
    assertThat(s.prefill()).isEqualTo(0.25);
    assertThat(s.decode()).isEqualTo(1.25);
    assertThat(s.inference()).isEqualTo(1.5);
    RequestStats never = RequestStats.builder().arrivalEpochNanos(1_000_000_000L).finishEpochNanos(1_200_000_000L)
        .build();
    assertThat(never.timeInQueue()).isEqualTo(never.e2e());
    assertThat(never.timeToFirstToken()).isZero();
  }

  @Test
  void finishReason_wireNames_areVllmsLowerCaseNames() {
    assertThat(FinishReason.values()).extracting(FinishReason::wireName)
        .containsExactly("stop", "length", "abort", "error");
  }

  @Test
  void values_javaSerialization_roundTrips() throws Exception {
    GenerationRequest r = GenerationRequest.of("a", new int[] {4, 5},
        SamplingParams.builder().maxTokens(3).seed(8).build(), TraceCarrier.of("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", null, null));

    GenerationRequest copy = roundTrip(r);

    assertThat(copy).isEqualTo(r);
    assertThat(copy.carrier().traceparent()).startsWith("00-0af7");
  }

  @SuppressWarnings("unchecked")
  private static <T> T roundTrip(T value) throws Exception {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (ObjectOutputStream out = new ObjectOutputStream(bytes)) {
      out.writeObject(value);
    }
    try (ObjectInputStream in = new ObjectInputStream(new ByteArrayInputStream(bytes.toByteArray()))) {
      return (T) in.readObject();
    }
  }

  @Test
  void engineStatsBuilder_values_areKept() {
    EngineStats s = EngineStats.builder().finished(FinishReason.STOP, 3).finished(FinishReason.ABORT, 1)
        .preemptions(2).running(4).waiting(5).kvTokens(100, 400).tokens(30, 60).spans(7, 1).build();

    assertThat(s.requestsFinished(FinishReason.STOP)).isEqualTo(3);
    assertThat(s.requestsFinished(FinishReason.LENGTH)).isZero();
    assertThat(s.requestsFinishedTotal()).isEqualTo(4);
    assertThat(s.toString()).contains("preemptions=2", "running=4", "waiting=5", "kv=100/400", "promptTokens=30",
        "generationTokens=60", "spansKept=7", "spansSampledOut=1");
  }

  @Test
  void engineStatsBuilder_negativeValue_isRejectedNamingTheField() {
    assertThatThrownBy(() -> EngineStats.builder().preemptions(-1).build())
        .isInstanceOf(IllegalArgumentException.class).hasMessageStartingWith("preemptions:");
    assertThatThrownBy(() -> EngineStats.builder().finished(FinishReason.STOP, -2).build())
        .hasMessageStartingWith("finished stop:");
  }
}
