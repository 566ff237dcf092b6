package dev.ravel.telemetry.view;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Checks a Chrome trace-event JSON file the way its readers (ui.perfetto.dev, chrome://tracing) need it:
 * every event has {@code ph}, {@code pid} and {@code tid}; complete events {@code ts} and {@code dur} in
 * microseconds (numbers, not negative); every process with slices has its {@code process_name}; a thread's
 * slices nest; every flow id has exactly one start and one end, each inside a slice of its thread.
 */
final class TraceEventFormat {
  private TraceEventFormat() {}

  static void check(JsonNode root) {
    JsonNode events = root.get("traceEvents");
    assertThat(events).as("traceEvents").isNotNull();
    assertThat(events.isArray()).isTrue();
    Map<String, List<double[]>> slices = new HashMap<>();
    Set<Integer> named = new java.util.HashSet<>();
    Set<Integer> withSlices = new java.util.HashSet<>();
    Map<Long, List<JsonNode>> flows = new HashMap<>();
    for (JsonNode e : events) {
      assertThat(e.has("ph") && e.has("pid") && e.has("tid")).as("ph, pid, tid in %s", e).isTrue();
      String ph = e.get("ph").asText();
      switch (ph) {
        case "X" -> {
          assertThat(e.get("ts").isNumber() && e.get("dur").isNumber()).as("ts, dur in %s", e).isTrue();
          assertThat(e.get("ts").asDouble()).isGreaterThanOrEqualTo(0);
          assertThat(e.get("dur").asDouble()).isGreaterThanOrEqualTo(0);
          assertThat(e.get("name").asText()).isNotEmpty();
          withSlices.add(e.get("pid").asInt());
          slices.computeIfAbsent(e.get("pid").asInt() + "/" + e.get("tid").asInt(), k -> new ArrayList<>())
              .add(new double[] {e.get("ts").asDouble(), e.get("ts").asDouble() + e.get("dur").asDouble()});
        }
        case "M" -> {
          if (e.get("name").asText().equals("process_name")) {
            assertThat(named.add(e.get("pid").asInt())).as("one process_name per pid").isTrue();
          }
        }
        case "s", "f" -> {
          assertThat(e.get("ts").isNumber()).isTrue();
          flows.computeIfAbsent(e.get("id").asLong(), k -> new ArrayList<>()).add(e);
        }
        default -> throw new AssertionError("unexpected event phase " + ph + ": " + e);
      }
    }
    assertThat(named).containsAll(withSlices);
    slices.forEach((thread, list) -> {
      list.sort((a, b) -> a[0] != b[0] ? Double.compare(a[0], b[0]) : Double.compare(b[1], a[1]));
      java.util.Deque<double[]> open = new java.util.ArrayDeque<>();
      for (double[] s : list) {
        while (!open.isEmpty() && open.peek()[1] <= s[0]) {
          open.pop();
        }
        assertThat(open.isEmpty() || open.peek()[1] >= s[1]).as("slices of thread %s nest", thread).isTrue();
        open.push(s);
      }
    });
    flows.forEach((id, pair) -> {
      assertThat(pair).as("flow %d", id).hasSize(2);
      assertThat(pair.stream().map(e -> e.get("ph").asText())).containsExactlyInAnyOrder("s", "f");
      for (JsonNode e : pair) {
        List<double[]> own = slices.getOrDefault(e.get("pid").asInt() + "/" + e.get("tid").asInt(), List.of());
        double ts = e.get("ts").asDouble();
        assertThat(own).as("flow %d %s inside a slice", id, e.get("ph").asText())
            .anySatisfy(s -> assertThat(ts).isBetween(s[0], s[1]));
      }
    });
  }
}
