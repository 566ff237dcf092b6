package dev.ravel.driver.grpo;

import io.ray.api.PlacementGroups;
import io.ray.api.Ray;
import io.ray.api.options.PlacementGroupCreationOptions;
import io.ray.api.placementgroup.PlacementGroup;
import io.ray.api.runtimecontext.NodeInfo;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/** The generation workers' placement group ({@code generation.placement}): one bundle per worker. */
final class Placements {
  private Placements() {}

  /** The resources of one worker's bundle: its CPUs, its GPUs when it asks for some, and its others. */
  static Map<String, Double> bundle(GrpoSettings.Placement placement) {
    Map<String, Double> b = new LinkedHashMap<>();
    b.put("CPU", placement.cpus());
    if (placement.gpus() > 0) {
      b.put("GPU", placement.gpus());
    }
    b.putAll(placement.workerResources());
    return b;
  }

  /**
   * Creates the group and waits until Ray has placed every bundle; null with {@code generation.placement: none}.
   *
   * @throws IllegalStateException in one line naming the key, the bundles and the cluster's alive nodes when Ray
   *     cannot place them within {@code timeoutMs}
   */
  static PlacementGroup group(GrpoSettings.Placement placement, int workers, long timeoutMs) {
    if (placement.strategy() == null) {
      return null;
    }
    Map<String, Double> bundle = bundle(placement);
    PlacementGroup g = PlacementGroups.createPlacementGroup(new PlacementGroupCreationOptions.Builder()
        .setBundles(Collections.nCopies(workers, bundle)).setStrategy(placement.strategy()).build());
    if (!g.wait((int) Math.max(1, timeoutMs / 1000))) {
      PlacementGroups.removePlacementGroup(g.getId());
      throw new IllegalStateException(message(placement, workers, bundle, aliveNodes(), timeoutMs));
    }
    return g;
  }

  static String message(GrpoSettings.Placement placement, int workers, Map<String, Double> bundle,
      List<String> alive, long timeoutMs) {
    return "generation.placement=" + placement.strategy().name().toLowerCase(Locale.ROOT) + ": Ray could not place "
        + workers + " bundles of " + bundle + " (one per generation worker) within " + timeoutMs / 1000 + " s on the"
        + " cluster's " + alive.size() + " alive node" + (alive.size() == 1 ? "" : "s") + " " + alive
        + "; lower generation.num_cpus or generation.workers, or choose another placement";
  }

  /** The alive nodes, each as {@code address (CPU n, GPU n)}. */
  private static List<String> aliveNodes() {
    return Ray.getRuntimeContext().getAllNodeInfo().stream().filter(n -> n.isAlive).map(Placements::describe)
        .toList();
  }

  private static String describe(NodeInfo n) {
    return n.nodeAddress + " (CPU " + fmt(n.resources.getOrDefault("CPU", 0.0)) + ", GPU "
        + fmt(n.resources.getOrDefault("GPU", 0.0)) + ")";
  }

  private static String fmt(double v) {
    return v == Math.rint(v) ? Long.toString((long) v) : Double.toString(v);
  }
}
