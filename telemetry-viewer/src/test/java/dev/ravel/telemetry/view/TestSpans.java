package dev.ravel.telemetry.view;

import dev.ravel.telemetry.traces.SpanRecord;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

/** Synthetic spans for the view tests: a sync step, two async steps with links, and loose spans. */
final class TestSpans {
  private TestSpans() {}

  static final String RUN = "run-test";
  /** 2026-01-01T00:00:00Z in epoch nanoseconds. */
  static final long T0 = 1_767_225_600_000_000_000L;
  static final long MS = 1_000_000L;

  static final Map<String, Object> DRIVER = process("driver", 100);
  static final Map<String, Object> WORKER_1 = process("generation_worker", 201);
  static final Map<String, Object> WORKER_2 = process("generation_worker", 202);
  static final Map<String, Object> TRAINER = process("trainer", 300);
  static final Map<String, Object> COLLECTOR = process("trajectory_collector", 400);

  static Map<String, Object> process(String role, long pid) {
    Map<String, Object> r = new LinkedHashMap<>();
    r.put("service.name", "ravel-" + role);
    r.put("rl.run.id", RUN);
    r.put("rl.process.role", role);
    r.put("process.pid", pid);
    return r;
  }

  static String tid(int n) {
    return String.format("%032x", n);
  }

  static String sid(int n) {
    return String.format("%016x", n);
  }

  static B span(String traceId, int id, int parent, String name, double startMs, double endMs) {
    return new B(traceId, sid(id), parent == 0 ? "" : sid(parent), name, startMs, endMs);
  }

  /** A span under construction; times in milliseconds after {@link #T0}. */
  static final class B {
    private final String traceId;
    private final String spanId;
    private final String parentId;
    private String name;
    private final long start;
    private final long end;
    private Map<String, Object> resource = DRIVER;
    private final Map<String, Object> attrs = new LinkedHashMap<>();
    private final List<SpanRecord.Event> events = new ArrayList<>();
    private final List<SpanRecord.Link> links = new ArrayList<>();
    private int status;
    private String message = "";

    B(String traceId, String spanId, String parentId, String name, double startMs, double endMs) {
      this.traceId = traceId;
      this.spanId = spanId;
      this.parentId = parentId;
      this.name = name;
      this.start = T0 + Math.round(startMs * MS);
      this.end = T0 + Math.round(endMs * MS);
    }

    B in(Map<String, Object> res) {
      this.resource = res;
      return this;
    }

    B attr(String k, Object v) {
      attrs.put(k, v);
      return this;
    }

    B error(String msg) {
      status = 2;
      message = msg;
      return this;
    }

    B link(String trace, int span) {
      links.add(new SpanRecord.Link(trace, sid(span), Map.of("rl.link.kind", "rollout")));
      return this;
    }

    B event(String eventName, double atMs) {
      events.add(new SpanRecord.Event(eventName, T0 + Math.round(atMs * MS), Map.of("reason", "budget")));
      return this;
    }

    SpanRecord build() {
      return new SpanRecord(traceId, spanId, parentId, name, 1, start, end, status, message, attrs, resource, events,
          links, "test");
    }
  }

  // ---------------------------------------------------------------- scenarios

  /**
   * Step 1 (trace 77), 100 ms, with the runs the waterfalls fold: worker 1 ran 29 {@code llm_request} (span ids
   * 100..128, request i from 1 + i to 10 + 2i ms: 9..37 ms, median 23 ms) and a failed one (200); worker 2 ran
   * two (300, 301), too few to fold.
   */
  static List<SpanRecord> foldStep() {
    String t = tid(77);
    List<SpanRecord> s = new ArrayList<>();
    s.add(span(t, 1, 0, "rl.grpo.step", 0, 100).attr("rl.step", 1L).build());
    s.add(span(t, 2, 1, "rl.worker.generate", 0, 80).in(WORKER_1).build());
    for (int i = 0; i < 29; i++) {
      s.add(span(t, 100 + i, 2, "llm_request", 1 + i, 10 + 2 * i).in(WORKER_1).attr("gen_ai.request.id", "req-" + i)
          .build());
    }
    s.add(span(t, 200, 2, "llm_request", 40, 41).in(WORKER_1).error("boom").build());
    s.add(span(t, 3, 1, "rl.worker.generate", 0, 50).in(WORKER_2).build());
    s.add(span(t, 300, 3, "llm_request", 1, 20).in(WORKER_2).build());
    s.add(span(t, 301, 3, "llm_request", 2, 30).in(WORKER_2).build());
    return s;
  }

  static final String SYNC_TRACE = tid(1);

  /**
   * Step 5, sync, 100 ms: data 0-5, refit 5-15, generation 15-65 (worker 2 finishes last: 63 ms), reward
   * 65-70, logprobs 70-75, advantage 75-76, training 76-95, checkpointing 95-98, root's own time 98-100.
   * The second llm_request on worker 1 fails.
   */
  static List<SpanRecord> syncStep() {
    String t = SYNC_TRACE;
    List<SpanRecord> s = new ArrayList<>();
    s.add(span(t, 1, 0, "rl.grpo.step", 0, 100).attr("rl.step", 5L).attr("rl.mode", "sync").build());
    s.add(span(t, 2, 1, "rl.grpo.data_processing", 0, 5).build());
    s.add(span(t, 3, 1, "rl.grpo.refit", 5, 15).build());
    s.add(span(t, 4, 3, "rl.worker.update_weights", 6, 14).in(WORKER_1).build());
    s.add(span(t, 5, 1, "rl.grpo.generation", 15, 65).build());
    s.add(span(t, 6, 5, "rl.vllm.generate", 16, 64).attr("rl.generation.mode", "sync").build());
    s.add(span(t, 7, 6, "rl.worker.generate", 17, 60).in(WORKER_1).build());
    s.add(span(t, 8, 7, "llm_request", 18, 40).in(WORKER_1).event("preempted", 30).build());
    s.add(span(t, 9, 7, "llm_request", 20, 59).in(WORKER_1).error("engine failure").build());
    s.add(span(t, 10, 6, "rl.worker.generate", 17, 63).in(WORKER_2).build());
    s.add(span(t, 11, 10, "llm_request", 18, 62).in(WORKER_2).build());
    s.add(span(t, 12, 1, "rl.grpo.reward_calculation", 65, 70).build());
    s.add(span(t, 13, 1, "rl.grpo.policy_and_reference_logprobs", 70, 75).build());
    s.add(span(t, 14, 13, "rl.trainer.logprobs", 70.5, 74.5).in(TRAINER).build());
    s.add(span(t, 15, 1, "rl.grpo.advantage_calculation", 75, 76).build());
    s.add(span(t, 16, 1, "rl.grpo.policy_training", 76, 95).build());
    s.add(span(t, 17, 16, "rl.trainer.train", 76.5, 94).in(TRAINER).build());
    s.add(span(t, 18, 1, "rl.grpo.checkpointing", 95, 98).build());
    return s;
  }

  static final String ASYNC_0 = tid(10);
  static final String ASYNC_1 = tid(11);
  static final String MISSING_TRACE = tid(99);

  /**
   * Two async steps. Step 0 (0-50 ms) publishes weights in its first refit; the collector's generation (2-80,
   * outliving the step) holds the rl.vllm.generate spans 0x30 and 0x31. Step 1 (50-100 ms) links to both and
   * to a span that is not in the run: starved 50-55, data 55-56, logprobs 56-60, advantage 60-61, training
   * 61-90, refit 90-100 with a bubble 90-95.
   */
  static List<SpanRecord> asyncSteps() {
    List<SpanRecord> s = new ArrayList<>();
    String a = ASYNC_0;
    s.add(span(a, 0x20, 0, "rl.grpo.step", 0, 50).attr("rl.step", 0L).attr("rl.mode", "async").build());
    s.add(span(a, 0x21, 0x20, "rl.grpo.refit", 0, 5).build());
    s.add(span(a, 0x22, 0x21, "rl.trajectory_collector.publish", 1, 2).in(COLLECTOR).build());
    s.add(span(a, 0x23, 0x22, "rl.grpo.generation", 2, 80).in(COLLECTOR).attr("rl.generation.mode", "async")
        .build());
    s.add(span(a, 0x30, 0x23, "rl.vllm.generate", 3, 40).in(COLLECTOR).attr("rl.target_weight_version", 1L).build());
    s.add(span(a, 0x31, 0x23, "rl.vllm.generate", 3, 45).in(COLLECTOR).attr("rl.target_weight_version", 1L).build());
    s.add(span(a, 0x32, 0x30, "rl.worker.generate_async", 4, 39).in(WORKER_1).build());
    s.add(span(a, 0x33, 0x32, "llm_request", 5, 38).in(WORKER_1).build());
    s.add(span(a, 0x34, 0x31, "rl.worker.generate_async", 4, 44).in(WORKER_2).build());
    s.add(span(a, 0x35, 0x34, "llm_request", 5, 43).in(WORKER_2).build());
    s.add(span(a, 0x36, 0x23, "rl.vllm.generate", 46, 78).in(COLLECTOR).attr("rl.target_weight_version", 2L)
        .build());
    s.add(span(a, 0x24, 0x20, "rl.idle.buffer_starvation", 5, 45).build());
    s.add(span(a, 0x25, 0x20, "rl.grpo.data_processing", 45, 46).build());
    s.add(span(a, 0x26, 0x20, "rl.grpo.policy_and_reference_logprobs", 46, 47).build());
    s.add(span(a, 0x27, 0x20, "rl.grpo.advantage_calculation", 47, 47.5).build());
    s.add(span(a, 0x28, 0x20, "rl.grpo.policy_training", 47.5, 49).build());
    s.add(span(a, 0x29, 0x20, "rl.grpo.refit", 49, 50).build());
    s.add(span(a, 0x2a, 0x29, "rl.idle.refit_bubble", 49, 49.5).build());

    String b = ASYNC_1;
    s.add(span(b, 0x40, 0, "rl.grpo.step", 50, 100).attr("rl.step", 1L).attr("rl.mode", "async")
        .link(a, 0x30).link(a, 0x31).link(MISSING_TRACE, 0xff).build());
    s.add(span(b, 0x41, 0x40, "rl.idle.buffer_starvation", 50, 55).build());
    s.add(span(b, 0x42, 0x40, "rl.grpo.data_processing", 55, 56).build());
    s.add(span(b, 0x43, 0x40, "rl.grpo.policy_and_reference_logprobs", 56, 60).build());
    s.add(span(b, 0x44, 0x43, "rl.trainer.logprobs", 56.5, 59.5).in(TRAINER).build());
    s.add(span(b, 0x45, 0x40, "rl.grpo.advantage_calculation", 60, 61).build());
    s.add(span(b, 0x46, 0x40, "rl.grpo.policy_training", 61, 90).build());
    s.add(span(b, 0x47, 0x46, "rl.trainer.train", 61.5, 89).in(TRAINER).build());
    s.add(span(b, 0x48, 0x40, "rl.grpo.refit", 90, 100).build());
    s.add(span(b, 0x49, 0x48, "rl.idle.refit_bubble", 90, 95).build());
    s.add(span(b, 0x4a, 0x48, "rl.worker.update_weights", 95, 99).in(WORKER_1).build());
    return s;
  }

  static final String LOOSE_TRACE = tid(20);

  /** An orphan in step 1's async trace (its parent 0xdead is missing) and a two-span trace with no step root. */
  static List<SpanRecord> looseSpans() {
    List<SpanRecord> s = new ArrayList<>();
    s.add(span(ASYNC_1, 0x4f, 0xdead, "rl.worker.generate_async", 70, 72).in(WORKER_2).build());
    s.add(span(LOOSE_TRACE, 0x50, 0, "rl.demo.run", 0, 10).build());
    s.add(span(LOOSE_TRACE, 0x51, 0x50, "rl.worker.generate", 1, 9).in(WORKER_1).error("boom").build());
    return s;
  }

  /** Sync, async and loose spans together. */
  static List<SpanRecord> all() {
    List<SpanRecord> s = new ArrayList<>(syncStep());
    s.addAll(asyncSteps());
    s.addAll(looseSpans());
    return s;
  }

  static <T> List<T> shuffled(List<T> in, long seed) {
    List<T> out = new ArrayList<>(in);
    Collections.shuffle(out, new Random(seed));
    return out;
  }
}
