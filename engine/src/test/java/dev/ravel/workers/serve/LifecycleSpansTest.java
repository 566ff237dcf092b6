package dev.ravel.workers.serve;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import dev.ravel.telemetry.spans.EngineNames;
import dev.ravel.telemetry.spans.SpanNames;
import dev.ravel.workers.engine.Lifecycle;
import io.opentelemetry.sdk.trace.data.SpanData;
import java.net.http.HttpResponse;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The lifecycle children of {@code llm_request} on the HTTP path, under the caller's {@code traceparent}. */
@Timeout(120) // a hang guard only: nothing here asserts a duration
final class LifecycleSpansTest {
  private static final String TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736";
  private static final String PARENT_ID = "00f067aa0ba902b7";

  @Test
  void completions_choiceForcedThroughAPreemption_childrenTileItsLlmRequestUnderTheCallersTrace() throws Exception {
    // a KV budget of 16 for two choices of 3 + 8 tokens: held back by a pause until both are queued, they are
    // admitted in one iteration, and when their 6th tokens no longer fit the second is evicted, then recomputed
    try (TestServer s = TestServer.start(b -> b.kvTokenBudget(16))) {
      s.ok("/pause?mode=keep", "");
      String body = "{\"prompt\":[1,10,1],\"n\":2,\"max_tokens\":8,\"seed\":4,\"ignore_eos\":true}";
      CompletableFuture<HttpResponse<String>> response = CompletableFuture.supplyAsync(() -> s.post(
          "/v1/completions", body, Map.of("traceparent", "00-" + TRACE_ID + "-" + PARENT_ID + "-01",
              "X-Request-Id", "pre")));
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
      while (s.server.engineStats().waiting() < 2 && System.nanoTime() < deadline) {
        Thread.sleep(1);
      }
      assertThat(s.server.engineStats().waiting()).as("choices queued while paused").isEqualTo(2);
      s.ok("/resume", "");
      HttpResponse<String> r = response.get(60, TimeUnit.SECONDS);
      assertThat(r.statusCode()).as(r.body()).isEqualTo(200);

      List<SpanData> all = s.spans.getFinishedSpanItems();
      SpanData preempted = s.llmRequests().stream()
          .filter(sp -> sp.getAttributes().get(EngineNames.ENGINE_PREEMPTIONS) == 1L).findFirst().orElseThrow();
      assertThat(preempted.getAttributes().get(EngineNames.REQUEST_ID)).isEqualTo("pre-1");
      assertThat(preempted.getTraceId()).isEqualTo(TRACE_ID);
      assertThat(preempted.getParentSpanId()).isEqualTo(PARENT_ID);
      List<SpanData> children = Lifecycle.children(all, preempted);
      assertThat(children).extracting(SpanData::getName).containsExactly(SpanNames.LLM_REQUEST_QUEUED,
          SpanNames.LLM_REQUEST_PREFILL, SpanNames.LLM_REQUEST_DECODE, SpanNames.LLM_REQUEST_PREEMPTED,
          SpanNames.LLM_REQUEST_PREFILL, SpanNames.LLM_REQUEST_DECODE);
      Lifecycle.assertTiles(preempted, children);
      assertThat(Lifecycle.durationSum(children)).isCloseTo(Lifecycle.duration(preempted), within(1_000_000L));
      assertThat(children).extracting(c -> c.getAttributes().get(EngineNames.ENGINE_RECOMPUTE))
          .containsExactly(null, false, null, null, true, null);
      assertThat(children.get(4).getAttributes().get(EngineNames.USAGE_INPUT_TOKENS)).isEqualTo(3L + 6);
      assertThat(children.get(2).getAttributes().get(EngineNames.USAGE_OUTPUT_TOKENS)
          + children.get(5).getAttributes().get(EngineNames.USAGE_OUTPUT_TOKENS)).isEqualTo(8L);

      SpanData other = s.llmRequests().stream().filter(sp -> sp != preempted).findFirst().orElseThrow();
      assertThat(other.getParentSpanId()).isEqualTo(PARENT_ID);
      List<SpanData> otherChildren = Lifecycle.children(all, other);
      assertThat(otherChildren).extracting(SpanData::getName).containsExactly(SpanNames.LLM_REQUEST_QUEUED,
          SpanNames.LLM_REQUEST_PREFILL, SpanNames.LLM_REQUEST_DECODE);
      Lifecycle.assertTiles(other, otherChildren);
      // the server's spans: two llm_request and their 6 + 3 children
      assertThat(all).hasSize(2 + 6 + 3);
    }
  }
}
