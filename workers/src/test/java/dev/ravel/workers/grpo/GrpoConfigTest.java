package dev.ravel.workers.grpo;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.util.function.UnaryOperator;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

final class GrpoConfigTest {
  @Test
  void defaults_areThoseOfTheGrpoPaperWhereItGivesThem() {
    GrpoConfig c = GrpoConfig.builder().build();

    assertThat(c.groupSize()).isEqualTo(8);
    assertThat(c.clipEpsilonLow()).isEqualTo(0.2);
    assertThat(c.clipEpsilonHigh()).isEqualTo(0.2);
    assertThat(c.lossType()).isEqualTo(LossType.GRPO);
    assertThat(c.scaleRewards()).isEqualTo(RewardScale.GROUP);
    assertThat(c.klEstimator()).isEqualTo(KlEstimator.K3);
    assertThat(c.ppoEpochs()).isEqualTo(1);
    assertThat(c.lrSchedule()).isEqualTo(LrSchedule.CONSTANT);
    assertThat(c.klBeta()).isEqualTo(0.04);
    assertThat(c.temperature()).isEqualTo(1.0);
    assertThat(c.advantageEps()).isEqualTo(1e-6);
    assertThat(c.batchSize()).isEqualTo(c.promptsPerStep() * 8);
  }

  static Stream<Arguments> invalid() {
    return Stream.of(
        Arguments.of("groupSize", (UnaryOperator<GrpoConfig.Builder>) b -> b.groupSize(1)),
        Arguments.of("clipEpsilonLow", (UnaryOperator<GrpoConfig.Builder>) b -> b.clipEpsilon(0)),
        Arguments.of("clipEpsilonHigh", (UnaryOperator<GrpoConfig.Builder>) b -> b.clipEpsilonLow(0.3).clipEpsilonHigh(0.2)),
        Arguments.of("clipRatioC", (UnaryOperator<GrpoConfig.Builder>) b -> b.clipRatioC(0.5)),
        Arguments.of("ppoEpochs", (UnaryOperator<GrpoConfig.Builder>) b -> b.ppoEpochs(0)),
        Arguments.of("microBatchSize", (UnaryOperator<GrpoConfig.Builder>) b -> b.promptsPerStep(3).groupSize(4)
            .microBatchSize(5)),
        Arguments.of("warmupSteps", (UnaryOperator<GrpoConfig.Builder>) b -> b.totalSteps(10).warmupSteps(11)),
        Arguments.of("tisCap", (UnaryOperator<GrpoConfig.Builder>) b -> b.tisCap(-1)),
        Arguments.of("maxNewTokens", (UnaryOperator<GrpoConfig.Builder>) b -> b.maxNewTokens(0)),
        Arguments.of("lossType", (UnaryOperator<GrpoConfig.Builder>) b -> b.lossType(null)),
        Arguments.of("klBeta", (UnaryOperator<GrpoConfig.Builder>) b -> b.klBeta(-0.1)),
        Arguments.of("learningRate", (UnaryOperator<GrpoConfig.Builder>) b -> b.learningRate(Double.NaN)),
        Arguments.of("weightDecay", (UnaryOperator<GrpoConfig.Builder>) b -> b.weightDecay(-1)),
        Arguments.of("maxGradNorm", (UnaryOperator<GrpoConfig.Builder>) b -> b.maxGradNorm(-1)),
        Arguments.of("temperature", (UnaryOperator<GrpoConfig.Builder>) b -> b.temperature(-1)),
        Arguments.of("advantageEps", (UnaryOperator<GrpoConfig.Builder>) b -> b.advantageEps(0)),
        Arguments.of("promptsPerStep", (UnaryOperator<GrpoConfig.Builder>) b -> b.promptsPerStep(0)));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("invalid")
  void build_invalidValueNamesTheField(String field, UnaryOperator<GrpoConfig.Builder> change) {
    assertThatThrownBy(() -> change.apply(GrpoConfig.builder()).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageStartingWith(field);
  }

  @Test
  void serialization_roundTripIsEqual() throws Exception {
    GrpoConfig c = GrpoConfig.builder().groupSize(4).seed(99).learningRate(0.005).build();
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (ObjectOutputStream out = new ObjectOutputStream(bytes)) {
      out.writeObject(c);
    }
    try (ObjectInputStream in = new ObjectInputStream(new ByteArrayInputStream(bytes.toByteArray()))) {
      assertThat(in.readObject()).isEqualTo(c);
    }
  }

  @Test
  void toBuilder_changesOnlyWhatIsSet() {
    GrpoConfig c = GrpoConfig.builder().groupSize(4).seed(99).build();

    GrpoConfig d = c.toBuilder().seed(100).build();

    assertThat(d.groupSize()).isEqualTo(4);
    assertThat(d.seed()).isEqualTo(100);
    assertThat(d).isNotEqualTo(c);
    assertThat(d.toBuilder().seed(99).build()).isEqualTo(c);
  }
}
