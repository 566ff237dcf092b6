package dev.ravel.workers.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;

final class TinyLmTest {
  private static final ModelSpec SMALL =
      ModelSpec.builder().vocabSize(6).contextTokens(3).embedDim(4).hiddenDim(5).build();

  @Test
  void forward_prefillThenDecodeMatchesLogitsOfEveryPrefix() {
    TinyLm lm = TinyLm.of(ModelWeights.init(ModelSpec.tiny(14), 7));
    int[] tokens = {3, 10, 4, 12, 7, 13, 0, 9};
    for (int prefill = 1; prefill <= tokens.length; prefill++) {
      KvCache cache = lm.newCache();
      float[] logits = new float[lm.vocabSize()];
      lm.forward(cache, tokens, 0, prefill, logits);
      assertThat(logits).as("prefill of %d", prefill).containsExactly(lm.logits(tokens, prefill));
      for (int len = prefill + 1; len <= tokens.length; len++) {
        lm.forward(cache, tokens, len - 1, len, logits);
        assertThat(cache.length()).isEqualTo(len);
        assertThat(logits).as("prefill %d, decode to %d", prefill, len).containsExactly(lm.logits(tokens, len));
      }
    }
  }

  @Test
  void forward_cacheFilledByOlderWeightsIsReembeddedUnderTheNewOnes() {
    ModelSpec spec = ModelSpec.tiny(14);
    TinyLm before = TinyLm.of(ModelWeights.init(spec, 1));
    TinyLm after = TinyLm.of(ModelWeights.init(spec, 2).withVersion(1));
    int[] tokens = {1, 10, 2, 12, 3};
    KvCache cache = before.newCache();
    float[] logits = new float[14];
    before.forward(cache, tokens, 0, 4, logits);

    after.forward(cache, tokens, 4, 5, logits);

    assertThat(logits).containsExactly(after.logits(tokens, 5));
  }

  @Test
  void logits_differForDifferentContexts() {
    TinyLm lm = TinyLm.of(ModelWeights.init(ModelSpec.tiny(14), 3));

    assertThat(lm.logits(new int[] {1, 10, 2, 12}, 4)).isNotEqualTo(lm.logits(new int[] {2, 10, 1, 12}, 4));
  }

  @Test
  void forward_tokenOutsideVocabularyIsRejectedWithItsIndexAndLeavesTheCacheAlone() {
    TinyLm lm = TinyLm.of(ModelWeights.init(SMALL, 1));
    KvCache cache = lm.newCache();

    assertThatThrownBy(() -> lm.forward(cache, new int[] {1, 6}, 0, 2, new float[6]))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("tokens[1] = 6");
    assertThat(cache.length()).isZero();
  }

  @Test
  void forward_emptyRangeIsRejected() {
    TinyLm lm = TinyLm.of(ModelWeights.init(SMALL, 1));

    assertThatThrownBy(() -> lm.forward(lm.newCache(), new int[] {1}, 1, 1, new float[6]))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("tokens");
  }

  @Test
  void forward_concurrentCallsOnSharedModelAgreeWithSequentialOnes() throws Exception {
    TinyLm lm = TinyLm.of(ModelWeights.init(ModelSpec.tiny(14), 5));
    Random rng = new Random(1);
    List<int[]> sequences = new ArrayList<>();
    for (int i = 0; i < 64; i++) {
      sequences.add(rng.ints(12, 0, 14).toArray());
    }
    ExecutorService pool = Executors.newFixedThreadPool(4);
    try {
      List<Future<float[]>> results = new ArrayList<>();
      for (int[] seq : sequences) {
        results.add(pool.submit(() -> {
          KvCache cache = lm.newCache();
          float[] logits = new float[14];
          for (int t = 1; t <= seq.length; t++) {
            lm.forward(cache, seq, t - 1, t, logits);
          }
          return logits;
        }));
      }
      for (int i = 0; i < sequences.size(); i++) {
        assertThat(results.get(i).get()).containsExactly(lm.logits(sequences.get(i), 12));
      }
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void backward_matchesFiniteDifferencesOfCrossEntropyForEveryParameter() {
    ModelWeights w = ModelWeights.init(SMALL, 11);
    int[] tokens = {2, 5, 0, 3, 1};
    // positions 0..4 include contexts that are entirely or partly PAD

    float[] analytic = crossEntropyGradient(w, tokens);

    float[] p = w.params().clone();
    for (int k = 0; k < p.length; k++) {
      assertClose(k, analytic[k], finiteDifference(w.spec(), p, k, tokens));
    }
  }

  @Test
  void backward_matchesFiniteDifferencesOnTheTinySpec() {
    ModelWeights w = ModelWeights.init(ModelSpec.tiny(14), 4);
    int[] tokens = {3, 10, 4, 12, 7, 13};
    float[] analytic = crossEntropyGradient(w, tokens);
    float[] p = w.params().clone();
    Random rng = new Random(2);
    int checked = 0;
    for (int i = 0; i < 200 && checked < 40; i++) {
      int k = rng.nextInt(p.length);
      if (Math.abs(analytic[k]) > 1e-3) { // a parameter the loss depends on (the others are checked above)
        assertClose(k, analytic[k], finiteDifference(w.spec(), p, k, tokens));
        checked++;
      }
    }
    assertThat(checked).isEqualTo(40);
  }

  private static void assertClose(int k, double analytic, double numeric) {
    assertThat(Math.abs(analytic - numeric))
        .as("param %d: analytic %s vs finite difference %s", k, analytic, numeric)
        .isLessThanOrEqualTo(1e-2 * Math.max(Math.abs(analytic), Math.abs(numeric)) + 2e-4);
  }

  /** dL/dparams of L = sum over positions of -log softmax(logits)[next token]. */
  private static float[] crossEntropyGradient(ModelWeights w, int[] tokens) {
    TinyLm lm = TinyLm.of(w);
    float[] grad = lm.newGradient();
    double[] probs = new double[lm.vocabSize()];
    for (int len = 0; len < tokens.length; len++) {
      TinyLm.Trace trace = lm.trace(tokens, len);
      Sampling.softmax(trace.logits(), 1, probs);
      float[] d = new float[probs.length];
      for (int v = 0; v < d.length; v++) {
        d[v] = (float) (probs[v] - (v == tokens[len] ? 1 : 0));
      }
      trace.backward(d, grad);
    }
    return grad;
  }

  private static double crossEntropy(ModelSpec spec, float[] params, int[] tokens) {
    TinyLm lm = TinyLm.of(ModelWeights.of(spec, 0, params));
    double loss = 0;
    for (int len = 0; len < tokens.length; len++) {
      loss -= Sampling.logProb(lm.logits(tokens, len), tokens[len], 1);
    }
    return loss;
  }

  private static double finiteDifference(ModelSpec spec, float[] p, int k, int[] tokens) {
    float h = 5e-3f;
    float saved = p[k];
    p[k] = saved + h;
    double up = crossEntropy(spec, p.clone(), tokens);
    p[k] = saved - h;
    double down = crossEntropy(spec, p.clone(), tokens);
    p[k] = saved;
    return (up - down) / ((double) (saved + h) - (double) (saved - h));
  }
}
