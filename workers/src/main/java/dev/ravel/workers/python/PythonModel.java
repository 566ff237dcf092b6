package dev.ravel.workers.python;

import dev.ravel.telemetry.config.ConfigException;
import java.io.Serializable;
import java.util.List;

/**
 * The policy of Ravel's Python workers: a {@code transformers} causal LM built from this config with random
 * initialisation (no weights are downloaded), over the task's vocabulary. The trainer and every generation
 * worker build it from the same config and seed, so they start from the same weights.
 *
 * @param family {@code gpt2} or {@code qwen2}
 * @param vocabSize token ids {@code 0 .. vocabSize-1}
 * @param layers transformer blocks
 * @param hidden the hidden size (a multiple of {@code heads})
 * @param heads attention heads
 * @param maxPositions the longest sequence, prompt and completion together
 * @param path a Hugging Face checkpoint folder to load instead (empty: random initialisation from the sizes
 *     above); with a path, {@code vocabSize} and {@code maxPositions} are the checkpoint's
 * @param dtype the checkpoint's dtype ({@code auto}, {@code float32}, {@code bfloat16}, {@code float16})
 */
public record PythonModel(String family, int vocabSize, int layers, int hidden, int heads, int maxPositions,
    String path, String dtype) implements Serializable {
  /** The model families a Python worker builds. */
  public static final List<String> FAMILIES = List.of("gpt2", "qwen2");

  /**
   * Validates.
   *
   * @throws ConfigException naming the field ({@code family}, {@code layers}, {@code hidden}, {@code heads}: the
   *     run config's {@code model.*} keys less their section)
   */
  /** A randomly initialised model of these sizes. */
  public PythonModel(String family, int vocabSize, int layers, int hidden, int heads, int maxPositions) {
    this(family, vocabSize, layers, hidden, heads, maxPositions, "", "auto");
  }

  /** This model loaded from the checkpoint folder {@code path} instead, its vocabulary and length given. */
  public PythonModel fromCheckpoint(String path, String dtype, int vocabSize, int maxPositions) {
    return new PythonModel(family, vocabSize, layers, hidden, heads, maxPositions, path, dtype);
  }

  public PythonModel {
    java.util.Objects.requireNonNull(path, "path");
    java.util.Objects.requireNonNull(dtype, "dtype");
    if (!FAMILIES.contains(family)) {
      throw new ConfigException("family", "unknown '" + family + "' (valid: " + String.join(", ", FAMILIES) + ")");
    }
    positive("vocab_size", vocabSize);
    positive("layers", layers);
    positive("hidden", hidden);
    positive("heads", heads);
    positive("max_positions", maxPositions);
    if (hidden % heads != 0) {
      throw new ConfigException("hidden", hidden + " is not a multiple of heads (" + heads + ")");
    }
    if (family.equals("qwen2") && (hidden / heads) % 2 != 0) {
      throw new ConfigException("hidden", "qwen2's rotary embedding needs an even size per head, got "
          + hidden + " / " + heads + " = " + hidden / heads);
    }
  }

  private static void positive(String name, int v) {
    if (v < 1) {
      throw new ConfigException(name, "must be at least 1, got " + v);
    }
  }
}
