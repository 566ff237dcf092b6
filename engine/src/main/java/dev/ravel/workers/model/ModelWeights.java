package dev.ravel.workers.model;

import java.io.IOException;
import java.io.InvalidObjectException;
import java.io.ObjectInputStream;
import java.io.Serializable;
import java.util.Objects;
import java.util.Random;

/**
 * One version of the parameters of a {@link TinyLm}: its {@link ModelSpec}, a flat {@code float[]} laid
 * out as the spec documents, and a version number that identifies the policy that produced a trajectory.
 * Serializes with plain Java serialization as the spec, the version and the raw floats (about 4 bytes per
 * parameter), which is what is shipped between the learner and the rollout workers.
 *
 * <p><b>Ownership:</b> the parameter array is shared, not copied, by {@link #params()},
 * {@link #withVersion(long)} and {@link TinyLm}; treat it as read-only. Whoever passes an array to
 * {@link #of(ModelSpec, long, float[])} hands it over and must not change it afterwards.
 */
public final class ModelWeights implements Serializable {
  private static final long serialVersionUID = 1L;

  private final ModelSpec spec;
  private final long version;
  private final float[] params;

  private ModelWeights(ModelSpec spec, long version, float[] params) {
    this.spec = spec;
    this.version = version;
    this.params = params;
  }

  /**
   * Weights over {@code params}, which this object takes ownership of (not copied). The length must be
   * {@link ModelSpec#parameterCount()} and every value finite.
   */
  public static ModelWeights of(ModelSpec spec, long version, float[] params) {
    Objects.requireNonNull(spec, "spec");
    Objects.requireNonNull(params, "params");
    check(spec, version, params);
    return new ModelWeights(spec, version, params);
  }

  /**
   * Deterministic random initialisation (version 0) for {@code seed}: embeddings ~ N(0, 1), hidden weights
   * ~ N(0, 1/fanIn), output weights ~ N(0, 0.01/hiddenDim), biases zero. The small output scale makes a
   * fresh model's next-token distribution close to uniform, which is what exploration needs.
   */
  public static ModelWeights init(ModelSpec spec, long seed) {
    Objects.requireNonNull(spec, "spec");
    Random rng = new Random(seed);
    float[] p = new float[spec.parameterCount()];
    fill(p, spec.embeddingOffset(), spec.w1Offset(), 1.0, rng);
    fill(p, spec.w1Offset(), spec.b1Offset(), 1.0 / Math.sqrt(spec.inputDim()), rng);
    fill(p, spec.w2Offset(), spec.b2Offset(), 0.1 / Math.sqrt(spec.hiddenDim()), rng);
    return new ModelWeights(spec, 0, p);
  }

  private static void fill(float[] p, int from, int to, double std, Random rng) {
    for (int i = from; i < to; i++) {
      p[i] = (float) (rng.nextGaussian() * std);
    }
  }

  /** The number that identifies this policy; trajectories record the version that sampled them. */
  public long version() {
    return version;
  }

  public ModelSpec spec() {
    return spec;
  }

  /** The flat parameter vector, shared: do not mutate (see the class comment). */
  public float[] params() {
    return params;
  }

  /** {@return the parameters' size in bytes (4 per float): what a refit moves} */
  public long byteSize() {
    return (long) params.length * Float.BYTES;
  }

  /**
   * The SHA-256 of the parameters (each float's IEEE 754 bits, big-endian, in order), in hex: two runs whose
   * weights are bit-identical have the same digest, whatever their version.
   */
  public String sha256() {
    java.nio.ByteBuffer b = java.nio.ByteBuffer.allocate(params.length * Float.BYTES);
    for (float p : params) {
      b.putInt(Float.floatToRawIntBits(p));
    }
    try {
      return java.util.HexFormat.of().formatHex(java.security.MessageDigest.getInstance("SHA-256").digest(b.array()));
    } catch (java.security.NoSuchAlgorithmException e) {
      throw new IllegalStateException("no SHA-256 in this JVM", e);
    }
  }

  /** The same parameters (shared, not copied) under version {@code v}. */
  public ModelWeights withVersion(long v) {
    if (v < 0) {
      throw new IllegalArgumentException("version must be >= 0, got " + v);
    }
    return new ModelWeights(spec, v, params);
  }

  private static void check(ModelSpec spec, long version, float[] params) {
    if (version < 0) {
      throw new IllegalArgumentException("version must be >= 0, got " + version);
    }
    if (params.length != spec.parameterCount()) {
      throw new IllegalArgumentException(
          "params: length " + params.length + " does not match " + spec.parameterCount() + " of " + spec);
    }
    for (int i = 0; i < params.length; i++) {
      if (!Float.isFinite(params[i])) {
        throw new IllegalArgumentException("params[" + i + "] is not finite: " + params[i]);
      }
    }
  }

  private void readObject(ObjectInputStream in) throws IOException, ClassNotFoundException {
    in.defaultReadObject();
    if (spec == null || params == null) {
      throw new InvalidObjectException("spec and params are required");
    }
    try {
      check(spec, version, params);
    } catch (IllegalArgumentException e) {
      throw new InvalidObjectException(e.getMessage());
    }
  }

  @Override
  public String toString() {
    return "ModelWeights{version=" + version + ", " + spec + "}";
  }
}
