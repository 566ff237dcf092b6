package dev.ravel.workers.actor;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ravel.workers.buffer.ReplayBufferActor;
import dev.ravel.workers.demo.RelayActor;
import org.junit.jupiter.api.Test;

/** {@link RavelActor#roleOf} only: constructing a RavelActor starts telemetry from the environment. */
final class RavelActorTest {
  @ActorRole(name = "echo_role", spans = "echo")
  interface Echo extends RavelRole {
    String echo(String s);
  }

  /** A role interface reached only through another interface. */
  interface LoudEcho extends Echo {
    String shout(String s);
  }

  abstract static class EchoBase implements LoudEcho {}

  abstract static class DerivedEcho extends EchoBase {}

  /** Annotated, but a class: an annotation on a class is not a role. */
  @ActorRole(name = "not_a_role", spans = "nope")
  abstract static class AnnotatedClass implements RavelRole {}

  @Test
  void roleOf_findsTheAnnotationThroughAnImplementedInterface() {
    ActorRole role = RavelActor.roleOf(EchoBase.class);

    assertThat(role.name()).isEqualTo("echo_role");
    assertThat(role.spans()).isEqualTo("echo");
  }

  @Test
  void roleOf_findsTheAnnotationThroughASuperclass() {
    assertThat(RavelActor.roleOf(DerivedEcho.class).name()).isEqualTo("echo_role");
  }

  @Test
  void roleOf_projectActorsHaveTheirRoles() {
    assertThat(RavelActor.roleOf(ReplayBufferActor.class).name()).isEqualTo("replay_buffer");
    assertThat(RavelActor.roleOf(ReplayBufferActor.class).spans()).isEqualTo("buffer");
    assertThat(RavelActor.roleOf(RelayActor.class).name()).isEqualTo("relay");
  }

  @Test
  void serve_malformedCarrierStillRunsTheCallInANewTrace() throws Exception {
    RavelActor actor = new dev.ravel.workers.bench.EchoActor();
    byte[] payload = {1, 2, 3};
    ActorInvocation call = new ActorInvocation(dev.ravel.telemetry.context.TraceCarrier.of("00-not-a-trace-01", "", ""),
        "echo", "([B)[B", new Object[] {payload});

    assertThat((byte[]) Codec.decode(actor.serve(call))).containsExactly(payload);
    assertThat((byte[]) Codec.decode(actor.serve(call))).containsExactly(payload); // again: logged once, counted
  }

  @Test
  void roleOf_classWithoutRoleInterfaceFailsNamingTheClass() {
    assertThatThrownBy(() -> RavelActor.roleOf(AnnotatedClass.class))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining(AnnotatedClass.class.getName())
        .hasMessageContaining("@ActorRole");
    assertThatThrownBy(() -> RavelActor.roleOf(String.class))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("java.lang.String");
  }
}
