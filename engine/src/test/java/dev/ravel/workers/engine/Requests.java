package dev.ravel.workers.engine;

import dev.ravel.telemetry.context.TraceCarrier;
import java.util.ArrayList;
import java.util.List;

/** Requests for engine tests. */
final class Requests {
  private Requests() {}

  /** {@code n} tokens, none of them EOS, varying with {@code salt}. */
  static int[] prompt(int n, int salt) {
    int[] p = new int[n];
    for (int i = 0; i < n; i++) {
      p[i] = 1 + Math.floorMod(salt * 7 + i * 3, FakeModel.VOCAB - 1);
    }
    return p;
  }

  static SamplingParams params(int maxTokens, long seed) {
    return SamplingParams.builder().maxTokens(maxTokens).temperature(1.0).topP(1.0).seed(seed).build();
  }

  static GenerationRequest request(String id, int promptLength, int maxTokens, long seed) {
    return GenerationRequest.of(id, prompt(promptLength, (int) seed), params(maxTokens, seed), TraceCarrier.EMPTY);
  }

  /** {@code n} requests {@code prefix-0..n-1} with prompts of 3..7 tokens and seeds 0..n-1. */
  static List<GenerationRequest> batch(String prefix, int n, int maxTokens) {
    List<GenerationRequest> rs = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      rs.add(request(prefix + "-" + i, 3 + i % 5, maxTokens, i));
    }
    return rs;
  }

  /** An engine config for tests: no request is kept as "slow" because the machine was busy (sampler tests set it). */
  static EngineConfig.Builder config() {
    return EngineConfig.builder().eosToken(FakeModel.EOS).slowRequest(java.time.Duration.ofHours(1));
  }
}
