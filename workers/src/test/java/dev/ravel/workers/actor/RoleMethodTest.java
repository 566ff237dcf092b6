package dev.ravel.workers.actor;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ravel.workers.demo.Relay;
import java.lang.invoke.MethodType;
import java.lang.reflect.Method;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

final class RoleMethodTest {
  @Test
  void of_methodReferenceGivesNameAndJvmDescriptor() {
    RemoteMethod.M1<Relay, String, String> relay = Relay::relay;

    RoleMethod m = RoleMethod.of(relay);

    assertThat(m.name()).isEqualTo("relay");
    assertThat(m.descriptor()).isEqualTo("(Ljava/lang/String;)Ljava/lang/String;");
  }

  @Test
  void of_descriptorResolvesBackToTheRoleMethod() throws Exception {
    RemoteMethod.M1<Relay, List<String>, Map<String, String>> environment = Relay::environment;

    RoleMethod m = RoleMethod.of(environment);

    assertThat(m.descriptor()).isEqualTo("(Ljava/util/List;)Ljava/util/Map;");
    Class<?>[] params = MethodType.fromMethodDescriptorString(m.descriptor(), getClass().getClassLoader())
        .parameterArray();
    Method resolved = Relay.class.getMethod(m.name(), params);
    assertThat(resolved).isEqualTo(Relay.class.getMethod("environment", List.class));
  }

  @Test
  void of_inheritedRoleMethodAndPrimitiveArguments() {
    RemoteMethod.M1<Relay, Long, Object> flush = Relay::flushTelemetry;

    RoleMethod m = RoleMethod.of(flush);

    assertThat(m.name()).isEqualTo("flushTelemetry");
    assertThat(m.descriptor()).isEqualTo("(J)Ldev/ravel/telemetry/sdk/ExportStats;");
  }

  @Test
  void of_differentReferencesAreNotMixedUp() {
    RemoteMethod.M1<Relay, String, String> relay = Relay::relay;
    RemoteMethod.M1<Relay, String, String> failure = Relay::relayFailure;

    assertThat(RoleMethod.of(relay).name()).isEqualTo("relay");
    assertThat(RoleMethod.of(failure).name()).isEqualTo("relayFailure");
    assertThat(RoleMethod.of(relay).name()).isEqualTo("relay");
  }

  @Test
  void of_lambdaIsRejectedWithAClearMessage() {
    RemoteMethod.M1<Relay, String, String> lambda = (r, s) -> r.relay(s);

    assertThatThrownBy(() -> RoleMethod.of(lambda))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("method reference")
        .hasMessageContaining("not a lambda");
  }

  @Test
  void of_serializableObjectThatIsNotAMethodReferenceIsRejected() {
    assertThatThrownBy(() -> RoleMethod.of(new NotAReference()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("not a serializable method reference");
  }

  private static final class NotAReference implements RemoteMethod.M1<Relay, String, String> {
    private static final long serialVersionUID = 1L;

    @Override
    public String apply(Relay actor, String a) {
      return actor.relay(a);
    }
  }
}
