package dev.ravel.driver.grpo;

import dev.ravel.driver.config.Keys;
import io.ray.api.PlacementGroups;
import io.ray.api.Ray;
import io.ray.api.options.PlacementGroupCreationOptions;
import io.ray.api.placementgroup.PlacementGroup;
import io.ray.api.placementgroup.PlacementStrategy;
import io.ray.api.runtimecontext.NodeInfo;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The placement groups of a run: the generation workers' ({@code generation.placement}) and the trainer ranks'
 * ({@code trainer.placement}), each with one bundle per actor.
 */
final class Placements {
  private Placements() {}

  /** The resources of one generation worker's bundle: its CPUs, its GPUs when it asks for some, and its others. */
  static Map<String, Double> bundle(GrpoSettings.Placement placement) {
    return bundle(placement.cpus(), placement.gpus(), placement.workerResources());
  }

  /** The resources of one trainer rank's bundle: its CPUs, its GPUs when it asks for some, and its others. */
  static Map<String, Double> trainerBundle(GrpoSettings.Placement placement) {
    return bundle(placement.trainerCpus(), placement.trainerGpus(), placement.trainerResources());
  }

  private static Map<String, Double> bundle(double cpus, double gpus, Map<String, Double> others) {
    Map<String, Double> b = new LinkedHashMap<>();
    b.put("CPU", cpus);
    if (gpus > 0) {
      b.put("GPU", gpus);
    }
    b.putAll(others);
    return b;
  }

  /**
   * Creates the generation workers' group and waits until Ray has placed every bundle; null with
   * {@code generation.placement: none}.
   *
   * @throws IllegalStateException in one line naming the key, the bundles and the cluster's alive nodes when Ray
   *     cannot place them within {@code timeoutMs}
   */
  static PlacementGroup group(GrpoSettings.Placement placement, int workers, long timeoutMs) {
    return create(Keys.PLACEMENT.dotted(), placement.strategy(), bundle(placement), workers, "generation worker",
        Keys.GENERATION_NUM_CPUS + " or generation.workers", timeoutMs);
  }

  /** As {@link #group}, for the trainer ranks ({@code trainer.placement}, one bundle per rank). */
  static PlacementGroup trainerGroup(GrpoSettings.Placement placement, int ranks, long timeoutMs) {
    return create(Keys.TRAINER_PLACEMENT.dotted(), placement.trainerStrategy(), trainerBundle(placement), ranks,
        "trainer rank", Keys.TRAINER_NUM_CPUS + " or " + Keys.TRAINER_WORKERS, timeoutMs);
  }

  private static PlacementGroup create(String key, PlacementStrategy strategy, Map<String, Double> bundle, int count,
      String what, String lower, long timeoutMs) {
    if (strategy == null) {
      return null;
    }
    PlacementGroup g = PlacementGroups.createPlacementGroup(new PlacementGroupCreationOptions.Builder()
        .setBundles(Collections.nCopies(count, bundle)).setStrategy(strategy).build());
    if (!g.wait((int) Math.max(1, timeoutMs / 1000))) {
      PlacementGroups.removePlacementGroup(g.getId());
      throw new IllegalStateException(message(key, strategy, count, what, bundle, aliveNodes(), timeoutMs, lower));
    }
    return g;
  }

  static String message(String key, PlacementStrategy strategy, int count, String what, Map<String, Double> bundle,
      List<String> alive, long timeoutMs, String lower) {
    return key + "=" + strategy.name().toLowerCase(Locale.ROOT) + ": Ray could not place " + count + " bundles of "
        + bundle + " (one per " + what + ") within " + timeoutMs / 1000 + " s on the cluster's " + alive.size()
        + " alive node" + (alive.size() == 1 ? "" : "s") + " " + alive + "; lower " + lower
        + ", or choose another placement";
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
