package dev.ravel.workers.actor;

import dev.ravel.telemetry.env.WorkerEnvironment;
import io.ray.api.ActorHandle;
import io.ray.api.Ray;
import io.ray.api.call.ActorCreator;
import io.ray.api.exception.RayTaskException;
import io.ray.api.function.RayFunc0;
import io.ray.api.function.RayFunc1;
import io.ray.api.runtimeenv.RuntimeEnv;
import io.ray.api.runtimeenv.types.RuntimeEnvName;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/** Creates Ravel actors (with the run's worker environment) and reads their results. */
public final class RavelActors {
  private RavelActors() {}

  /** Starts creating an actor of role {@code role} from a no-argument constructor. */
  public static <A extends RavelActor, I> Creator<I> actor(RayFunc0<A> constructor, Class<I> role) {
    return new Creator<>(Ray.actor(constructor), role);
  }

  /**
   * Starts creating an actor of role {@code role} from a constructor that takes its argument as a
   * {@link Payload} (Java serialization: records and immutable collections survive the trip).
   */
  public static <A extends RavelActor, T, I> Creator<I> actor(RayFunc1<Payload<T>, A> constructor, T arg,
      Class<I> role) {
    return new Creator<>(Ray.actor(constructor, Payload.of(arg)), role);
  }

  /** The application exception inside Ray's task exceptions. */
  public static Throwable unwrap(Throwable e) {
    Throwable t = e;
    int depth = 0;
    while (t instanceof RayTaskException && t.getCause() != null && depth++ < 16) {
      t = t.getCause();
    }
    return t;
  }

  /** Options of one actor creation. */
  public static final class Creator<I> {
    private final ActorCreator<? extends RavelActor> creator;
    private final Class<I> role;
    private final Map<String, String> env = new LinkedHashMap<>();
    private final List<String> jvmOptions = new ArrayList<>();

    private Creator(ActorCreator<? extends RavelActor> creator, Class<I> role) {
      this.creator = creator;
      this.role = Objects.requireNonNull(role, "role");
      if (!role.isInterface() || role.getAnnotation(ActorRole.class) == null) {
        throw new IllegalArgumentException(role.getName() + " is not an @ActorRole interface");
      }
    }

    /** The run's worker environment (telemetry settings, masked OTEL_* variables, pass-through). */
    public Creator<I> env(WorkerEnvironment environment) {
      env.putAll(environment.variables());
      return this;
    }

    /** One more environment variable for this actor. */
    public Creator<I> env(String name, String value) {
      env.put(name, value);
      return this;
    }

    /** Up to {@code n} calls served at once, on separate threads. */
    public Creator<I> maxConcurrency(int n) {
      creator.setMaxConcurrency(n);
      return this;
    }

    public Creator<I> maxRestarts(int n) {
      creator.setMaxRestarts(n);
      return this;
    }

    public Creator<I> name(String name) {
      creator.setName(name);
      return this;
    }

    public Creator<I> resource(String name, double amount) {
      creator.setResource(name, amount);
      return this;
    }

    /** JVM options of the actor's worker process (appended to the job's). */
    public Creator<I> jvmOptions(List<String> options) {
      jvmOptions.addAll(options);
      return this;
    }

    @SuppressWarnings("unchecked")
    public RavelActorHandle<I> remote() {
      if (!env.isEmpty()) {
        RuntimeEnv re = new RuntimeEnv.Builder().build();
        re.set(RuntimeEnvName.ENV_VARS, new LinkedHashMap<>(env));
        creator.setRuntimeEnv(re);
      }
      if (!jvmOptions.isEmpty()) {
        creator.setJvmOptions(jvmOptions);
      }
      ActorHandle<RavelActor> h = (ActorHandle<RavelActor>) (ActorHandle<?>) creator.remote();
      return new RavelActorHandle<>(h, role);
    }
  }
}
