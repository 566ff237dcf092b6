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
    Objects.requireNonNull(constructor, "constructor");
    return new Creator<>(() -> Ray.actor(constructor), role);
  }

  /**
   * Starts creating an actor of role {@code role} from a constructor that takes its argument as a
   * {@link Payload} (Java serialization: records and immutable collections survive the trip).
   */
  public static <A extends RavelActor, T, I> Creator<I> actor(RayFunc1<Payload<T>, A> constructor, T arg,
      Class<I> role) {
    Objects.requireNonNull(constructor, "constructor");
    Payload<T> payload = Payload.of(arg);
    return new Creator<>(() -> Ray.actor(constructor, payload), role);
  }

  /**
   * Starts creating a Python actor of role {@code role}: the class {@code actorClass} (a {@code @ray.remote}
   * class of Ravel's Python workers, found on the job's code search path), built from {@code spec} (a JSON
   * string), whose calls cross the language hop through {@code codec}.
   */
  public static <I> Creator<I> python(PyActorClass actorClass, String spec, Class<I> role, CrossLanguageCodec codec) {
    Objects.requireNonNull(actorClass, "actorClass");
    return new Creator<>(() -> new PythonCreator(actorClass, spec), role, Objects.requireNonNull(codec, "codec"));
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

  /**
   * Options of one actor creation: each checked when given (no Ray needed), all applied to Ray's creator by
   * {@link #remote()}.
   */
  public static final class Creator<I> {
    /** Null for a Python actor. */
    private final java.util.function.Supplier<ActorCreator<? extends RavelActor>> javaCreator;
    /** Null for a Java actor. */
    private final java.util.function.Supplier<PythonCreator> pythonCreator;
    private final CrossLanguageCodec codec;
    private final Class<I> role;
    private final Map<String, String> env = new LinkedHashMap<>();
    private final List<String> jvmOptions = new ArrayList<>();
    private final Map<String, Double> resources = new LinkedHashMap<>();
    private Integer maxConcurrency;
    private Integer maxRestarts;
    private String name;
    private io.ray.api.placementgroup.PlacementGroup group;
    private int bundle;

    private Creator(java.util.function.Supplier<ActorCreator<? extends RavelActor>> creator, Class<I> role) {
      this(creator, null, role, null);
    }

    private Creator(java.util.function.Supplier<PythonCreator> creator, Class<I> role, CrossLanguageCodec codec) {
      this(null, creator, role, codec);
    }

    private Creator(java.util.function.Supplier<ActorCreator<? extends RavelActor>> javaCreator,
        java.util.function.Supplier<PythonCreator> pythonCreator, Class<I> role, CrossLanguageCodec codec) {
      this.javaCreator = javaCreator;
      this.pythonCreator = pythonCreator;
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

    /**
     * One more environment variable for this actor (after the run's worker environment, so it can override one).
     *
     * @throws IllegalArgumentException when {@code name} is blank or holds {@code =}, or {@code value} is null
     */
    public Creator<I> env(String name, String value) {
      if (name == null || name.isBlank() || name.contains("=")) {
        throw new IllegalArgumentException("env: not a variable name: '" + name + "'");
      }
      if (value == null) {
        throw new IllegalArgumentException("env " + name + ": the value is null (an empty string masks it)");
      }
      env.put(name, value);
      return this;
    }

    /**
     * Up to {@code n} calls served at once, on separate threads.
     *
     * @throws IllegalArgumentException when {@code n < 1}
     */
    public Creator<I> maxConcurrency(int n) {
      if (n < 1) {
        throw new IllegalArgumentException("maxConcurrency: must be >= 1, got " + n);
      }
      maxConcurrency = n;
      return this;
    }

    /**
     * How often Ray restarts the actor when its process dies ({@code -1}: without limit; 0, the default: never).
     *
     * @throws IllegalArgumentException when {@code n < -1}
     */
    public Creator<I> maxRestarts(int n) {
      if (n < -1) {
        throw new IllegalArgumentException("maxRestarts: must be >= -1 (-1: without limit), got " + n);
      }
      maxRestarts = n;
      return this;
    }

    /**
     * The actor's name in the job's namespace (how Python finds a Java actor: {@code java_actor(name)}).
     *
     * @throws IllegalArgumentException when {@code name} is blank
     */
    public Creator<I> name(String name) {
      if (name == null || name.isBlank()) {
        throw new IllegalArgumentException("name: must not be blank");
      }
      this.name = name;
      return this;
    }

    /**
     * In bundle {@code bundle} of the placement group {@code group}; the actor's resources come from it.
     *
     * @throws IllegalArgumentException when {@code bundle < 0}
     */
    public Creator<I> placementGroup(io.ray.api.placementgroup.PlacementGroup group, int bundle) {
      if (bundle < 0) {
        throw new IllegalArgumentException("placementGroup: the bundle index must be >= 0, got " + bundle);
      }
      this.group = Objects.requireNonNull(group, "group");
      this.bundle = bundle;
      return this;
    }

    /**
     * {@code amount} of the resource {@code name} (Ray's {@code CPU}, or a custom one such as a node's).
     *
     * @throws IllegalArgumentException when {@code name} is blank or holds whitespace, is {@code GPU} (use
     *     {@link #gpus}), or {@code amount} is not finite and positive
     */
    public Creator<I> resource(String name, double amount) {
      if (name == null || name.isBlank() || name.chars().anyMatch(Character::isWhitespace)) {
        throw new IllegalArgumentException("resource: not a resource name: '" + name + "'");
      }
      if (name.equals("GPU")) {
        throw new IllegalArgumentException("resource GPU: ask for GPUs with gpus(" + amount + ")");
      }
      if (!Double.isFinite(amount) || amount <= 0) {
        throw new IllegalArgumentException("resource " + name + ": the amount must be finite and > 0, got " + amount);
      }
      resources.put(name, amount);
      return this;
    }

    /** GPUs the actor holds (Ray's {@code GPU} resource); 0 asks for none. */
    public Creator<I> gpus(double n) {
      if (n < 0 || !Double.isFinite(n)) {
        throw new IllegalArgumentException("gpus: must be finite and >= 0, got " + n);
      }
      if (n > 0) {
        resources.put("GPU", n);
      } else {
        resources.remove("GPU");
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

    /**
     * Creates the actor on Ray with these options.
     *
     * @return a handle on it
     */
    @SuppressWarnings("unchecked")
    public RavelActorHandle<I> remote() {
      RuntimeEnv re = null;
      if (!env.isEmpty()) {
        re = new RuntimeEnv.Builder().build();
        re.set(RuntimeEnvName.ENV_VARS, new LinkedHashMap<>(env));
      }
      if (pythonCreator != null) {
        PythonCreator c = pythonCreator.get();
        apply(c);
        if (re != null) {
          c.runtimeEnv(re);
        }
        PyActorHandle h = c.remote();
        return new RavelActorHandle<>(h, codec, role);
      }
      ActorCreator<? extends RavelActor> c = javaCreator.get();
      apply(c);
      if (re != null) {
        c.setRuntimeEnv(re);
      }
      if (!jvmOptions.isEmpty()) {
        c.setJvmOptions(jvmOptions);
      }
      ActorHandle<RavelActor> h = (ActorHandle<RavelActor>) (ActorHandle<?>) c.remote();
      return new RavelActorHandle<>(h, role);
    }

    private void apply(BaseActorCreator<?> base) {
      if (maxConcurrency != null) {
        base.setMaxConcurrency(maxConcurrency);
      }
      if (maxRestarts != null) {
        base.setMaxRestarts(maxRestarts);
      }
      if (name != null) {
        base.setName(name);
      }
      if (group != null) {
        base.setPlacementGroup(group, bundle);
      }
      resources.forEach(base::setResource);
    }
  }
}
