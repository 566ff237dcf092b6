package dev.ravel.workers.engine;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ravel.telemetry.context.TraceCarrier;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Requests packed for a Java worker: every field comes back, as a plain ArrayList. */
final class RequestWireTest {
  @Test
  void serializable_travelsPacked_andArrivesEqual() throws Exception {
    List<GenerationRequest> in = List.of(
        GenerationRequest.of("step-1-r0", new int[] {1, 10, 2, 12},
            SamplingParams.builder().maxTokens(4).temperature(0.7).topP(0.9).seed(42).build(),
            TraceCarrier.of("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "k=v", "user=é")),
        GenerationRequest.of("step-1-r1", new int[] {3},
            SamplingParams.builder().maxTokens(1).temperature(0).ignoreEos(true).build(), TraceCarrier.EMPTY));
    List<GenerationRequest> packed = RequestWire.serializable(in);
    assertThat(packed).containsExactlyElementsOf(in);
    assertThat(RequestWire.serializable(packed)).isSameAs(packed);
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (ObjectOutputStream out = new ObjectOutputStream(bytes)) {
      out.writeObject(packed);
    }
    Object back;
    try (ObjectInputStream read = new ObjectInputStream(new ByteArrayInputStream(bytes.toByteArray()))) {
      back = read.readObject();
    }
    assertThat(back).isInstanceOf(ArrayList.class).isEqualTo(in);
    @SuppressWarnings("unchecked")
    List<GenerationRequest> got = (List<GenerationRequest>) back;
    assertThat(got.get(0).carrier()).isEqualTo(in.get(0).carrier());
    assertThat(got.get(1).params()).isEqualTo(in.get(1).params());
    assertThat(RequestWire.decode(RequestWire.encode(List.of()))).isEmpty();
  }
}
