package dev.ravel.workers.generation;

import dev.ravel.telemetry.context.TraceCarrier;
import dev.ravel.workers.engine.GenerationRequest;
import dev.ravel.workers.engine.SamplingParams;
import dev.ravel.workers.model.Tokenizer;
import dev.ravel.workers.task.Problem;
import java.util.ArrayList;
import java.util.List;
import java.util.random.RandomGenerator;

/** The generation requests of a GRPO step: G samples per prompt, each with its own seed. */
public final class GroupRequests {
  private GroupRequests() {}

  /**
   * Requests {@code s<step>-p<prompt>-g<sample>}, prompt-major (a group's G requests are consecutive), with
   * seeds drawn from {@code rng} in that order. The carrier is empty: the worker stamps its own.
   */
  public static List<GenerationRequest> of(List<Problem> problems, Tokenizer tokenizer, int groupSize,
      SamplingParams sampling, long step, RandomGenerator rng) {
    List<GenerationRequest> out = new ArrayList<>(problems.size() * groupSize);
    for (int p = 0; p < problems.size(); p++) {
      int[] prompt = tokenizer.encode(problems.get(p).prompt());
      for (int g = 0; g < groupSize; g++) {
        out.add(GenerationRequest.of("s" + step + "-p" + p + "-g" + g, prompt, sampling.withSeed(rng.nextLong()),
            TraceCarrier.EMPTY));
      }
    }
    return out;
  }
}
