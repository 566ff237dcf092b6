package dev.ravel.workers.actor;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.lang.reflect.Type;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The JSON wire form of a user's values ({@link JsonWire}), and calls into a Java actor from Python. */
final class JsonWireTest {
  static final ObjectMapper JSON = new ObjectMapper();

  enum Colour { RED, BLUE }

  record Inner(List<String> items, Map<String, Integer> counts) {}

  record Outer(String name, int maxTokens, double temperature, boolean on, Colour colour, Inner inner, int[] ids,
      Set<String> tags, String missing) {}

  @ActorRole(name = "echo", spans = "echo")
  public interface Echo extends RavelRole {
    Outer mirror(Outer value);

    String shout(String text, int times);

    String fail(String why);
  }

  public static final class EchoActor extends RavelActor implements Echo {
    @Override
    public Outer mirror(Outer value) {
      return value;
    }

    @Override
    public String shout(String text, int times) {
      return text.toUpperCase().repeat(times);
    }

    @Override
    public String fail(String why) {
      throw new IllegalStateException(why);
    }
  }

  static JsonNode encode(Object value) {
    return JsonWire.encode(value, new ArrayList<>());
  }

  @Test
  void encode_record_componentsInSnakeCaseAndBackToTheSameRecord() throws Exception {
    Outer o = new Outer("a", 7, 0.5, true, Colour.BLUE, new Inner(List.of("x"), Map.of("k", 2)), new int[] {1, 2},
        Set.of("t"), null);
    JsonNode n = encode(o);
    assertThat(n.get("max_tokens").asInt()).isEqualTo(7);
    assertThat(n.get("colour").asText()).isEqualTo("BLUE");
    assertThat(n.at("/inner/counts/k").asInt()).isEqualTo(2);
    assertThat(n.get("missing").isNull()).isTrue();
    Outer back = (Outer) JsonWire.decode(n, Outer.class);
    assertThat(back).usingRecursiveComparison().isEqualTo(o);
  }

  @Test
  void decode_recordFieldMissing_namesTheRecordAndTheField() {
    assertThatThrownBy(() -> JsonWire.decode(JSON.readTree("{\"items\": []}"), Inner.class))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("Inner: field \"counts\" is missing")
        .hasMessageContaining("(fields given: items)");
  }

  @Test
  void decode_wrongTypeInsideARecord_namesTheField() {
    assertThatThrownBy(() -> JsonWire.decode(JSON.readTree("{\"items\": [1], \"counts\": {}}"), Inner.class))
        .hasMessageContaining("Inner.items: expected java.lang.String, got 1");
  }

  @Test
  void encode_nonFiniteNumberOrNonStringKeyOrUnknownType_refusedNamingIt() {
    assertThatThrownBy(() -> encode(Double.NaN)).hasMessageContaining("non-finite number (NaN)");
    assertThatThrownBy(() -> encode(Map.of(1, "a"))).hasMessageContaining("map key of type java.lang.Integer");
    assertThatThrownBy(() -> encode(new StringBuilder())).hasMessageContaining("java.lang.StringBuilder has no JSON wire form");
  }

  @Test
  void decode_numberOutOfItsTypesRange_refusedNotTruncated() throws Exception {
    assertThatThrownBy(() -> JsonWire.decode(JSON.readTree("70000"), short.class)).hasMessageContaining("expected short");
    assertThatThrownBy(() -> JsonWire.decode(JSON.readTree("300"), Byte.class)).hasMessageContaining("expected");
    assertThatThrownBy(() -> JsonWire.decode(JSON.readTree("1e39"), float.class)).hasMessageContaining("expected float");
    assertThat(JsonWire.decode(JSON.readTree("-32768"), short.class)).isEqualTo((short) -32768);
    assertThat(JsonWire.decode(JSON.readTree("[\"b\", null, \"a\"]"),
        JsonWireTest.class.getDeclaredField("STRINGS").getGenericType())).asInstanceOf(
            org.assertj.core.api.InstanceOfAssertFactories.ITERABLE).containsExactly("b", null, "a");
  }

  static final Set<String> STRINGS = Set.of();

  @Test
  void decode_enumStranger_namesTheEnum() {
    assertThatThrownBy(() -> JsonWire.decode(JSON.getNodeFactory().textNode("GREEN"), Colour.class))
        .hasMessageContaining("\"GREEN\" is not a constant of");
  }

  @Test
  void decode_genericList_elementsTakeTheirType() throws Exception {
    Type t = Echo.class.getMethod("mirror", Outer.class).getGenericReturnType();
    assertThat(t).isEqualTo(Outer.class);
    Object list = JsonWire.decode(JSON.readTree("[1, 2]"), JsonWireTest.class.getDeclaredField("LONGS").getGenericType());
    assertThat(list).isEqualTo(List.of(1L, 2L));
  }

  static final List<Long> LONGS = List.of();

  static JsonNode answer(byte[] b) throws Exception {
    return JSON.readTree(new String(b, StandardCharsets.UTF_8));
  }

  @Test
  void invokeJson_snakeOrJavaName_decodesArgumentsAndAnswersOk() throws Exception {
    EchoActor a = new EchoActor();
    assertThat(answer(a.invokeJson("", "shout", "[\"hi\", 2]")).get("ok").asText()).isEqualTo("HIHI");
    String outer = encode(new Outer("n", 1, 1.0, false, Colour.RED, new Inner(List.of(), Map.of()), new int[0],
        Set.of(), "m")).toString();
    assertThat(answer(a.invokeJson(null, "mirror", "[" + outer + "]")).at("/ok/name").asText()).isEqualTo("n");
  }

  @Test
  void invokeJson_methodThrows_answersItsTypeAndMessage() throws Exception {
    JsonNode err = answer(new EchoActor().invokeJson("", "fail", "[\"because\"]")).get("error");
    assertThat(err.get("type").asText()).isEqualTo("java.lang.IllegalStateException");
    assertThat(err.get("message").asText()).isEqualTo("because");
  }

  @Test
  void invokeJson_unknownMethodOrWrongArgumentCount_answersAnErrorNamingIt() throws Exception {
    EchoActor a = new EchoActor();
    assertThat(answer(a.invokeJson("", "nope", "[]")).at("/error/message").asText())
        .contains("echo").contains("has no role method nope");
    assertThat(answer(a.invokeJson("", "shout", "[\"x\"]")).at("/error/message").asText())
        .contains("echo.shout takes 2 argument(s), got 1");
    assertThat(answer(a.invokeJson("", "shout", "[\"x\", \"y\"]")).at("/error/message").asText())
        .contains("echo.shout argument 2: expected int");
  }
}
