package dev.ravel.workers.generation.openai;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ravel.workers.engine.FinishReason;
import dev.ravel.workers.engine.GenerationRequest;
import dev.ravel.workers.engine.SamplingParams;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

class CompletionsProtocolTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  private static byte[] bytes(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  @Test
  void requestBody_carriesTokenIdsSamplingAndTokenIdLogprobs() throws Exception {
    GenerationRequest r = GenerationRequest.of("s3-p1-2", new int[] {4, 10, 5},
        SamplingParams.builder().maxTokens(6).temperature(0.7).topP(0.9).seed(42).build(), null);

    JsonNode body = JSON.readTree(CompletionsProtocol.requestBody(r, 4, "ravel-tiny-v3"));

    assertThat(body.get("model").asText()).isEqualTo("ravel-tiny-v3");
    assertThat(body.get("prompt").toString()).isEqualTo("[4,10,5]");
    assertThat(body.get("n").asInt()).isEqualTo(4);
    assertThat(body.get("max_tokens").asInt()).isEqualTo(6);
    assertThat(body.get("temperature").asDouble()).isEqualTo(0.7);
    assertThat(body.get("top_p").asDouble()).isEqualTo(0.9);
    assertThat(body.get("seed").asLong()).isEqualTo(42);
    assertThat(body.get("logprobs").asInt()).isZero();
    assertThat(body.get("return_tokens_as_token_ids").asBoolean()).isTrue();
    assertThat(body.get("stream").asBoolean()).isFalse();
    assertThat(body.has("ignore_eos")).isFalse();
  }

  @Test
  void requestBody_ignoreEos_isSentAsVllmsSamplingExtension() throws Exception {
    GenerationRequest r = GenerationRequest.of("s0-p0-0", new int[] {4},
        SamplingParams.builder().maxTokens(6).ignoreEos(true).build(), null);

    JsonNode body = JSON.readTree(CompletionsProtocol.requestBody(r, 1, "ravel-tiny"));

    assertThat(body.get("ignore_eos").asBoolean()).isTrue();
  }

  @Test
  void parse_vllmResponse_readsTokenIdsLogprobsAndFinishReason() {
    String body = """
        {"id":"cmpl-1","object":"text_completion","created":1,"model":"ravel-tiny-v3",
         "choices":[{"index":0,"text":"12","logprobs":{"text_offset":[0,1,2],
           "token_logprobs":[-0.25,-1.5,-0.125],"tokens":["token_id:1","token_id:2","token_id:13"],
           "top_logprobs":null},"finish_reason":"stop","stop_reason":null}],
         "usage":{"prompt_tokens":3,"total_tokens":6,"completion_tokens":3}}""";

    CompletionsProtocol.Completion c = CompletionsProtocol.parse(bytes(body), 1).get(0);

    assertThat(c.tokens()).containsExactly(1, 2, 13);
    assertThat(c.logprobs()).containsExactly(-0.25f, -1.5f, -0.125f);
    assertThat(c.finishReason()).isEqualTo(FinishReason.STOP);
    assertThat(c.model()).isEqualTo("ravel-tiny-v3");
  }

  @Test
  void parse_lengthFinish_isLength() {
    String body = "{\"choices\":[{\"logprobs\":{\"tokens\":[\"token_id:7\"],\"token_logprobs\":[-1.0]},"
        + "\"finish_reason\":\"length\"}]}";

    assertThat(CompletionsProtocol.parse(bytes(body), 1).get(0).finishReason()).isEqualTo(FinishReason.LENGTH);
  }

  @Test
  void parse_tokensAsText_saysTheServerIgnoredTokenIds() {
    String body = "{\"choices\":[{\"logprobs\":{\"tokens\":[\"1\"],\"token_logprobs\":[-1.0]},"
        + "\"finish_reason\":\"stop\"}]}";

    assertThatThrownBy(() -> CompletionsProtocol.parse(bytes(body), 1))
        .hasMessageContaining("logprobs.tokens[0] is '1'").hasMessageContaining("return_tokens_as_token_ids");
  }

  @Test
  void parse_noLogprobs_saysSo() {
    String body = "{\"choices\":[{\"text\":\"1\",\"logprobs\":null,\"finish_reason\":\"stop\"}]}";

    assertThatThrownBy(() -> CompletionsProtocol.parse(bytes(body), 1)).hasMessageContaining("logprobs.tokens");
  }

  @Test
  void parse_notJson_quotesTheBody() {
    assertThatThrownBy(() -> CompletionsProtocol.parse(bytes("<html>oops</html>"), 1))
        .hasMessageContaining("not JSON").hasMessageContaining("<html>oops</html>");
  }

  @Test
  void parse_mismatchedLogprobs_namesBothLengths() {
    String body = "{\"choices\":[{\"logprobs\":{\"tokens\":[\"token_id:1\",\"token_id:2\"],"
        + "\"token_logprobs\":[-1.0]},\"finish_reason\":\"stop\"}]}";

    assertThatThrownBy(() -> CompletionsProtocol.parse(bytes(body), 1)).hasMessageContaining("2 entries")
        .hasMessageContaining("token_logprobs 1");
  }

  @Test
  void parse_severalChoices_inIndexOrderWhateverTheirOrderInTheBody() {
    String body = "{\"choices\":["
        + "{\"index\":1,\"logprobs\":{\"tokens\":[\"token_id:2\"],\"token_logprobs\":[-2.0]},\"finish_reason\":\"length\"},"
        + "{\"index\":0,\"logprobs\":{\"tokens\":[\"token_id:1\"],\"token_logprobs\":[-1.0]},\"finish_reason\":\"stop\"}]}";

    List<CompletionsProtocol.Completion> c = CompletionsProtocol.parse(bytes(body), 2);

    assertThat(c).extracting(x -> x.tokens()[0]).containsExactly(1, 2);
    assertThat(c).extracting(CompletionsProtocol.Completion::finishReason)
        .containsExactly(FinishReason.STOP, FinishReason.LENGTH);
  }

  @Test
  void parse_fewerChoicesThanAskedFor_saysSo() {
    String body = "{\"choices\":[{\"index\":0,\"logprobs\":{\"tokens\":[\"token_id:1\"],"
        + "\"token_logprobs\":[-1.0]},\"finish_reason\":\"stop\"}]}";

    assertThatThrownBy(() -> CompletionsProtocol.parse(bytes(body), 3)).hasMessageContaining("expected 3 choices");
  }

  @Test
  void parse_repeatedChoiceIndex_saysSo() {
    String choice = "{\"index\":0,\"logprobs\":{\"tokens\":[\"token_id:1\"],\"token_logprobs\":[-1.0]},"
        + "\"finish_reason\":\"stop\"}";

    assertThatThrownBy(() -> CompletionsProtocol.parse(bytes("{\"choices\":[" + choice + "," + choice + "]}"), 2))
        .hasMessageContaining("repeated");
  }

  @Test
  void errorMessage_readsVllmShapes() {
    assertThat(CompletionsProtocol.errorMessage(bytes(
        "{\"error\":{\"message\":\"max_tokens: must be at least 1\",\"type\":\"BadRequestError\",\"code\":400}}")))
        .isEqualTo("max_tokens: must be at least 1");
    assertThat(CompletionsProtocol.errorMessage(bytes(
        "{\"object\":\"error\",\"message\":\"The model `x` does not exist.\",\"code\":404}")))
        .isEqualTo("The model `x` does not exist.");
    assertThat(CompletionsProtocol.errorMessage(bytes("Internal Server Error"))).isEqualTo("Internal Server Error");
  }
}
