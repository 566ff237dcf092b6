package dev.ravel.workers.serve;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.ravel.workers.engine.EngineStats;
import java.net.http.HttpResponse;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(60)
final class MetricsTest {
  private static final String M = "{model_name=\"ravel-tiny\"}";

  @Test
  void metrics_afterRequests_countEveryFinishedRequestExactly() {
    try (TestServer s = TestServer.start()) {
      long completionTokens = 0;
      long promptTokens = 0;
      for (int i = 0; i < 3; i++) {
        JsonNode r = s.ok("/v1/completions", "{\"prompt\":[\"1+2=\",\"33+4=\"],\"n\":2,\"max_tokens\":7,\"seed\":"
            + i + "}");
        completionTokens += r.at("/usage/completion_tokens").asLong();
        promptTokens += 2 * (4 + 5);
      }
      JsonNode chat = s.ok("/v1/chat/completions", "{\"messages\":[{\"role\":\"user\",\"content\":\"9=\"}],"
          + "\"max_tokens\":3}");
      completionTokens += chat.at("/usage/completion_tokens").asLong();
      promptTokens += 2;

      HttpResponse<String> r = s.get("/metrics");

      assertThat(r.statusCode()).isEqualTo(200);
      assertThat(r.headers().firstValue("Content-Type")).hasValueSatisfying(v -> assertThat(v).startsWith(
          "text/plain"));
      Map<String, Double> m = parse(r.body());
      assertThat(m.get("vllm:generation_tokens_total" + M)).isEqualTo((double) completionTokens);
      assertThat(m.get("vllm:prompt_tokens_total" + M)).isEqualTo((double) promptTokens);
      assertThat(m.get("vllm:e2e_request_latency_seconds_count" + M)).isEqualTo(13.0);
      assertThat(m.get("vllm:time_to_first_token_seconds_count" + M)).isEqualTo(13.0);
      assertThat(m.get("vllm:request_queue_time_seconds_count" + M)).isEqualTo(13.0);
      assertThat(m.get("vllm:e2e_request_latency_seconds_bucket{model_name=\"ravel-tiny\",le=\"+Inf\"}"))
          .isEqualTo(13.0);
      assertThat(m.get("vllm:e2e_request_latency_seconds_sum" + M)).isPositive();
      double stop = m.get("vllm:request_success_total{finished_reason=\"stop\",model_name=\"ravel-tiny\"}");
      double length = m.get("vllm:request_success_total{finished_reason=\"length\",model_name=\"ravel-tiny\"}");
      assertThat(stop + length).isEqualTo(13.0);
      assertThat(m.get("vllm:request_success_total{finished_reason=\"abort\",model_name=\"ravel-tiny\"}")).isZero();
      // n per prompt, as vLLM's request_params_n: 3 requests of 2 prompts at n=2, then the chat request's one
      assertThat(m.get("vllm:request_params_n_count" + M)).isEqualTo(7.0);
      assertThat(m.get("vllm:request_params_n_sum" + M)).isEqualTo(13.0);
      assertThat(m.get("vllm:request_params_n_bucket{model_name=\"ravel-tiny\",le=\"1.0\"}")).isEqualTo(1.0);
      assertThat(m.get("vllm:num_preemptions_total" + M)).isZero();
      assertThat(m.get("vllm:num_requests_running" + M)).isZero();
      assertThat(m.get("vllm:num_requests_waiting" + M)).isZero();
      assertThat(m.get("vllm:kv_cache_usage_perc" + M)).isZero();
      EngineStats e = s.server.engineStats();
      assertThat(e.generationTokens()).isEqualTo(completionTokens);
      assertThat(e.promptTokens()).isEqualTo(promptTokens);
    }
  }

  @Test
  void metrics_kvBudgetTooSmallForTheBatch_countsTheEnginesPreemptions() {
    try (TestServer s = TestServer.start(b -> b.kvTokenBudget(40))) {
      s.ok("/v1/completions", "{\"prompt\":\"12+34=\",\"n\":16,\"max_tokens\":12,\"temperature\":0.5,\"seed\":1}");

      Map<String, Double> m = parse(s.get("/metrics").body());

      long preemptions = s.server.engineStats().preemptions();
      assertThat(preemptions).isPositive();
      assertThat(m.get("vllm:num_preemptions_total" + M)).isEqualTo((double) preemptions);
      assertThat(m.get("vllm:e2e_request_latency_seconds_count" + M)).isEqualTo(16.0);
    }
  }

  /** {@code name{labels} -> value} of every sample line. */
  static Map<String, Double> parse(String text) {
    Map<String, Double> out = new LinkedHashMap<>();
    for (String line : text.split("\n")) {
      if (line.isBlank() || line.startsWith("#")) {
        continue;
      }
      int space = line.lastIndexOf(' ');
      out.put(line.substring(0, space), Double.parseDouble(line.substring(space + 1)));
    }
    return out;
  }
}
