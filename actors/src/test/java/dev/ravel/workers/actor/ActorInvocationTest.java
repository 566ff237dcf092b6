package dev.ravel.workers.actor;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ravel.telemetry.context.TraceCarrier;
import java.io.Serializable;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

final class ActorInvocationTest {
  private static final TraceCarrier CARRIER =
      TraceCarrier.of("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "", "");

  record Batch(long step, List<Integer> ids) implements Serializable {}

  @Test
  void args_roundTripTheArguments() {
    Object[] args = {"hello", 3, 2.5, new Batch(4, List.of(1, 2)), Map.of("k", "v"), null};

    ActorInvocation call = new ActorInvocation(CARRIER, "relay", "(Ljava/lang/String;)Ljava/lang/String;", args);

    assertThat(call.args()).containsExactly("hello", 3, 2.5, new Batch(4, List.of(1, 2)), Map.of("k", "v"), null);
    assertThat(call.method()).isEqualTo("relay");
    assertThat(call.descriptor()).isEqualTo("(Ljava/lang/String;)Ljava/lang/String;");
    assertThat(call.carrier()).isEqualTo(CARRIER);
  }

  @Test
  void args_areCapturedWhenTheCallIsMade() {
    Object[] args = {"first"};
    ActorInvocation call = new ActorInvocation(TraceCarrier.EMPTY, "relay", "(Ljava/lang/String;)Ljava/lang/String;",
        args);

    args[0] = "changed";
    call.args()[0] = "changed too";

    assertThat(call.args()).containsExactly("first");
  }

  @Test
  void args_noArgumentsGiveAnEmptyArray() {
    ActorInvocation call = new ActorInvocation(TraceCarrier.EMPTY, "stats", "()V", new Object[0]);

    assertThat(call.args()).isEmpty();
  }

  @Test
  void invocation_survivesSerializationWithItsCarrierAndArguments() {
    ActorInvocation call = new ActorInvocation(CARRIER, "take", "(JIJJ)Ldev/ravel/workers/buffer/BufferBatch;",
        new Object[] {5L, 2, 1L, 100L});

    ActorInvocation back = (ActorInvocation) Codec.decode(Codec.encode(call));

    assertThat(back.carrier()).isEqualTo(CARRIER);
    assertThat(back.method()).isEqualTo("take");
    assertThat(back.descriptor()).isEqualTo("(JIJJ)Ldev/ravel/workers/buffer/BufferBatch;");
    assertThat(back.args()).containsExactly(5L, 2, 1L, 100L);
  }

  @Test
  void invocation_takesTheCompactFormWithALongBaggageAndMixedArguments() {
    TraceCarrier carrier = TraceCarrier.of("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "k=v",
        "b=" + "x".repeat(30_000));
    ActorInvocation call = new ActorInvocation(carrier, "echo", "([B)[B",
        new Object[] {new byte[] {1, 2}, new Batch(1, List.of(3))});

    byte[] bytes = Codec.encode(call);
    ActorInvocation back = (ActorInvocation) Codec.decode(bytes);

    assertThat(bytes[0]).isEqualTo(Codec.INVOCATION);
    assertThat(back.carrier()).isEqualTo(carrier);
    assertThat(back.method()).isEqualTo("echo");
    assertThat(back.descriptor()).isEqualTo("([B)[B");
    assertThat(back.args()).containsExactly(new byte[] {1, 2}, new Batch(1, List.of(3)));
  }

  @Test
  void invocation_ofByteArrayIsSmall() {
    ActorInvocation call = new ActorInvocation(TraceCarrier.EMPTY, "echo", "([B)[B", new Object[] {new byte[64]});

    assertThat(Codec.encode(call).length).isLessThan(120);
  }

  @Test
  void constructor_nonSerializableArgumentFailsOnTheCallersSide() {
    Object notSerializable = new Object();

    assertThatThrownBy(() -> new ActorInvocation(TraceCarrier.EMPTY, "relay", "(Ljava/lang/Object;)V",
        new Object[] {notSerializable}))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("java.lang.Object");
  }
}
