package dev.ravel.telemetry.sdk;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

final class ExportStatsTest {
  private static ExportStats of(long ended, ExportStats.Sent file, ExportStats.Sent otlp) {
    Map<String, ExportStats.Sent> m = new LinkedHashMap<>();
    m.put("file", file);
    m.put("otlp", otlp);
    return new ExportStats(ended, m);
  }

  @Test
  void closed_whatEachExporterStillHeldIsDropped_soEachAddsUp() {
    ExportStats s = of(100, new ExportStats.Sent(100, 0, 0), new ExportStats.Sent(30, 20, 5));
    assertThat(s.pending()).isEqualTo(45);
    assertThat(s.addsUp()).isFalse();

    ExportStats c = s.closed();

    assertThat(c.exporters().get("file")).isEqualTo(new ExportStats.Sent(100, 0, 0));
    assertThat(c.exporters().get("otlp")).isEqualTo(new ExportStats.Sent(30, 20, 50));
    assertThat(c.pending()).isZero();
    assertThat(c.addsUp()).isTrue();
  }

  @Test
  void plus_sumsExporterByExporter() {
    ExportStats a = of(10, new ExportStats.Sent(10, 0, 0), new ExportStats.Sent(4, 6, 0));
    ExportStats b = of(5, new ExportStats.Sent(5, 0, 0), new ExportStats.Sent(0, 0, 5));
    ExportStats sum = a.plus(b);
    assertThat(sum.ended()).isEqualTo(15);
    assertThat(sum.exporters().get("otlp")).isEqualTo(new ExportStats.Sent(4, 6, 5));
    assertThat(sum.addsUp()).isTrue();
    assertThat(sum.summary()).isEqualTo("15 ended = 15 exported + 0 failed + 0 dropped (file); "
        + "15 ended = 4 exported + 6 failed + 5 dropped (otlp)");
    // the first exporter's counts are the top-level ones
    assertThat(sum.exported()).isEqualTo(15);
  }

  @Test
  void oneExporterCounts_areTheAllEntry() {
    ExportStats s = new ExportStats(7, 5, 1, 1);
    assertThat(s.exporters()).containsOnlyKeys(ExportStats.ALL_EXPORTERS);
    assertThat(s.exported()).isEqualTo(5);
    assertThat(s.failed()).isEqualTo(1);
    assertThat(s.dropped()).isEqualTo(1);
    assertThat(s.addsUp()).isTrue();
    assertThat(s.json()).containsEntry("ended", 7L);
  }

  @Test
  void fromJson_readsBackWhatJsonWrote() throws Exception {
    ExportStats s = of(12, new ExportStats.Sent(12, 0, 0), new ExportStats.Sent(7, 2, 3));
    com.fasterxml.jackson.databind.ObjectMapper m = new com.fasterxml.jackson.databind.ObjectMapper();
    @SuppressWarnings("unchecked")
    Map<String, Object> back = m.readValue(m.writeValueAsString(s.json()), Map.class);

    ExportStats read = ExportStats.fromJson(back);

    assertThat(read.ended()).isEqualTo(12);
    assertThat(read.exporters()).containsExactlyEntriesOf(s.exporters());
  }

  @Test
  void fromJson_badCount_namesTheField() {
    Map<String, Object> json = Map.of("ended", 3, "exporters", Map.of("file", Map.of("exported", 3, "failed", "0",
        "dropped", 0)));

    org.assertj.core.api.Assertions.assertThatThrownBy(() -> ExportStats.fromJson(json))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("exporters.file.failed");
  }
}
