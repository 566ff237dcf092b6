package dev.ravel.telemetry.view;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Several runs on one page: a series per run and the configuration keys that tell them apart. */
final class RunOverlayTest {
  @TempDir
  Path dir;

  private Path run(String id, int workers, String lr, double... rewards) throws Exception {
    Path d = Files.createDirectories(dir.resolve(id));
    StringBuilder lines = new StringBuilder();
    for (int i = 0; i < rewards.length; i++) {
      lines.append("{\"step\":").append(i + 1).append(",\"mode\":\"sync\",\"rewardMean\":").append(rewards[i])
          .append(",\"rewardStd\":0.1,\"kl\":0.0,\"loss\":0.01,\"clipFraction\":0.0,\"tokens\":100,")
          .append("\"tokensPerSecond\":500.0,\"stepSeconds\":0.").append(i + 1).append(",\"phases\":{},")
          .append("\"weightVersion\":").append(i + 1).append(",\"trajectories\":8,\"droppedForAge\":0,")
          .append("\"rayCalls\":4}\n");
    }
    Files.writeString(d.resolve("steps.jsonl"), lines);
    Files.writeString(d.resolve("run.json"), "{\"run_id\":\"" + id + "\",\"mode\":\"sync\",\"status\":\"succeeded\","
        + "\"started\":\"2026-12-05T08:00:00Z\",\"finished\":\"2026-12-05T08:01:00Z\",\"config\":{"
        + "\"telemetry.run_id\":\"" + id + "\",\"generation.workers\":" + workers + ",\"grpo.learning_rate\":\"" + lr
        + "\",\"grpo.steps\":" + rewards.length + "}}");
    return d;
  }

  @Test
  void of_threeRuns_eachRunsStepsAsOneSeriesAndTheKeysThatDiffer() throws Exception {
    RunOverlay o = RunOverlay.of(List.of(RunReport.read(run("a", 2, "1e-3", 0.1, 0.2, 0.3)),
        RunReport.read(run("b", 1, "1e-3", 0.1, 0.4, 0.5)), RunReport.read(run("c", 2, "1e-3", 0.2, 0.2, 0.2))));

    assertThat(o.runIds()).containsExactly("a", "b", "c");
    assertThat(o.differingKeys()).containsExactly("generation.workers"); // the run id aside, lr and steps agree
    JsonNode runs = o.data().get("runs");
    assertThat(runs).hasSize(3);
    assertThat(runs.get(1).get("id").asText()).isEqualTo("b");
    assertThat(runs.get(1).get("steps")).hasSize(3);
    assertThat(runs.get(1).get("steps").get(2).get("reward_mean").asDouble()).isEqualTo(0.5);

    String page = o.render();
    assertThat(page).contains("<li class=\"run-entry\" data-run=\"a\"").contains("data-run=\"c\"")
        .contains("<tr class=\"config-key\" data-key=\"generation.workers\"><td>generation.workers</td><td>2</td>"
            + "<td>1</td><td>2</td></tr>")
        .contains("id=\"chart-reward\"").contains("id=\"chart-step-time\"");
  }

  @Test
  void of_sameConfigOrUnknownConfig_saysSo() throws Exception {
    RunReport a = RunReport.read(run("a", 2, "1e-3", 0.1));
    RunReport b = RunReport.read(run("b", 2, "1e-3", 0.2));
    assertThat(RunOverlay.of(List.of(a, b)).render()).contains("The same configuration (the run id aside).");

    Files.delete(dir.resolve("b").resolve("run.json"));
    RunOverlay unknown = RunOverlay.of(List.of(a, RunReport.read(dir.resolve("b"))));
    assertThat(unknown.configsKnown()).isFalse();
    assertThat(unknown.render()).contains("Configurations not compared");
  }

  @Test
  void of_oneRunOrARunTwice_isRefusedNamingIt() throws Exception {
    RunReport a = RunReport.read(run("a", 2, "1e-3", 0.1));
    assertThatThrownBy(() -> RunOverlay.of(List.of(a))).hasMessageContaining("2 to 8 runs, got 1");
    assertThatThrownBy(() -> RunOverlay.of(List.of(a, RunReport.read(dir.resolve("a")))))
        .hasMessageContaining("run 'a' is given twice");
  }

  @Test
  void differingKeys_aKeyMissingInOneRunDiffers() {
    assertThat(RunDiff.differingKeys(List.of(java.util.Map.of("x", 1, "y", "s"), java.util.Map.of("x", 1))))
        .containsExactly("y");
  }
}
