package dev.ravel.workers.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import org.junit.jupiter.api.Test;

final class AdamWTest {
  @Test
  void step_firstStepMovesEachParameterByLearningRateAgainstItsGradientSign() {
    AdamW adam = AdamW.builder().learningRate(0.1).build(3);
    float[] p = {1f, 1f, 1f};

    adam.step(p, new float[] {0.5f, -2f, 1e-3f});

    assertThat(p[0]).isCloseTo(0.9f, within(1e-5f));
    assertThat(p[1]).isCloseTo(1.1f, within(1e-5f));
    assertThat(p[2]).isCloseTo(0.9f, within(1e-4f));
    assertThat(adam.steps()).isEqualTo(1);
  }

  @Test
  void step_minimisesAQuadratic() {
    AdamW adam = AdamW.builder().learningRate(0.05).build(2);
    float[] p = {3f, -2f};
    for (int i = 0; i < 500; i++) {
      adam.step(p, new float[] {2 * (p[0] - 1), 2 * (p[1] + 0.5f)});
    }
    assertThat(p[0]).isCloseTo(1f, within(0.02f));
    assertThat(p[1]).isCloseTo(-0.5f, within(0.02f));
  }

  @Test
  void step_clipsToMaxGradNormAndReportsTheNormBeforeClipping() {
    AdamW adam = AdamW.builder().learningRate(0.1).maxGradNorm(1).build(2);
    float[] grad = {3f, 4f};

    double norm = adam.step(new float[2], grad);

    assertThat(norm).isCloseTo(5.0, within(1e-9));
    assertThat(AdamW.globalNorm(grad)).isCloseTo(1.0, within(1e-6));
  }

  @Test
  void step_weightDecayShrinksParametersWithoutGradient() {
    AdamW adam = AdamW.builder().learningRate(0.1).weightDecay(0.5).build(1);
    float[] p = {2f};

    adam.step(p, new float[1]);

    assertThat(p[0]).isCloseTo(2f * (1 - 0.1f * 0.5f), within(1e-6f));
  }

  @Test
  void step_nonFiniteGradientIsRejectedWithoutTouchingParameters() {
    AdamW adam = AdamW.builder().build(2);
    float[] p = {1f, 2f};

    assertThatThrownBy(() -> adam.step(p, new float[] {Float.NaN, 0f})).hasMessageStartingWith("grad");
    assertThat(p).containsExactly(1f, 2f);
    assertThat(adam.steps()).isZero();
  }

  @Test
  void build_invalidValuesNameTheField() {
    assertThatThrownBy(() -> AdamW.builder().learningRate(0).build(1)).hasMessageStartingWith("learningRate");
    assertThatThrownBy(() -> AdamW.builder().betas(1, 0.9).build(1)).hasMessageStartingWith("beta1");
    assertThatThrownBy(() -> AdamW.builder().betas(0.9, -0.1).build(1)).hasMessageStartingWith("beta2");
    assertThatThrownBy(() -> AdamW.builder().eps(0).build(1)).hasMessageStartingWith("eps");
    assertThatThrownBy(() -> AdamW.builder().weightDecay(-1).build(1)).hasMessageStartingWith("weightDecay");
    assertThatThrownBy(() -> AdamW.builder().maxGradNorm(-1).build(1)).hasMessageStartingWith("maxGradNorm");
  }
}
