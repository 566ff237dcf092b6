package dev.ravel.workers.generation;

import dev.ravel.telemetry.context.TraceCarrier;
import dev.ravel.workers.engine.GenerationRequest;
import dev.ravel.workers.engine.SamplingParams;
import dev.ravel.workers.model.Tokenizer;
import dev.ravel.workers.task.Problem;
import java.util.ArrayList;
import java.util.List;
import java.util.random.RandomGenerator;

/**
 * The generation requests of a GRPO step: G samples per prompt, each with its own seed. A group's samples
 * are numbered and seeded as vLLM numbers and seeds the {@code n} choices of one request (choice i gets
 * the request's seed + i), so a server backend can send a whole group as one request with {@code n = G}
 * and get exactly these samples back.
 */
public final class GroupRequests {
  private GroupRequests() {}

  /**
   * Requests {@code s<step>-p<prompt>-<sample>}, prompt-major (a group's G requests are consecutive): each
   * group draws one seed from {@code rng} (in prompt order) and its sample g uses that seed + g. The carrier
   * is empty: the worker stamps its own.
   */
  public static List<GenerationRequest> of(List<Problem> problems, Tokenizer tokenizer, int groupSize,
      SamplingParams sampling, long step, RandomGenerator rng) {
    return of(problems, p -> tokenizer.encode(p.prompt()), groupSize, sampling, step, rng);
  }

  /** As above, each prompt encoded by {@code encode}. */
  public static List<GenerationRequest> of(List<Problem> problems, java.util.function.Function<Problem, int[]> encode,
      int groupSize, SamplingParams sampling, long step, RandomGenerator rng) {
    List<GenerationRequest> out = new ArrayList<>(problems.size() * groupSize);
    for (int p = 0; p < problems.size(); p++) {
      int[] prompt = encode.apply(problems.get(p));
      long groupSeed = rng.nextLong();
      for (int g = 0; g < groupSize; g++) {
        out.add(GenerationRequest.of(groupId(step, p) + "-" + g, prompt, sampling.withSeed(groupSeed + g),
            TraceCarrier.EMPTY));
      }
    }
    return out;
  }

  /** The id of step {@code step}'s group {@code prompt}; its samples are {@code <group id>-<sample>}. */
  static String groupId(long step, int prompt) {
    return "s" + step + "-p" + prompt;
  }
}
