package dev.ravel.workers.generation.openai;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;

/** The {@code /metrics} bodies of the tests. */
final class Fixtures {
  /** vLLM v1, two engines: written by Python's prometheus_client with vLLM's definitions. */
  static final String VLLM = "vllm-metrics.txt";
  /** ravel serve: written by the Prometheus Java client as the contract says. */
  static final String RAVEL_SERVE = "ravel-serve-metrics.txt";

  private Fixtures() {}

  static String text(String name) {
    try (InputStream in = Fixtures.class.getResourceAsStream(name)) {
      if (in == null) {
        throw new IllegalStateException("no test resource " + name);
      }
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** A small body in vLLM's shape (one engine, floats as Python writes them) with the given values. */
  static String vllm(double running, double kv, long preemptions, long prompt, long generation, long stop,
      long length, double queueSum, long queueCount) {
    String l = "{engine=\"0\",model_name=\"m\"}";
    return "# HELP vllm:num_requests_running Number of requests in model execution batches.\n"
        + "# TYPE vllm:num_requests_running gauge\n"
        + "vllm:num_requests_running" + l + " " + running + "\n"
        + "# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.\n"
        + "# TYPE vllm:kv_cache_usage_perc gauge\n"
        + "vllm:kv_cache_usage_perc" + l + " " + kv + "\n"
        + "# HELP vllm:num_preemptions_total Cumulative number of preemption from the engine.\n"
        + "# TYPE vllm:num_preemptions_total counter\n"
        + "vllm:num_preemptions_total" + l + " " + (double) preemptions + "\n"
        + "# HELP vllm:prompt_tokens_total Number of prefill tokens processed.\n"
        + "# TYPE vllm:prompt_tokens_total counter\n"
        + "vllm:prompt_tokens_total" + l + " " + (double) prompt + "\n"
        + "# HELP vllm:generation_tokens_total Number of generation tokens processed.\n"
        + "# TYPE vllm:generation_tokens_total counter\n"
        + "vllm:generation_tokens_total" + l + " " + (double) generation + "\n"
        + "# HELP vllm:request_success_total Count of successfully processed requests.\n"
        + "# TYPE vllm:request_success_total counter\n"
        + "vllm:request_success_total{engine=\"0\",finished_reason=\"stop\",model_name=\"m\"} " + (double) stop + "\n"
        + "vllm:request_success_total{engine=\"0\",finished_reason=\"length\",model_name=\"m\"} " + (double) length
        + "\n"
        + "# HELP vllm:request_queue_time_seconds Histogram of time spent in WAITING phase for request.\n"
        + "# TYPE vllm:request_queue_time_seconds histogram\n"
        + "vllm:request_queue_time_seconds_bucket{engine=\"0\",le=\"0.3\",model_name=\"m\"} " + (double) queueCount
        + "\n"
        + "vllm:request_queue_time_seconds_bucket{engine=\"0\",le=\"+Inf\",model_name=\"m\"} " + (double) queueCount
        + "\n"
        + "vllm:request_queue_time_seconds_count" + l + " " + (double) queueCount + "\n"
        + "vllm:request_queue_time_seconds_sum" + l + " " + queueSum + "\n";
  }
}
