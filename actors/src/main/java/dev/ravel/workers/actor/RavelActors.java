package dev.ravel.workers.actor;

import dev.ravel.telemetry.env.WorkerEnvironment;
import io.ray.api.ActorHandle;
import io.ray.api.PyActorHandle;
import io.ray.api.Ray;
import io.ray.api.call.ActorCreator;
import io.ray.api.call.BaseActorCreator;
import io.ray.api.call.PyActorCreator;
import io.ray.api.exception.RayTaskException;
import io.ray.api.function.PyActorClass;
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

  /**
   * Starts creating a Python actor of role {@code role}: the class {@code actorClass} (a {@code @ray.remote}
   * class of Ravel's Python workers, found on the job's code search path), built from {@code spec} (a JSON
   * string), whose calls cross the language hop through {@code codec}.
   */
  public static <I> Creator<I> python(PyActorClass actorClass, String spec, Class<I> role, CrossLanguageCodec codec) {
    return new Creator<>(new PythonCreator(actorClass, spec), role, Objects.requireNonNull(codec, "codec"));
  }

  /** Python actors' creator, with the runtime environment that {@link PyActorCreator} does not expose. */
  private static final class PythonCreator extends PyActorCreator {
    PythonCreator(PyActorClass actorClass, String spec) {
      super(actorClass, new Object[] {spec});
    }

    void runtimeEnv(RuntimeEnv env) {
      builder.setRuntimeEnv(env);
    }
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
    /** Null for a Python actor. */
    private final ActorCreator<? extends RavelActor> creator;
    /** Null for a Java actor. */
    private final PythonCreator pythonCreator;
    private final BaseActorCreator<?> base;
    private final CrossLanguageCodec codec;
    private final Class<I> role;
    private final Map<String, String> env = new LinkedHashMap<>();
    private final List<String> jvmOptions = new ArrayList<>();

    private Creator(ActorCreator<? extends RavelActor> creator, Class<I> role) {
      this(creator, null, role, null);
    }

    private Creator(PythonCreator creator, Class<I> role, CrossLanguageCodec codec) {
      this(null, creator, role, codec);
    }

    private Creator(ActorCreator<? extends RavelActor> creator, PythonCreator pythonCreator, Class<I> role,
        CrossLanguageCodec codec) {
      this.creator = creator;
      this.pythonCreator = pythonCreator;
      this.base = creator != null ? creator : pythonCreator;
      this.codec = codec;
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
      base.setMaxConcurrency(n);
      return this;
    }

    public Creator<I> maxRestarts(int n) {
      base.setMaxRestarts(n);
      return this;
    }

    public Creator<I> name(String name) {
      base.setName(name);
      return this;
    }

    /** In bundle {@code bundle} of the placement group {@code group}; the actor's resources come from it. */
    public Creator<I> placementGroup(io.ray.api.placementgroup.PlacementGroup group, int bundle) {
      base.setPlacementGroup(Objects.requireNonNull(group, "group"), bundle);
      return this;
    }

    /** {@code amount} of the resource {@code name} (Ray's {@code CPU}, or a custom one). */
    public Creator<I> resource(String name, double amount) {
      base.setResource(name, amount);
      return this;
    }

    /** GPUs the actor holds (Ray's {@code GPU} resource); 0 asks for none. */
    public Creator<I> gpus(double n) {
      if (n < 0 || !Double.isFinite(n)) {
        throw new IllegalArgumentException("gpus: must be finite and >= 0, got " + n);
      }
      if (n > 0) {
        base.setResource("GPU", n);
      }
      return this;
    }

    /**
     * JVM options of the actor's worker process (appended to the job's).
     *
     * @throws IllegalStateException for a Python actor
     */
    public Creator<I> jvmOptions(List<String> options) {
      if (pythonCreator != null) {
        throw new IllegalStateException("a Python actor (" + role.getSimpleName() + ") has no JVM options");
      }
      jvmOptions.addAll(options);
      return this;
    }

    @SuppressWarnings("unchecked")
    public RavelActorHandle<I> remote() {
      RuntimeEnv re = null;
      if (!env.isEmpty()) {
        re = new RuntimeEnv.Builder().build();
        re.set(RuntimeEnvName.ENV_VARS, new LinkedHashMap<>(env));
      }
      if (pythonCreator != null) {
        if (re != null) {
          pythonCreator.runtimeEnv(re);
        }
        PyActorHandle h = pythonCreator.remote();
        return new RavelActorHandle<>(h, codec, role);
      }
      if (re != null) {
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
