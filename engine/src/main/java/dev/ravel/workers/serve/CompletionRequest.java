package dev.ravel.workers.serve;

import dev.ravel.workers.engine.SamplingParams;
import java.util.List;

/**
 * A validated {@code /v1/completions} or {@code /v1/chat/completions} body.
 *
 * @param model the requested model name, or null for the base model
 * @param prompts one token-id prompt per prompt of the request (a chat has one)
 * @param n completions per prompt
 * @param sampling max tokens, temperature and top-p (the seed is set per choice)
 * @param seed the request's seed (choice i uses seed + i), or null for a random one
 * @param logprobs how many alternatives per token were asked for (0 and up), or null for no log-probs
 * @param tokenIds whether tokens are written as {@code token_id:<id>} ({@code return_tokens_as_token_ids})
 * @param stream whether the response is an event stream
 * @param chat whether this is a chat completion
 * @param weightVersions whether each choice says which weight version sampled which tokens
 *     ({@code return_weight_versions}, vLLM 0.33)
 */
record CompletionRequest(String model, List<int[]> prompts, int n, SamplingParams sampling, Long seed,
    Integer logprobs, boolean tokenIds, boolean stream, boolean chat, boolean weightVersions) {

  /** Number of choices: {@code n} per prompt. */
  int choices() {
    return prompts.size() * n;
  }

  /** The prompt of choice {@code index} (choices are ordered prompt by prompt, {@code n} each, as in vLLM). */
  int[] promptOf(int index) {
    return prompts.get(index / n);
  }
}
