package dev.ravel.driver.cli;

import dev.ravel.driver.session.DriverSession;
import dev.ravel.workers.actor.RavelActorHandle;
import dev.ravel.workers.actor.RavelRef;
import dev.ravel.workers.bench.PlainSpinner;
import dev.ravel.workers.bench.Spin;
import dev.ravel.workers.bench.Spinner;
import dev.ravel.workers.bench.SpinnerActor;
import io.ray.api.ActorHandle;
import io.ray.api.ObjectRef;
import io.ray.api.PyActorHandle;
import io.ray.api.Ray;
import io.ray.api.function.PyActorClass;
import io.ray.api.function.PyActorMethod;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The hop of a fan-out against plain Ray's ({@code ravel bench-calls --fanout-actors N}): the generation phase's
 * shape (one call to each of N workers at once, then every answer awaited) with a body of known length. Each call
 * spins its actor's CPU for {@code spinMs} and answers its body's own time; a fan-out's hop is its whole time in
 * this driver over its slowest body, as {@code rl.vllm.generate} over its slowest {@code rl.worker.generate} is in
 * a run. Through Ravel ({@link SpinnerActor} and {@code ravel_checks.fanout.Spinner}: context carried, Ravel's
 * codecs, a span per call) and through plain Ray ({@link PlainSpinner}, {@code ravel_checks.fanout.PlainSpinner}),
 * with the same request and answer sizes, on the same head; per language, each round's median hop of each side,
 * the order alternating, paired round by round. Plain Ray's hop is what Ray and the machine cost a fan-out; the
 * ratio is what Ravel adds to it.
 */
final class BenchFanout {
  /** The Python spinners' module. */
  static final String MODULE = "ravel_checks.fanout";

  private final int actors;
  private final long spinNanos;
  private final int fanouts;
  private final int requestChars;
  private final int resultChars;

  /** The languages a fan-out's actors can be written in. */
  static final List<String> LANGUAGES = List.of("java", "python");

  private final List<String> languages;

  BenchFanout(int actors, double spinMs, int fanouts, int requestChars, int resultChars, List<String> languages) {
    if (actors < 1 || spinMs <= 0 || fanouts < 1 || requestChars < 0 || resultChars < 0) {
      throw new IllegalArgumentException("fan-out: --fanout-actors and --fanout-calls must be at least 1,"
          + " --fanout-spin-ms more than 0 and the sizes at least 0");
    }
    for (String l : languages) {
      if (!LANGUAGES.contains(l)) {
        throw new IllegalArgumentException("--fanout-languages: java or python, not '" + l + "'");
      }
    }
    this.languages = List.copyOf(languages);
    this.actors = actors;
    this.spinNanos = Math.round(spinMs * 1e6);
    this.fanouts = fanouts;
    this.requestChars = requestChars;
    this.resultChars = resultChars;
  }

  /** One side's actors: a fan-out's answers, in order. */
  private interface Side {
    List<String> fanout(String payload);
  }

  /**
   * Measures each language for {@code rounds} rounds; the report's section. The plain actors are killed after
   * their language's rounds (the session stops Ravel's own when it closes), so they do not idle beside the next.
   */
  Map<String, Object> measure(DriverSession session, int rounds) {
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("actors", actors);
    out.put("spin_ms", spinNanos / 1e6);
    out.put("fanouts_per_round", fanouts);
    out.put("request_chars", requestChars);
    out.put("result_chars", resultChars);
    String payload = "p".repeat(requestChars);
    for (String language : languages) {
      Side ravel;
      Side plain;
      List<io.ray.api.BaseActorHandle> plainActors = new ArrayList<>();
      if (language.equals("java")) {
        List<RavelActorHandle<Spinner>> r = new ArrayList<>();
        List<ActorHandle<PlainSpinner>> p = new ArrayList<>();
        for (int i = 0; i < actors; i++) {
          r.add(session.actor(SpinnerActor::new, Spinner.class).remote());
          p.add(Ray.actor(PlainSpinner::new).remote());
        }
        plainActors.addAll(p);
        ravel = ravelSide(r);
        plain = s -> {
          List<ObjectRef<String>> refs = new ArrayList<>();
          for (ActorHandle<PlainSpinner> a : p) {
            refs.add(a.task(PlainSpinner::spin, s, spinNanos, resultChars).remote());
          }
          return refs.stream().map(ObjectRef::get).toList();
        };
      } else if (language.equals("python")) {
        List<RavelActorHandle<Spinner>> r = new ArrayList<>();
        List<PyActorHandle> p = new ArrayList<>();
        for (int i = 0; i < actors; i++) {
          r.add(session.pythonActor(MODULE, "Spinner", "{}", Spinner.class).remote());
          p.add(Ray.actor(PyActorClass.of(MODULE, "PlainSpinner")).remote());
        }
        plainActors.addAll(p);
        ravel = ravelSide(r);
        PyActorMethod<String> spin = PyActorMethod.of("spin", String.class);
        plain = s -> {
          List<ObjectRef<String>> refs = new ArrayList<>();
          for (PyActorHandle a : p) {
            refs.add(a.task(spin, s, spinNanos, resultChars).remote());
          }
          return refs.stream().map(ObjectRef::get).toList();
        };
      } else {
        throw new IllegalStateException("unknown language " + language); // checked in the constructor
      }
      for (int i = 0; i < Math.max(20, fanouts); i++) { // warm-up: JIT, Python imports, first spans
        hop(ravel, payload);
        hop(plain, payload);
      }
      List<Double> ravelHops = new ArrayList<>();
      List<Double> plainHops = new ArrayList<>();
      for (int round = 0; round < rounds; round++) {
        double rv = 0;
        double pv = 0;
        for (int k = 0; k < 2; k++) {
          boolean ravelTurn = (round + k) % 2 == 0;
          List<Double> hops = new ArrayList<>();
          for (int i = 0; i < fanouts; i++) {
            hops.add(hop(ravelTurn ? ravel : plain, payload));
          }
          if (ravelTurn) {
            rv = BenchStats.median(hops);
          } else {
            pv = BenchStats.median(hops);
          }
        }
        ravelHops.add(rv);
        plainHops.add(pv);
        System.out.printf("fan-out %s round %d: hop through Ravel %.3f, plain Ray %.3f, ratio %.3f%n", language,
            round + 1, rv, pv, rv / pv);
      }
      BenchStats.Ratio ratio = BenchStats.ratio(ravelHops, plainHops);
      System.out.printf("fan-out %s (%d actors, %.1f ms bodies): hop through Ravel / plain Ray %.3f%s"
          + " (median hops %.3f vs %.3f)%n", language, actors, spinNanos / 1e6, ratio.value(), ratio.intervalText(),
          BenchStats.median(ravelHops), BenchStats.median(plainHops));
      Map<String, Object> l = new LinkedHashMap<>();
      l.put("ravel_hop_per_round", ravelHops);
      l.put("plain_hop_per_round", plainHops);
      l.put("ravel_hop_median", BenchStats.median(ravelHops));
      l.put("plain_hop_median", BenchStats.median(plainHops));
      l.put("ravel_over_plain", ratio.json());
      out.put(language, l);
      plainActors.forEach(io.ray.api.BaseActorHandle::kill);
    }
    return out;
  }

  private Side ravelSide(List<RavelActorHandle<Spinner>> handles) {
    return s -> {
      List<RavelRef<String>> refs = new ArrayList<>();
      for (RavelActorHandle<Spinner> h : handles) {
        refs.add(h.call(Spinner::spin, s, spinNanos, resultChars));
      }
      return refs.stream().map(RavelRef::get).toList();
    };
  }

  /** One fan-out's whole time over its slowest body. */
  private double hop(Side side, String payload) {
    long t0 = System.nanoTime();
    List<String> answers = side.fanout(payload);
    long wall = System.nanoTime() - t0;
    long slowest = 1;
    for (String a : answers) {
      if (a.length() != Math.max(resultChars, a.indexOf(':') + 1)) {
        throw new IllegalStateException("a spinner answered " + a.length() + " characters, not " + resultChars);
      }
      slowest = Math.max(slowest, Spin.bodyNanos(a));
    }
    return (double) wall / slowest;
  }
}
