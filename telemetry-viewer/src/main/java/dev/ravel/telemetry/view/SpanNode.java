package dev.ravel.telemetry.view;

import dev.ravel.telemetry.traces.SpanRecord;
import java.util.List;
import java.util.Objects;

/**
 * One span in a step's tree.
 *
 * @param span the span
 * @param children its children in the same trace, ordered by start time (then end time, name, span id)
 * @param depth 0 for the step root, parent's depth + 1 below it
 * @param onCriticalPath whether the span has a section on the step's critical path
 *     ({@link StepView#criticalPath()})
 */
public record SpanNode(SpanRecord span, List<SpanNode> children, int depth, boolean onCriticalPath) {

  /** Copies {@code children}; rejects a null span or a negative depth. */
  public SpanNode {
    Objects.requireNonNull(span, "span");
    children = List.copyOf(children);
    if (depth < 0) {
      throw new IllegalArgumentException("depth must be >= 0, got " + depth);
    }
  }

  /** The span's name. */
  public String name() {
    return span.name();
  }

  /** Whether the span has children. */
  public boolean hasChildren() {
    return !children.isEmpty();
  }
}
