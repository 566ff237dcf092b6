package dev.ravel.workers.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import dev.ravel.telemetry.contract.Contract;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The binary wire form of generate results: round trips, the contract's golden bytes, refusals. */
final class ResultWireTest {
  private static final RequestStats STATS = RequestStats.builder().arrivalEpochNanos(1000).scheduledEpochNanos(1100)
      .firstTokenEpochNanos(1500).finishEpochNanos(2000).prefillNanos(300).decodeNanos(500).preemptions(1)
      .promptTokens(4).completionTokens(2).build();

  private static GenerationResult ok() {
    return GenerationResult.builder().requestId("r-1").promptTokens(new int[] {3, 10, 4, 12})
        .completionTokens(new int[] {7, 13}).logprobs(new float[] {-0.25f, -1.5f}).finishReason(FinishReason.STOP)
        .weightVersion(3).stats(STATS).traced(true).build();
  }

  private static GenerationResult failed() {
    return GenerationResult.builder().requestId("r-é").promptTokens(new int[] {1}).completionTokens(new int[0])
        .logprobs(new float[0]).finishReason(FinishReason.ERROR).weightVersion(-1)
        .stats(RequestStats.builder().arrivalEpochNanos(5).finishEpochNanos(9).build())
        .error("token 99 is outside the vocabulary").build();
  }

  /** Every field, as a string: GenerationResult has no equals. */
  static String fields(GenerationResult r) {
    RequestStats s = r.stats();
    return String.join("|", r.requestId(), Arrays.toString(r.promptTokens()), Arrays.toString(r.completionTokens()),
        Arrays.toString(r.logprobs()), r.finishReason().name(), "" + r.weightVersion(), "" + s.arrivalEpochNanos(),
        "" + s.scheduledEpochNanos(), "" + s.firstTokenEpochNanos(), "" + s.finishEpochNanos(), "" + s.prefillNanos(),
        "" + s.decodeNanos(), "" + s.preemptions(), "" + s.promptTokens(), "" + s.completionTokens(),
        "" + r.traced(), String.valueOf(r.error()), r.versionSpans().toString());
  }

  private static List<String> fields(List<GenerationResult> rs) {
    return rs.stream().map(ResultWireTest::fields).toList();
  }

  @Test
  void encodeThenDecode_givesEveryFieldBack_versionSpansIncluded() {
    GenerationResult switched = GenerationResult.builder().requestId("r-2").promptTokens(new int[] {1, 2})
        .completionTokens(new int[] {5, 6, 7}).logprobs(new float[] {-0.1f, Float.NEGATIVE_INFINITY, 0f})
        .finishReason(FinishReason.LENGTH).weightVersion(4).stats(STATS)
        .versionSpans(List.of(new VersionSpan(3, 0, 1), new VersionSpan(4, 1, 3))).build();
    List<GenerationResult> in = List.of(ok(), failed(), switched);
    byte[] bytes = ResultWire.encode(in);
    assertThat(ResultWire.isWire(bytes)).isTrue();
    assertThat(fields(ResultWire.decode(bytes))).containsExactlyElementsOf(fields(in));
    assertThat(ResultWire.decode(ResultWire.encode(List.of()))).isEmpty();
  }

  @Test
  void contractGolden_isWhatJavaEncodesAndDecodes() {
    JsonNode w = Contract.section("result_wire");
    assertThat(w.get("magic").asText()).isEqualTo(ResultWire.MAGIC);
    byte[] golden = HexFormat.of().parseHex(w.get("golden").get("hex").asText());
    assertThat(HexFormat.of().formatHex(ResultWire.encode(List.of(ok(), failed()))))
        .isEqualTo(w.get("golden").get("hex").asText());
    assertThat(fields(ResultWire.decode(golden))).containsExactlyElementsOf(fields(List.of(ok(), failed())));
    assertThat(w.get("golden").get("results").get(0).get("request_id").asText()).isEqualTo("r-1");
  }

  @Test
  void serializableList_travelsAsTheWireForm_andArrivesAsAnArrayList() throws Exception {
    List<GenerationResult> in = ResultWire.serializable(List.of(ok(), failed()));
    assertThat(fields(in)).containsExactlyElementsOf(fields(List.of(ok(), failed())));
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (ObjectOutputStream out = new ObjectOutputStream(bytes)) {
      out.writeObject(in);
    }
    Object back;
    try (ObjectInputStream read = new ObjectInputStream(new ByteArrayInputStream(bytes.toByteArray()))) {
      back = read.readObject();
    }
    assertThat(back).isInstanceOf(ArrayList.class);
    @SuppressWarnings("unchecked")
    List<GenerationResult> got = (List<GenerationResult>) back;
    assertThat(fields(got)).containsExactlyElementsOf(fields(in));
  }

  @Test
  void decode_refusesWhatIsNotTheWireForm() {
    byte[] bytes = ResultWire.encode(List.of(ok()));
    assertThatThrownBy(() -> ResultWire.decode("[]".getBytes())).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("RVG1");
    assertThatThrownBy(() -> ResultWire.decode(Arrays.copyOf(bytes, bytes.length - 3)))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("cut short");
    assertThatThrownBy(() -> ResultWire.decode(Arrays.copyOf(bytes, bytes.length + 1)))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("after the last");
    byte[] huge = bytes.clone();
    huge[4] = (byte) 0xff; // a count no buffer holds
    assertThatThrownBy(() -> ResultWire.decode(huge)).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("invalid count");
    assertThat(ResultWire.isWire(null)).isFalse();
    assertThat(ResultWire.isWire(new byte[] {'R', 'V'})).isFalse();
  }
}
