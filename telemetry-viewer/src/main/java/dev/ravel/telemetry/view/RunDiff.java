package dev.ravel.telemetry.view;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;

/**
 * Two runs side by side ({@code ravel diff A B}): per phase of their steps, the median time of each run and the
 * ratio B / A, the median step time the same way, and the configuration keys whose values differ. Medians are over
 * the steps that have the phase; a phase one run lacks shows as absent there, with no ratio.
 */
public final class RunDiff {
  /** The key every run differs in (its id), left out of the configuration difference. */
  static final String RUN_ID_KEY = "telemetry.run_id";

  /**
   * One phase's medians.
   *
   * @param phase the phase ({@link StepView#phaseNanos()}'s key), or {@code step} for the whole step
   * @param a run A's median in nanoseconds, null when none of its steps has the phase
   * @param b run B's median in nanoseconds, null when none of its steps has the phase
   * @param stepsA run A's steps that have the phase
   * @param stepsB run B's steps that have the phase
   */
  public record Row(String phase, Long a, Long b, int stepsA, int stepsB) {
    /** {@return B / A, or NaN when either is absent or A is 0} */
    public double ratio() {
      return a == null || b == null || a == 0 ? Double.NaN : (double) b / a;
    }
  }

  /**
   * A configuration key whose values differ.
   *
   * @param key the key ({@code section.key})
   * @param a run A's value, null when A has no such key
   * @param b run B's value, null when B has no such key
   */
  public record Change(String key, Object a, Object b) {}

  private final String idA;
  private final String idB;
  private final List<Row> rows;
  private final List<Change> changes;
  private final boolean configsKnown;

  private RunDiff(String idA, String idB, List<Row> rows, List<Change> changes, boolean configsKnown) {
    this.idA = idA;
    this.idB = idB;
    this.rows = List.copyOf(rows);
    this.changes = List.copyOf(changes);
    this.configsKnown = configsKnown;
  }

  /**
   * The difference of run B from run A.
   *
   * @param idA run A's id
   * @param a run A's spans
   * @param configA run A's resolved configuration ({@code run.json}), null when unknown
   * @param idB run B's id
   * @param b run B's spans
   * @param configB run B's resolved configuration, null when unknown
   * @return the phases of either run in pipeline order, the step first, and the keys that differ, sorted
   */
  public static RunDiff of(String idA, RunView a, Map<String, Object> configA, String idB, RunView b,
      Map<String, Object> configB) {
    Set<String> phases = new LinkedHashSet<>();
    a.steps().forEach(s -> phases.addAll(s.phaseNanos().keySet()));
    b.steps().forEach(s -> phases.addAll(s.phaseNanos().keySet()));
    List<Row> rows = new ArrayList<>();
    rows.add(row("step", a.steps().stream().map(StepView::durationNanos).toList(),
        b.steps().stream().map(StepView::durationNanos).toList()));
    for (String p : phases) {
      rows.add(row(p, a.steps().stream().map(s -> s.phaseNanos().get(p)).filter(Objects::nonNull).toList(),
          b.steps().stream().map(s -> s.phaseNanos().get(p)).filter(Objects::nonNull).toList()));
    }
    List<Change> changes = new ArrayList<>();
    if (configA != null && configB != null) {
      for (String k : differingKeys(List.of(configA, configB))) {
        changes.add(new Change(k, configA.get(k), configB.get(k)));
      }
    }
    return new RunDiff(idA, idB, rows, changes, configA != null && configB != null);
  }

  /**
   * The keys of any of {@code configs} whose values are not the same in all of them (a missing key counts as a
   * value), sorted, the run id left out: what tells runs apart. Values compare by their text.
   */
  static List<String> differingKeys(List<Map<String, Object>> configs) {
    Set<String> keys = new TreeSet<>();
    configs.forEach(c -> keys.addAll(c.keySet()));
    List<String> out = new ArrayList<>();
    for (String k : keys) {
      if (k.equals(RUN_ID_KEY)) {
        continue;
      }
      String first = String.valueOf(configs.get(0).get(k));
      if (configs.stream().anyMatch(c -> !Objects.equals(first, String.valueOf(c.get(k))))) {
        out.add(k);
      }
    }
    return out;
  }

  private static Row row(String phase, List<Long> a, List<Long> b) {
    return new Row(phase, median(a), median(b), a.size(), b.size());
  }

  /** The median (the mean of the middle two for an even count), null for none. */
  static Long median(List<Long> values) {
    if (values.isEmpty()) {
      return null;
    }
    List<Long> sorted = values.stream().sorted().toList();
    int n = sorted.size();
    return n % 2 == 1 ? sorted.get(n / 2) : (sorted.get(n / 2 - 1) + sorted.get(n / 2)) / 2;
  }

  /** {@return the step row, then one row per phase of either run} */
  public List<Row> rows() {
    return rows;
  }

  /** {@return the configuration keys whose values differ (the run id left out)} */
  public List<Change> changes() {
    return changes;
  }

  /** {@return whether both runs' configurations were known (their run.json read)} */
  public boolean configsKnown() {
    return configsKnown;
  }

  /** {@return the difference as text: the phase table, then the configuration keys that differ} */
  public String render() {
    StringBuilder sb = new StringBuilder();
    int w = Math.max(34, rows.stream().mapToInt(r -> r.phase().length()).max().orElse(0) + 2);
    sb.append(String.format("A = %s%nB = %s%n%n", idA, idB));
    sb.append(String.format("%-" + w + "s %12s %12s %8s   %s%n", "median per step", "A", "B", "B/A", "steps A/B"));
    for (Row r : rows) {
      sb.append(String.format("%-" + w + "s %12s %12s %8s   %d/%d%n", r.phase(), time(r.a()), time(r.b()),
          Double.isNaN(r.ratio()) ? "-" : String.format("%.2fx", r.ratio()), r.stepsA(), r.stepsB()));
    }
    sb.append('\n');
    if (!configsKnown) {
      sb.append("config: not compared (a run without run.json)\n");
    } else if (changes.isEmpty()) {
      sb.append("config: the same (the run id aside)\n");
    } else {
      sb.append("config keys that differ (").append(changes.size()).append("):\n");
      int kw = changes.stream().mapToInt(c -> c.key().length()).max().orElse(0);
      for (Change c : changes) {
        sb.append(String.format("  %-" + kw + "s  A: %s   B: %s%n", c.key(), shown(c.a()), shown(c.b())));
      }
    }
    return sb.toString();
  }

  private static String time(Long nanos) {
    return nanos == null ? "-" : Fmt.duration(nanos);
  }

  private static String shown(Object v) {
    return v == null ? "(unset)" : Fmt.clean(String.valueOf(v));
  }
}
