package dev.ravel.it.bench;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ravel.it.support.RavelCommand;
import dev.ravel.it.support.SharedRayHead;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code ravel bench-calls} with its fan-out part, on a real head: echo calls through Ravel and plain Ray, then
 * fan-outs to two Java and two Python spinners through Ravel ({@code ravel_checks.fanout.Spinner}, a role) and
 * plain Ray (a cross-language call to {@code PlainSpinner}). What a reader of the report relies on: every round of
 * every side is there, and each hop is at least 1 (the driver waited at least as long as the slowest body it
 * timed), so the ratio compares two real measurements.
 */
final class BenchCallsIT {
  @TempDir
  Path dir;

  @Test
  void benchCalls_fanout_reportsEveryRoundOfBothSidesInBothLanguages() throws Exception {
    Path json = dir.resolve("calls.json");
    RavelCommand.Result r = RavelCommand.run(SharedRayHead.env(), 600, "bench-calls", "--calls", "20",
        "--warmup-calls", "20", "--rounds", "2", "--generation-rounds", "0", "--fanout-actors", "2",
        "--fanout-calls", "3", "--fanout-spin-ms", "5", "--fanout-result-chars", "3000",
        "--runs-dir", dir.resolve("runs").toString(), "--json", json.toString());
    assertThat(r.exitCode()).as("stdout:%n%s%nstderr:%n%s", r.stdout(), r.stderr()).isZero();
    JsonNode fanout = new ObjectMapper().readTree(json.toFile()).path("fanout");
    assertThat(fanout.path("actors").asInt()).isEqualTo(2);
    assertThat(fanout.path("spin_ms").asDouble()).isEqualTo(5.0);
    for (String language : new String[] {"java", "python"}) {
      JsonNode l = fanout.path(language);
      for (String side : new String[] {"ravel_hop_per_round", "plain_hop_per_round"}) {
        assertThat(l.path(side)).as("%s %s", language, side).hasSize(2);
        l.path(side).forEach(h -> assertThat(h.asDouble()).as("%s %s", language, side).isGreaterThanOrEqualTo(1.0));
      }
      assertThat(l.path("ravel_over_plain").path("per_round")).hasSize(2);
      assertThat(l.path("ravel_over_plain").path("value").asDouble()).isPositive();
    }
    assertThat(r.stdout()).contains("fan-out java (2 actors, 5.0 ms bodies): hop through Ravel / plain Ray")
        .contains("fan-out python (2 actors, 5.0 ms bodies): hop through Ravel / plain Ray");
  }
}
