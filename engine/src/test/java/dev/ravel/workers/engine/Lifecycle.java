package dev.ravel.workers.engine;

import static org.assertj.core.api.Assertions.assertThat;

import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.sdk.trace.data.SpanData;
import java.util.Comparator;
import java.util.List;

/** Reading the lifecycle children of an {@code llm_request} span back, for the engine's and the server's tests. */
public final class Lifecycle {
  private Lifecycle() {}

  /** The children of {@code parent} among {@code spans}, in time order (start, then end). */
  public static List<SpanData> children(List<SpanData> spans, SpanData parent) {
    return spans.stream()
        .filter(s -> s.getTraceId().equals(parent.getTraceId())
            && s.getParentSpanId().equals(parent.getSpanId()))
        .sorted(Comparator.comparingLong(SpanData::getStartEpochNanos).thenComparingLong(SpanData::getEndEpochNanos))
        .toList();
  }

  public static long duration(SpanData s) {
    return s.getEndEpochNanos() - s.getStartEpochNanos();
  }

  public static long durationSum(List<SpanData> spans) {
    return spans.stream().mapToLong(Lifecycle::duration).sum();
  }

  /**
   * Asserts that {@code children} (in time order) tile {@code parent}: internal spans of its trace, the first
   * starting at its start, each starting where the previous one ended, the last ending at its end.
   */
  public static void assertTiles(SpanData parent, List<SpanData> children) {
    assertThat(children).isNotEmpty();
    assertThat(children).allSatisfy(c -> {
      assertThat(c.getKind()).isEqualTo(SpanKind.INTERNAL);
      assertThat(c.getTraceId()).isEqualTo(parent.getTraceId());
      assertThat(c.getParentSpanId()).isEqualTo(parent.getSpanId());
      assertThat(c.getEndEpochNanos()).isGreaterThanOrEqualTo(c.getStartEpochNanos());
    });
    assertThat(children.get(0).getStartEpochNanos()).as("first child's start").isEqualTo(parent.getStartEpochNanos());
    for (int i = 1; i < children.size(); i++) {
      assertThat(children.get(i).getStartEpochNanos()).as("start of child %d", i)
          .isEqualTo(children.get(i - 1).getEndEpochNanos());
    }
    assertThat(children.get(children.size() - 1).getEndEpochNanos()).as("last child's end")
        .isEqualTo(parent.getEndEpochNanos());
    assertThat(durationSum(children)).isEqualTo(duration(parent));
  }
}
