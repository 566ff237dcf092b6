package dev.ravel.workers.python;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ravel.telemetry.sdk.ExportStats;
import dev.ravel.workers.engine.EngineStats;
import dev.ravel.workers.engine.FinishReason;
import dev.ravel.workers.engine.GenerationRequest;
import dev.ravel.workers.engine.GenerationResult;
import dev.ravel.workers.engine.SamplingParams;
import dev.ravel.workers.grpo.Trajectory;
import dev.ravel.workers.trainer.LogProbSummary;
import dev.ravel.workers.trainer.TrainOutcome;
import io.ray.api.ObjectRef;
import java.lang.reflect.Type;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class PythonWireTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final PythonWire WIRE = PythonWire.INSTANCE;

  @Test
  void encodeArgs_requestsInTheirSnakeCaseWireForm() throws Exception {
    GenerationRequest r = GenerationRequest.of("s1-p0-2", new int[] {1, 10, 2, 12},
        SamplingParams.builder().maxTokens(4).temperature(0.7).topP(0.9).seed(42).build(), null);

    JsonNode a = JSON.readTree(WIRE.encodeArgs(new Object[] {List.of(r)}, new ArrayList<>()));

    assertThat(a.size()).isEqualTo(1);
    JsonNode req = a.get(0).get(0);
    assertThat(req.get("request_id").asText()).isEqualTo("s1-p0-2");
    assertThat(req.get("prompt_tokens").toString()).isEqualTo("[1,10,2,12]");
    assertThat(req.get("params").toString())
        .isEqualTo("{\"max_tokens\":4,\"temperature\":0.7,\"top_p\":0.9,\"seed\":42}");
  }

  @Test
  void encodeArgs_problemsCarryTheirMetadataAndCompletionsTheirTokens() throws Exception {
    dev.ravel.workers.task.Problem p = new dev.ravel.workers.task.Problem("3+4=", "7", "{\"level\":\"hard\"}");

    JsonNode a = JSON.readTree(WIRE.encodeArgs(new Object[] {List.of(p), List.of(new int[] {5, 1})}, new ArrayList<>()));

    assertThat(a.get(0).get(0).toString()).isEqualTo("{\"prompt\":\"3+4=\",\"answer\":\"7\",\"metadata\":{\"level\":\"hard\"}}");
    assertThat(a.get(1).toString()).isEqualTo("[[5,1]]");
  }

  @Test
  void decode_exportStatsPerExporterAsTheJavaCountersKeepThem() throws Exception {
    dev.ravel.telemetry.sdk.ExportStats s = (dev.ravel.telemetry.sdk.ExportStats) WIRE.decode(JSON.readTree(
        "{\"ended\":5,\"exported\":8,\"failed\":1,\"dropped\":1,\"exporters\":{\"file\":{\"exported\":4,"
        + "\"failed\":0,\"dropped\":1},\"otlp\":{\"exported\":4,\"failed\":1,\"dropped\":1}}}"),
        dev.ravel.telemetry.sdk.ExportStats.class);

    assertThat(s.ended()).isEqualTo(5);
    assertThat(s.exporters()).containsOnlyKeys("file", "otlp");
    assertThat(s.exporters().get("file")).isEqualTo(new dev.ravel.telemetry.sdk.ExportStats.Sent(4, 0, 1));
    assertThat(s.exporters().get("otlp")).isEqualTo(new dev.ravel.telemetry.sdk.ExportStats.Sent(4, 1, 1));
  }

  @Test
  void decode_rewardScoresWithTextsComponentsAndFailures() throws Exception {
    dev.ravel.workers.reward.RewardScores s = (dev.ravel.workers.reward.RewardScores) WIRE.decode(JSON.readTree(
        "{\"rewards\":[1.5,0.5],\"texts\":[\"7\",\"8\"],\"components\":{\"exact\":[1,0],\"short\":[0.5,0.5]},"
            + "\"failed\":0}"), dev.ravel.workers.reward.RewardScores.class);

    assertThat(s.rewards()).containsExactly(1.5, 0.5);
    assertThat(s.texts()).containsExactly("7", "8");
    assertThat(s.components()).containsOnlyKeys("exact", "short");
    assertThat(s.components().get("exact")).containsExactly(1.0, 0.0);
    org.assertj.core.api.Assertions.assertThatThrownBy(() -> WIRE.decode(JSON.readTree(
        "{\"rewards\":[1.0],\"texts\":[],\"failed\":0}"), dev.ravel.workers.reward.RewardScores.class))
        .hasMessageContaining("0 texts for 1 rewards");
  }

  @Test
  void decode_scoresAsDoublesAndANonNumberNamed() throws Exception {
    assertThat((double[]) WIRE.decode(JSON.readTree("[1.0, 0, 0.5]"), double[].class)).containsExactly(1.0, 0.0, 0.5);
    org.assertj.core.api.Assertions.assertThatThrownBy(() -> WIRE.decode(JSON.readTree("[1.0, \"x\"]"), double[].class))
        .hasMessageContaining("expected a number, got STRING");
  }

  @Test
  void encodeArgs_trajectoriesCarryEveryField() throws Exception {
    Trajectory t = new Trajectory("s0-p1-3", new int[] {4, 10, 4, 12}, new int[] {8, 13}, new float[] {-0.5f, -0.25f},
        1.0, 3, 3);

    JsonNode o = JSON.readTree(WIRE.encodeArgs(new Object[] {List.of(t)}, new ArrayList<>())).get(0).get(0);

    assertThat(o.get("request_id").asText()).isEqualTo("s0-p1-3");
    assertThat(o.get("prompt").toString()).isEqualTo("[4,10,4,12]");
    assertThat(o.get("completion").toString()).isEqualTo("[8,13]");
    assertThat(o.get("logprobs").toString()).isEqualTo("[-0.5,-0.25]");
    assertThat(o.get("reward").asDouble()).isEqualTo(1.0);
    assertThat(o.get("weight_version").asLong()).isEqualTo(3);
    assertThat(o.get("group_index").asInt()).isEqualTo(3);
  }

  @Test
  void encodeArgs_objectRefsTravelBesideTheJsonByIndex() throws Exception {
    ObjectRef<String> first = new FakeRef();
    ObjectRef<String> second = new FakeRef();
    List<ObjectRef<?>> refs = new ArrayList<>();

    String json = WIRE.encodeArgs(new Object[] {first, 5L, second}, refs);

    assertThat(json).isEqualTo("[{\"$ref\":0},5,{\"$ref\":1}]");
    assertThat(refs).containsExactly(first, second);
  }

  @Test
  void encodeArgs_aValueWithoutWireForm_isRefusedByItsType() {
    assertThatThrownBy(() -> WIRE.encodeArgs(new Object[] {new StringBuilder("x")}, new ArrayList<>()))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("java.lang.StringBuilder");
  }

  @Test
  void decode_resultsInRequestOrder() throws Exception {
    String json = "[{\"request_id\":\"a\",\"prompt_tokens\":[1,10,2,12],\"completion_tokens\":[3,13],"
        + "\"logprobs\":[-0.1,-0.2],\"finish_reason\":\"stop\",\"weight_version\":4,\"stats\":{"
        + "\"arrival_epoch_nanos\":10,\"scheduled_epoch_nanos\":11,\"first_token_epoch_nanos\":12,"
        + "\"finish_epoch_nanos\":15,\"prefill_nanos\":1,\"decode_nanos\":3,\"preemptions\":0,\"prompt_tokens\":4,"
        + "\"completion_tokens\":2},\"traced\":true,\"error\":null},"
        + "{\"request_id\":\"b\",\"prompt_tokens\":[1],\"completion_tokens\":[],\"logprobs\":[],"
        + "\"finish_reason\":\"error\",\"weight_version\":-1,\"stats\":{\"arrival_epoch_nanos\":10,"
        + "\"scheduled_epoch_nanos\":0,\"first_token_epoch_nanos\":0,\"finish_epoch_nanos\":11,\"prefill_nanos\":0,"
        + "\"decode_nanos\":0,\"preemptions\":0,\"prompt_tokens\":1,\"completion_tokens\":0},\"traced\":false,"
        + "\"error\":\"token 99 is outside the vocabulary\"}]";
    Type type = Holder.class.getMethod("results").getGenericReturnType();

    @SuppressWarnings("unchecked")
    List<GenerationResult> out = (List<GenerationResult>) WIRE.decode(json.getBytes(StandardCharsets.UTF_8), type);

    assertThat(out).hasSize(2);
    GenerationResult a = out.get(0);
    assertThat(a.requestId()).isEqualTo("a");
    assertThat(a.completionTokens()).containsExactly(3, 13);
    assertThat(a.logprobs()).containsExactly(-0.1f, -0.2f);
    assertThat(a.finishReason()).isEqualTo(FinishReason.STOP);
    assertThat(a.weightVersion()).isEqualTo(4);
    assertThat(a.stats().completionTokens()).isEqualTo(2);
    assertThat(a.traced()).isTrue();
    assertThat(a.error()).isNull();
    assertThat(out.get(1).succeeded()).isFalse();
    assertThat(out.get(1).error()).isEqualTo("token 99 is outside the vocabulary");
  }

  @Test
  void decode_resultsInTheirBinaryForm_theContractsGoldenBytes() throws Exception {
    // what a Python worker answers generate with (ravel_workers.wire.results), checked against its JSON form
    com.fasterxml.jackson.databind.JsonNode golden = dev.ravel.telemetry.contract.Contract.section("result_wire")
        .get("golden");
    Type type = Holder.class.getMethod("results").getGenericReturnType();
    @SuppressWarnings("unchecked")
    List<GenerationResult> binary = (List<GenerationResult>) WIRE.decode(
        java.util.HexFormat.of().parseHex(golden.get("hex").asText()), type);
    @SuppressWarnings("unchecked")
    List<GenerationResult> json = (List<GenerationResult>) decode(golden.get("results").toString(), type);
    assertThat(binary).hasSize(2);
    for (int i = 0; i < 2; i++) {
      assertThat(binary.get(i).toString()).isEqualTo(json.get(i).toString());
      assertThat(binary.get(i).promptTokens()).containsExactly(json.get(i).promptTokens());
      assertThat(binary.get(i).logprobs()).containsExactly(json.get(i).logprobs());
      assertThat(binary.get(i).stats().firstTokenEpochNanos()).isEqualTo(json.get(i).stats().firstTokenEpochNanos());
    }
    // and what a Java worker answers with is the same bytes
    assertThat(java.util.HexFormat.of().formatHex(dev.ravel.workers.engine.ResultWire.encode(json)))
        .isEqualTo(golden.get("hex").asText());
    assertThatThrownBy(() -> WIRE.decode(dev.ravel.workers.engine.ResultWire.encode(json), EngineStats.class))
        .hasMessageContaining("generation results where");
  }

  @Test
  void decode_statsSummariesAndOutcomes() {
    EngineStats e = (EngineStats) decode("{\"finished\":{\"stop\":5,\"length\":2,\"abort\":0,\"error\":1},"
        + "\"preemptions\":0,\"running\":1,\"waiting\":2,\"kv_tokens_used\":3,\"kv_token_budget\":4,"
        + "\"prompt_tokens\":32,\"generation_tokens\":17,\"spans_kept\":6,\"spans_sampled_out\":2,"
        + "\"queue_nanos\":1500,\"queue_count\":8,\"load_seconds\":2.5,\"running_seconds\":1.25,"
        + "\"waiting_seconds\":0.5,\"kv_token_seconds\":40.0}", EngineStats.class);
    assertThat(e.requestsFinished(FinishReason.STOP)).isEqualTo(5);
    assertThat(e.queueNanos()).isEqualTo(1500);
    assertThat(e.queueCount()).isEqualTo(8);
    assertThat(new double[] {e.loadSeconds(), e.runningSeconds(), e.waitingSeconds(), e.kvTokenSeconds()})
        .containsExactly(2.5, 1.25, 0.5, 40.0);
    assertThat(e.requestsFinishedTotal()).isEqualTo(8);
    assertThat(e.generationTokens()).isEqualTo(17);
    assertThat(e.spansKept()).isEqualTo(6);

    ExportStats x = (ExportStats) decode("{\"ended\":9,\"exported\":7,\"failed\":1,\"dropped\":1}", ExportStats.class);
    assertThat(x.pending()).isZero();
    assertThat(x.exported()).isEqualTo(7);

    LogProbSummary l = (LogProbSummary) decode("{\"policy\":-1.5,\"reference\":-1.25,\"kl\":0.01,\"tokens\":64}",
        LogProbSummary.class);
    assertThat(l).isEqualTo(new LogProbSummary(-1.5, -1.25, 0.01, 64));

    StringBuilder json = new StringBuilder("{");
    List<String> fields = PythonWire.trainMetricsFields();
    for (int i = 0; i < fields.size(); i++) {
      json.append(i == 0 ? "" : ",").append('"').append(fields.get(i)).append("\":").append(i + 1);
    }
    TrainOutcome t = (TrainOutcome) decode(json.append('}').toString(), TrainOutcome.class);
    assertThat(t.weights()).isNull();
    assertThat(t.version()).isEqualTo(1);
    assertThat(t.metrics().loss()).isEqualTo(2.0);
    assertThat(t.metrics().sequences()).isEqualTo(fields.size());
    assertThat(fields).contains("clip_fraction", "grad_norm", "zero_advantage_groups");
    assertThat(decode("7", long.class)).isEqualTo(7L);
  }

  @Test
  void decode_int_readsAnIntAndRefusesOneTooLarge() {
    assertThat(decode("2", int.class)).isEqualTo(2);
    assertThat(decode("2", Integer.class)).isEqualTo(2);
    assertThatThrownBy(() -> decode("4294967296", int.class)).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("expected an int");
  }

  @Test
  void decode_aMissingField_isNamed() {
    assertThatThrownBy(() -> decode("{\"ended\":1,\"exported\":1,\"failed\":0}", ExportStats.class))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'dropped'")
        .hasMessageContaining("ExportStats");
  }

  @Test
  void decode_notJson_saysWhatWasExpected() {
    assertThatThrownBy(() -> WIRE.decode(new byte[] {0, 1, 2}, EngineStats.class))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("not JSON")
        .hasMessageContaining("EngineStats");
  }

  @Test
  void decode_aTypeWithoutWireForm_isRefused() {
    assertThatThrownBy(() -> decode("{}", StringBuilder.class)).hasMessageContaining("has no JSON wire form");
  }

  private static Object decode(String json, Type type) {
    return WIRE.decode(json.getBytes(StandardCharsets.UTF_8), type);
  }

  interface Holder {
    List<GenerationResult> results();
  }

  private static final class FakeRef implements ObjectRef<String> {
    @Override
    public String get() {
      return "x";
    }

    @Override
    public String get(long timeoutMs) {
      return "x";
    }
  }
}
