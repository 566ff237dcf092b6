package dev.ravel.workers.actor;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.ray.api.exception.RayTaskException;
import org.junit.jupiter.api.Test;

/**
 * {@link RavelActors#unwrap}, and an actor's options: each checked when given (no Ray needed), a refusal one line
 * naming the option.
 */
final class RavelActorsTest {
  @Test
  void unwrap_nestedRayTaskExceptionsGiveTheOriginalException() {
    IllegalStateException original = new IllegalStateException("boom");
    RayTaskException inner = new RayTaskException(2, "10.0.0.2", "responder failed", original);
    RayTaskException outer = new RayTaskException(1, "10.0.0.1", "relay failed", inner);

    assertThat(RavelActors.unwrap(outer)).isSameAs(original);
    assertThat(RavelActors.unwrap(inner)).isSameAs(original);
  }

  @Test
  void unwrap_applicationExceptionIsReturnedAsItIs() {
    IllegalArgumentException e = new IllegalArgumentException("bad", new RayTaskException("ray inside"));

    assertThat(RavelActors.unwrap(e)).isSameAs(e);
  }

  @Test
  void unwrap_rayTaskExceptionWithoutCauseIsReturnedAsItIs() {
    RayTaskException e = new RayTaskException("no cause");

    assertThat(RavelActors.unwrap(e)).isSameAs(e);
  }

  private static RavelActors.Creator<JsonWireTest.Echo> creator() {
    return RavelActors.actor(JsonWireTest.EchoActor::new, JsonWireTest.Echo.class);
  }

  @Test
  void resource_badNameOrAmountOrGpu_refusedNamingIt() {
    assertThatThrownBy(() -> creator().resource("", 1)).hasMessage("resource: not a resource name: ''");
    assertThatThrownBy(() -> creator().resource("my node", 1)).hasMessage("resource: not a resource name: 'my node'");
    assertThatThrownBy(() -> creator().resource("accel", -1))
        .hasMessage("resource accel: the amount must be finite and > 0, got -1.0");
    assertThatThrownBy(() -> creator().resource("accel", Double.NaN)).hasMessageContaining("resource accel");
    assertThatThrownBy(() -> creator().resource("GPU", 1)).hasMessage("resource GPU: ask for GPUs with gpus(1.0)");
  }

  @Test
  void gpus_negativeOrNotFinite_refused() {
    assertThatThrownBy(() -> creator().gpus(-1)).hasMessage("gpus: must be finite and >= 0, got -1.0");
    assertThatThrownBy(() -> creator().gpus(Double.POSITIVE_INFINITY)).hasMessageContaining("gpus");
  }

  @Test
  void countsAndNames_outOfRange_refusedNamingTheOption() {
    assertThatThrownBy(() -> creator().maxConcurrency(0)).hasMessage("maxConcurrency: must be >= 1, got 0");
    assertThatThrownBy(() -> creator().maxRestarts(-2))
        .hasMessage("maxRestarts: must be >= -1 (-1: without limit), got -2");
    assertThatThrownBy(() -> creator().name(" ")).hasMessage("name: must not be blank");
    assertThatThrownBy(() -> creator().env("A=B", "x")).hasMessage("env: not a variable name: 'A=B'");
    assertThatThrownBy(() -> creator().env("A", null)).hasMessageContaining("env A: the value is null");
  }

  @Test
  void python_jvmOptions_refusedForAPythonActor() {
    RavelActors.Creator<JsonWireTest.Echo> py = RavelActors.python(io.ray.api.function.PyActorClass.of("m", "C"), "{}",
        JsonWireTest.Echo.class, JsonWire.INSTANCE);
    assertThatThrownBy(() -> py.jvmOptions(java.util.List.of("-Xmx1g")))
        .hasMessage("a Python actor (Echo) has no JVM options");
  }

  @Test
  void actor_roleNotAnActorRoleInterface_refused() {
    assertThatThrownBy(() -> RavelActors.actor(JsonWireTest.EchoActor::new, Runnable.class))
        .hasMessage("java.lang.Runnable is not an @ActorRole interface");
  }
}
