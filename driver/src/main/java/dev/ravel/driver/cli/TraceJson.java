package dev.ravel.driver.cli;

import dev.ravel.telemetry.traces.SpanRecord;
import dev.ravel.telemetry.view.Goodput;
import dev.ravel.telemetry.view.RunView;
import dev.ravel.telemetry.view.SpanNode;
import dev.ravel.telemetry.view.StepView;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** {@code ravel trace --json}: a run's steps, or one step's spans, as plain maps for Jackson. */
final class TraceJson {
  private TraceJson() {}

  static Map<String, Object> run(String runId, RunView run) {
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("run_id", runId);
    List<Map<String, Object>> steps = new ArrayList<>();
    for (StepView v : run.steps()) {
      Map<String, Object> s = summary(v);
      steps.add(s);
    }
    out.put("steps", steps);
    out.put("spans", run.spans().size());
    out.put("unconnected_spans", run.unconnected().size());
    return out;
  }

  static Map<String, Object> step(String runId, StepView v) {
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("run_id", runId);
    out.putAll(summary(v));
    List<Map<String, Object>> spans = new ArrayList<>();
    for (SpanNode n : v.nodes()) {
      SpanRecord s = n.span();
      Map<String, Object> o = new LinkedHashMap<>();
      o.put("span_id", s.spanId());
      o.put("parent_span_id", s.parentSpanId());
      o.put("name", s.name());
      o.put("depth", n.depth());
      o.put("process", s.process());
      o.put("service", s.service());
      o.put("start", Instant.ofEpochSecond(0, s.startNanos()).toString());
      o.put("duration_ms", s.durationNanos() / 1e6);
      o.put("error", s.isError());
      o.put("critical_path", n.onCriticalPath());
      o.put("attributes", s.attributes());
      spans.add(o);
    }
    out.put("span_list", spans);
    return out;
  }

  private static Map<String, Object> summary(StepView v) {
    Map<String, Object> s = new LinkedHashMap<>();
    s.put("step", v.step());
    s.put("mode", v.mode());
    s.put("trace_id", v.traceId());
    s.put("start", Instant.ofEpochSecond(0, v.startNanos()).toString());
    s.put("duration_ms", v.durationNanos() / 1e6);
    s.put("spans", v.spanCount());
    s.put("errors", v.errorCount());
    Map<String, Object> phases = new LinkedHashMap<>();
    v.phaseNanos().forEach((k, nanos) -> phases.put(k, nanos / 1e6));
    s.put("phases_ms", phases);
    Goodput g = v.goodput();
    s.put("goodput", Map.of("productive", g.productive(), "overhead", g.overhead(), "idle", g.idle(),
        "wasted", g.wasted()));
    return s;
  }
}
