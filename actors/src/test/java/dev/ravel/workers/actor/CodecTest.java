package dev.ravel.workers.actor;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.Serializable;
import java.io.UncheckedIOException;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

final class CodecTest {
  record Point(int x, String label) implements Serializable {}

  record Shape(String name, List<Point> points, Map<String, Integer> tags) implements Serializable {}

  record NotSerializable(int x) {}

  @Test
  void encodeDecode_recordRoundTrips() {
    Point p = new Point(3, "a");

    assertThat(Codec.decode(Codec.encode(p))).isEqualTo(p);
  }

  @Test
  void encodeDecode_nestedRecordsWithImmutableCollectionsRoundTrip() {
    Shape s = new Shape("tri", List.of(new Point(0, "a"), new Point(1, "b"), new Point(2, "c")),
        Map.of("sides", 3, "angles", 3));

    Object back = Codec.decode(Codec.encode(s));

    assertThat(back).isEqualTo(s);
    assertThat(((Shape) back).points()).containsExactly(new Point(0, "a"), new Point(1, "b"), new Point(2, "c"));
  }

  @Test
  void encodeDecode_immutableListAndMapRoundTripAndStayImmutable() {
    @SuppressWarnings("unchecked")
    List<Object> list = (List<Object>) Codec.decode(Codec.encode(List.of("x", 2, 3.5)));
    @SuppressWarnings("unchecked")
    Map<String, Integer> map = (Map<String, Integer>) Codec.decode(Codec.encode(Map.of("a", 1, "b", 2)));

    assertThat(list).containsExactly("x", 2, 3.5);
    assertThat(map).containsExactlyInAnyOrderEntriesOf(Map.of("a", 1, "b", 2));
    assertThatThrownBy(() -> list.add("y")).isInstanceOf(UnsupportedOperationException.class);
  }

  @Test
  void encodeDecode_primitiveArrayAndNullRoundTrip() {
    assertThat((int[]) Codec.decode(Codec.encode(new int[] {1, -2, 3}))).containsExactly(1, -2, 3);
    assertThat(Codec.decode(Codec.encode(null))).isNull();
  }

  @Test
  void encode_nonSerializableValueNamesItsClass() {
    assertThatThrownBy(() -> Codec.encode(new NotSerializable(1)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining(NotSerializable.class.getName())
        .hasMessageContaining("cannot send");
  }

  @Test
  void encode_nonSerializableValueInsideACollectionNamesItsClass() {
    assertThatThrownBy(() -> Codec.encode(List.of(new Point(1, "a"), new NotSerializable(2))))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining(NotSerializable.class.getName());
  }

  @Test
  void decode_corruptBytesFailWithAClearMessage() {
    assertThatThrownBy(() -> Codec.decode(new byte[] {1, 2, 3, 4}))
        .isInstanceOf(UncheckedIOException.class)
        .hasMessageContaining("cannot read an actor call's payload");
  }

  @Test
  void encode_simpleValuesTakeTheCompactFormAndRoundTrip() {
    Object[] values = {null, new byte[] {1, 2, 3}, "h\u00e9llo \u4e16\u754c", 42, -7L, 2.5, 1.5f, true, false,
        Integer.MIN_VALUE, Long.MAX_VALUE, Double.NaN};

    for (Object v : values) {
      byte[] bytes = Codec.encode(v);

      assertThat(bytes[0]).as("tag of %s", v).isNotEqualTo(Codec.JAVA);
      assertThat(Codec.decode(bytes)).as("round trip of %s", v).isEqualTo(v);
    }
    assertThat(Codec.encode(new byte[64])).hasSize(69);
    assertThat(Codec.encode(42L)).hasSize(9);
  }

  @Test
  void encode_otherValuesStayJavaSerialization() {
    byte[] bytes = Codec.encode(new Point(1, "a"));

    assertThat(bytes[0]).isEqualTo((byte) 0xAC);
    assertThat(bytes[1]).isEqualTo((byte) 0xED);
  }

  @Test
  void decode_plainJavaSerializationOfASimpleValueStillReads() throws Exception {
    java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
    try (java.io.ObjectOutputStream out = new java.io.ObjectOutputStream(bytes)) {
      out.writeObject(new byte[] {9, 8});
    }

    assertThat((byte[]) Codec.decode(bytes.toByteArray())).containsExactly(9, 8);
  }

  @Test
  void encodeDecode_argumentArrayMixesCompactAndJavaElements() {
    Object[] args = {new byte[] {5}, "s", new Point(2, "b"), null, List.of(1, 2), 3};

    Object back = Codec.decode(Codec.encode(args));

    assertThat(back).isInstanceOf(Object[].class);
    assertThat((Object[]) back).containsExactly(new byte[] {5}, "s", new Point(2, "b"), null, List.of(1, 2), 3);
  }

  @Test
  void encodeDecode_longStringAndLoneSurrogateRoundTrip() {
    String big = "\u4e16".repeat(70_000);
    String surrogate = "a\ud800b";

    assertThat(Codec.decode(Codec.encode(big))).isEqualTo(big);
    assertThat(Codec.decode(Codec.encode(surrogate))).isEqualTo(surrogate);
    assertThat(Codec.decode(Codec.encode(new Object[] {big, surrogate}))).isEqualTo(new Object[] {big, surrogate});
  }

  @Test
  void decode_truncatedCompactValueFailsWithAClearMessage() {
    byte[] bytes = Codec.encode("hello");

    assertThatThrownBy(() -> Codec.decode(java.util.Arrays.copyOf(bytes, bytes.length - 1)))
        .isInstanceOf(UncheckedIOException.class)
        .hasMessageContaining("cannot read an actor call's payload");
  }

  @Test
  void decode_lengthPastTheEndFailsBeforeAllocating() {
    byte[] bytes = {Codec.BYTES, 0x7f, (byte) 0xff, (byte) 0xff, (byte) 0xff, 1};

    assertThatThrownBy(() -> Codec.decode(bytes))
        .isInstanceOf(UncheckedIOException.class)
        .hasMessageContaining("cannot read an actor call's payload");
  }

  @Test
  void payload_valueEqualsTheWrappedValue() {
    Shape s = new Shape("sq", List.of(new Point(0, "a")), Map.of("sides", 4));

    Payload<Shape> payload = Payload.of(s);

    assertThat(payload.value()).isEqualTo(s);
    assertThat(payload.value()).isNotSameAs(payload.value());
    assertThat(payload.size()).isPositive();
  }

  @Test
  void payload_survivesSerializationOfItself() {
    Payload<List<Point>> payload = Payload.of(List.of(new Point(7, "z")));

    @SuppressWarnings("unchecked")
    Payload<List<Point>> back = (Payload<List<Point>>) Codec.decode(Codec.encode(payload));

    assertThat(back.value()).containsExactly(new Point(7, "z"));
  }

  @Test
  void payload_nonSerializableValueFailsWhenWrapped() {
    assertThatThrownBy(() -> Payload.of(new NotSerializable(1)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining(NotSerializable.class.getName());
  }
}
