package dev.ravel.workers.model;

import java.util.Objects;

/**
 * Adam with decoupled weight decay (Loshchilov &amp; Hutter) over one flat parameter vector, with optional
 * clipping of the gradient by its global L2 norm. Per step, with {@code g} the (clipped) gradient:
 * <pre>
 *   m = b1 m + (1 - b1) g;   v = b2 v + (1 - b2) g^2
 *   p -= lr * ( m / (1 - b1^t) / (sqrt(v / (1 - b2^t)) + eps) + weightDecay * p )
 * </pre>
 * Stateful (the moments and the step count) and not thread-safe; one instance per parameter vector.
 */
public final class AdamW {
  private final double learningRate;
  private final double beta1;
  private final double beta2;
  private final double eps;
  private final double weightDecay;
  private final double maxGradNorm;
  private final float[] m;
  private final float[] v;
  private long steps;

  private AdamW(Builder b, int size) {
    this.learningRate = b.learningRate;
    this.beta1 = b.beta1;
    this.beta2 = b.beta2;
    this.eps = b.eps;
    this.weightDecay = b.weightDecay;
    this.maxGradNorm = b.maxGradNorm;
    this.m = new float[size];
    this.v = new float[size];
  }

  public static Builder builder() {
    return new Builder();
  }

  /** Steps taken so far. */
  public long steps() {
    return steps;
  }

  /** A copy of the moment estimates and the step count, for a checkpoint. */
  public synchronized State state() {
    return new State(m.clone(), v.clone(), steps);
  }

  /**
   * Continues from {@code state} (a checkpoint's): the next {@link #step} is exactly the one this optimizer
   * would have taken had it not stopped.
   *
   * @throws IllegalArgumentException when the state is for another parameter count
   */
  public synchronized void restore(State state) {
    if (state.m().length != m.length || state.v().length != v.length) {
      throw new IllegalArgumentException("state: " + state.m().length + " moments for an optimizer of size " + m.length);
    }
    System.arraycopy(state.m(), 0, m, 0, m.length);
    System.arraycopy(state.v(), 0, v, 0, v.length);
    steps = state.steps();
  }

  /** The optimizer's state: first and second moment estimates and the steps taken. */
  public record State(float[] m, float[] v, long steps) implements java.io.Serializable {}

  /** Length of the parameter vector this optimizer is for. */
  public int size() {
    return m.length;
  }

  /**
   * Updates {@code params} in place from {@code grad} (which is scaled in place when clipping applies) and
   * returns the global L2 norm of the gradient before clipping. A non-finite gradient norm is an
   * {@link IllegalArgumentException} and leaves params and state unchanged.
   */
  public double step(float[] params, float[] grad) {
    return step(params, grad, learningRate);
  }

  /**
   * As {@link #step(float[], float[])} with the step size {@code lr} for this step (a schedule's value) instead
   * of the built one.
   */
  public double step(float[] params, float[] grad, double lr) {
    if (!(lr >= 0) || Double.isInfinite(lr)) {
      throw new IllegalArgumentException("lr must be finite and >= 0, got " + lr);
    }
    Objects.requireNonNull(params, "params");
    Objects.requireNonNull(grad, "grad");
    if (params.length != m.length || grad.length != m.length) {
      throw new IllegalArgumentException("params/grad: lengths " + params.length + "/" + grad.length
          + " do not match the optimizer size " + m.length);
    }
    double norm = globalNorm(grad);
    if (!Double.isFinite(norm)) {
      throw new IllegalArgumentException("grad: global norm is not finite: " + norm);
    }
    float scale = maxGradNorm > 0 && norm > maxGradNorm ? (float) (maxGradNorm / norm) : 1f;
    steps++;
    double c1 = 1 - Math.pow(beta1, steps);
    double c2 = 1 - Math.pow(beta2, steps);
    for (int i = 0; i < params.length; i++) {
      float g = grad[i] * scale;
      grad[i] = g;
      m[i] = (float) (beta1 * m[i] + (1 - beta1) * g);
      v[i] = (float) (beta2 * v[i] + (1 - beta2) * g * g);
      double update = (m[i] / c1) / (Math.sqrt(v[i] / c2) + eps) + weightDecay * params[i];
      params[i] = (float) (params[i] - lr * update);
    }
    return norm;
  }

  /** The L2 norm of {@code g}. */
  public static double globalNorm(float[] g) {
    double s = 0;
    for (float x : g) {
      s += (double) x * x;
    }
    return Math.sqrt(s);
  }

  /** Hyper-parameters of an {@link AdamW}; {@link #build(int)} validates them. */
  public static final class Builder {
    private double learningRate = 1e-3;
    private double beta1 = 0.9;
    private double beta2 = 0.999;
    private double eps = 1e-8;
    private double weightDecay = 0;
    private double maxGradNorm = 0;

    private Builder() {}

    /** Step size; default 1e-3. */
    public Builder learningRate(double v) {
      this.learningRate = v;
      return this;
    }

    /** Decay rates of the first and second moment; default 0.9 and 0.999. */
    public Builder betas(double b1, double b2) {
      this.beta1 = b1;
      this.beta2 = b2;
      return this;
    }

    /** Added to the root of the second moment; default 1e-8. */
    public Builder eps(double v) {
      this.eps = v;
      return this;
    }

    /** Decoupled weight decay per unit learning rate; default 0. */
    public Builder weightDecay(double v) {
      this.weightDecay = v;
      return this;
    }

    /** Clip the gradient to this global L2 norm; 0 (the default) disables clipping. */
    public Builder maxGradNorm(double v) {
      this.maxGradNorm = v;
      return this;
    }

    /** An optimizer for a parameter vector of length {@code size}, with zero moments. */
    public AdamW build(int size) {
      if (size < 0) {
        throw new IllegalArgumentException("size must be >= 0, got " + size);
      }
      positive("learningRate", learningRate);
      if (!(beta1 >= 0 && beta1 < 1)) {
        throw new IllegalArgumentException("beta1 must be in [0, 1), got " + beta1);
      }
      if (!(beta2 >= 0 && beta2 < 1)) {
        throw new IllegalArgumentException("beta2 must be in [0, 1), got " + beta2);
      }
      positive("eps", eps);
      nonNegative("weightDecay", weightDecay);
      nonNegative("maxGradNorm", maxGradNorm);
      return new AdamW(this, size);
    }

    private static void positive(String field, double value) {
      if (!(value > 0) || Double.isInfinite(value)) {
        throw new IllegalArgumentException(field + " must be finite and > 0, got " + value);
      }
    }

    private static void nonNegative(String field, double value) {
      if (!(value >= 0) || Double.isInfinite(value)) {
        throw new IllegalArgumentException(field + " must be finite and >= 0, got " + value);
      }
    }
  }
}
