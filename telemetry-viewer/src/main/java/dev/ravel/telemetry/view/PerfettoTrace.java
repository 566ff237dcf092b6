package dev.ravel.telemetry.view;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.ravel.telemetry.spans.RavelAttributes;
import dev.ravel.telemetry.traces.SpanRecord;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.Deque;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A whole run in the Chrome trace-event JSON format that ui.perfetto.dev and chrome://tracing open: a track
 * (process) per process of the run, one complete slice ({@code "ph": "X"}) per span, and a flow arrow
 * ({@code "s"} at the end of the linked span, {@code "f"} at the start of the linking one) per span link, for
 * example from each {@code rl.vllm.generate} of an async run to the step that trained on it. Times are
 * microseconds from the run's first span. Within a process, spans that overlap without nesting (concurrent
 * calls) go to separate threads ({@code tid}), so every thread's slices nest properly as the format asks.
 *
 * <pre>{@code
 * String json = PerfettoTrace.render(RunTraces.readDir(runDir).spans());
 * }</pre>
 */
public final class PerfettoTrace {
  private static final ObjectMapper JSON = new ObjectMapper();

  private PerfettoTrace() {}

  /** The trace-event JSON of {@code spans} (of one run). */
  public static String render(List<SpanRecord> spans) {
    ObjectNode root = JSON.createObjectNode();
    ArrayNode events = root.putArray("traceEvents");
    root.put("displayTimeUnit", "ms");
    long origin = spans.stream().mapToLong(SpanRecord::startNanos).min().orElse(0);
    ObjectNode other = root.putObject("otherData");
    other.put("origin_unix_nano", Long.toString(origin));
    spans.stream().map(SpanRecord::runId).filter(r -> !r.isEmpty()).findFirst().ifPresent(r -> other.put("run_id", r));

    Map<String, List<SpanRecord>> byProcess = new LinkedHashMap<>();
    // parents before the children that start with them
    spans.stream().sorted(Comparator.comparingLong(SpanRecord::startNanos)
            .thenComparing(Comparator.comparingLong(SpanRecord::endNanos).reversed()))
        .forEach(s -> byProcess.computeIfAbsent(s.process(), k -> new ArrayList<>()).add(s));
    Map<String, int[]> placed = new HashMap<>(); // span id -> {pid, tid}
    java.util.Set<Integer> pids = new java.util.HashSet<>();
    int nextPid = 1;
    for (Map.Entry<String, List<SpanRecord>> p : byProcess.entrySet()) {
      int pid = processId(p.getValue().get(0), -1);
      if (pid < 0 || !pids.add(pid)) { // no pid, or the same pid on another node: a track of its own
        while (!pids.add(nextPid)) {
          nextPid++;
        }
        pid = nextPid;
      }
      meta(events, "process_name", pid, 0).putObject("args").put("name", p.getKey());
      meta(events, "process_sort_index", pid, 0).putObject("args").put("sort_index", pid);
      List<Deque<SpanRecord>> lanes = new ArrayList<>();
      for (SpanRecord s : p.getValue()) {
        int tid = lane(lanes, s);
        placed.put(s.spanId(), new int[] {pid, tid});
        ObjectNode x = events.addObject();
        x.put("ph", "X");
        x.put("name", s.name());
        x.put("cat", s.role().isEmpty() ? "span" : s.role());
        x.put("ts", micros(s.startNanos() - origin));
        x.put("dur", micros(Math.max(0, s.durationNanos())));
        x.put("pid", pid);
        x.put("tid", tid);
        ObjectNode args = x.putObject("args");
        args.put("trace_id", s.traceId());
        args.put("span_id", s.spanId());
        if (!s.parentSpanId().isEmpty()) {
          args.put("parent_span_id", s.parentSpanId());
        }
        if (s.isError()) {
          args.put("status", "ERROR" + (s.statusMessage().isEmpty() ? "" : ": " + s.statusMessage()));
        }
        s.attributes().forEach((k, v) -> args.put(k, String.valueOf(v)));
      }
      for (int t = 0; t < lanes.size(); t++) {
        meta(events, "thread_name", pid, t + 1).putObject("args").put("name", t == 0 ? "spans" : "concurrent " + t);
      }
    }
    Map<String, SpanRecord> byId = new HashMap<>();
    spans.forEach(s -> byId.putIfAbsent(s.spanId(), s));
    long flow = 0;
    for (SpanRecord s : spans) {
      for (SpanRecord.Link l : s.links()) {
        SpanRecord from = byId.get(l.spanId());
        if (from == null || !placed.containsKey(from.spanId()) || !placed.containsKey(s.spanId())) {
          continue; // a link to a span outside the run's files: nothing to draw it from
        }
        flow++;
        int[] a = placed.get(from.spanId());
        int[] b = placed.get(s.spanId());
        // the arrow leaves the producer as it ends and enters the consumer as it starts (both inside their slice)
        flowEvent(events, "s", flow, a, Math.max(from.startNanos(), from.endNanos() - 1000) - origin);
        ObjectNode f = flowEvent(events, "f", flow, b, s.startNanos() - origin);
        f.put("bp", "e");
      }
    }
    other.put("flows", flow);
    return root.toString();
  }

  /**
   * The first thread of {@code lanes} where {@code s} nests (each lane keeps the stack of its open slices);
   * a new lane when none. Spans come sorted by start. Returns the tid (lane index + 1).
   */
  private static int lane(List<Deque<SpanRecord>> lanes, SpanRecord s) {
    for (int i = 0; i < lanes.size(); i++) {
      Deque<SpanRecord> stack = lanes.get(i);
      while (!stack.isEmpty() && stack.peek().endNanos() <= s.startNanos()) {
        stack.pop();
      }
      if (stack.isEmpty() || stack.peek().endNanos() >= s.endNanos()) {
        stack.push(s);
        return i + 1;
      }
    }
    Deque<SpanRecord> stack = new ArrayDeque<>();
    stack.push(s);
    lanes.add(stack);
    return lanes.size();
  }

  private static int processId(SpanRecord s, int fallback) {
    Object pid = s.resourceAttribute(RavelAttributes.PROCESS_PID);
    if (pid instanceof Number n && n.longValue() > 0 && n.longValue() <= Integer.MAX_VALUE) {
      return n.intValue();
    }
    return fallback;
  }

  private static ObjectNode meta(ArrayNode events, String name, int pid, int tid) {
    ObjectNode m = events.addObject();
    m.put("ph", "M");
    m.put("name", name);
    m.put("pid", pid);
    m.put("tid", tid);
    return m;
  }

  private static ObjectNode flowEvent(ArrayNode events, String ph, long id, int[] where, long nanos) {
    ObjectNode e = events.addObject();
    e.put("ph", ph);
    e.put("name", "link");
    e.put("cat", "link");
    e.put("id", id);
    e.put("ts", micros(nanos));
    e.put("pid", where[0]);
    e.put("tid", where[1]);
    return e;
  }

  private static double micros(long nanos) {
    return nanos / 1000.0;
  }
}
