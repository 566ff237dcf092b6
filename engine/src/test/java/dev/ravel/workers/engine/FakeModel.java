package dev.ravel.workers.engine;

import dev.ravel.workers.model.KvCache;
import dev.ravel.workers.model.LanguageModel;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * A deterministic stand-in for a language model: the logits of the next token are a hash of (weight
 * version, last token, position, candidate), so a cache rebuilt over the same tokens gives the same logits
 * (what makes recompute exact) and another version gives other logits. Options: a fixed EOS logit (very
 * low to never stop), a forced token that always wins, a delay per forward call, a hook run on each call.
 */
final class FakeModel implements LanguageModel {
  static final int VOCAB = 16;
  static final int EOS = 0;
  /** An EOS logit that makes stopping practically impossible. */
  static final float NEVER = -100f;

  private final long version;
  private final float eosLogit;
  private final int forced;
  private final long delayNanos;
  private final Runnable hook;
  final AtomicLong forwardCalls = new AtomicLong();

  private FakeModel(long version, float eosLogit, int forced, long delayNanos, Runnable hook) {
    this.version = version;
    this.eosLogit = eosLogit;
    this.forced = forced;
    this.delayNanos = delayNanos;
    this.hook = hook;
  }

  /** Version {@code version}, EOS scored like any other token. */
  static FakeModel of(long version) {
    return new FakeModel(version, Float.NaN, -1, 0, null);
  }

  FakeModel eosLogit(float logit) {
    return new FakeModel(version, logit, forced, delayNanos, hook);
  }

  FakeModel forcing(int token) {
    return new FakeModel(version, eosLogit, token, delayNanos, hook);
  }

  FakeModel delayed(long nanos) {
    return new FakeModel(version, eosLogit, forced, nanos, hook);
  }

  FakeModel onForward(Runnable r) {
    return new FakeModel(version, eosLogit, forced, delayNanos, r);
  }

  static final class Cache implements KvCache {
    int length;
    int last = -1;

    @Override
    public int length() {
      return length;
    }
  }

  @Override
  public int vocabSize() {
    return VOCAB;
  }

  @Override
  public long version() {
    return version;
  }

  @Override
  public KvCache newCache() {
    return new Cache();
  }

  @Override
  public void forward(KvCache cache, int[] tokens, int from, int to, float[] logits) {
    if (to <= from) {
      throw new IllegalArgumentException("empty forward " + from + ".." + to);
    }
    Cache c = (Cache) cache;
    for (int i = from; i < to; i++) {
      c.length++;
      c.last = tokens[i];
    }
    logitsAfter(c.last, c.length, logits);
    forwardCalls.incrementAndGet();
    if (hook != null) {
      hook.run();
    }
    if (delayNanos > 0) {
      LockSupport.parkNanos(delayNanos);
    }
  }

  /** The logits after a sequence of {@code length} tokens ending in {@code last}. */
  void logitsAfter(int last, int length, float[] logits) {
    for (int v = 0; v < VOCAB; v++) {
      long h = mix(version * 0x9E3779B97F4A7C15L ^ (last * 0xC2B2AE3D27D4EB4FL) ^ (length * 0x165667B19E3779F9L)
          ^ (v * 0xD6E8FEB86659FD93L));
      logits[v] = (float) ((h >>> 40) / (double) (1 << 24) * 4.0 - 2.0);
    }
    if (!Float.isNaN(eosLogit)) {
      logits[EOS] = eosLogit;
    }
    if (forced >= 0) {
      logits[forced] = 50f;
    }
  }

  private static long mix(long z) {
    z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
    z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
    return z ^ (z >>> 31);
  }
}
