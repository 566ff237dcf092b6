package dev.ravel.workers.actor;

import static org.assertj.core.api.Assertions.assertThat;

import io.ray.api.exception.RayTaskException;
import org.junit.jupiter.api.Test;

/** {@link RavelActors#unwrap} only: the rest of RavelActors needs a running Ray. */
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
}
