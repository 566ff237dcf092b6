package dev.ravel.workers.engine;

import dev.ravel.workers.model.KvCache;
import io.opentelemetry.api.common.Attributes;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * The engine's mutable state of one request: its tokens (prompt then completion), its cache while it runs,
 * the logits of its next token, and its timing. Owned by one thread at a time (the submitting thread until
 * it is queued, then the scheduler).
 */
final class Sequence {
  /** A timestamped span event. */
  record Event(String name, long epochNanos, Attributes attributes) {}

  final GenerationRequest request;
  final CompletableFuture<GenerationResult> future = new CompletableFuture<>();
  final long arrival;
  final int promptLength;
  /** What happened to the request when: its {@code llm_request} span's children. */
  final RequestPhases phases;

  private int[] tokens;
  private float[] logprobs;
  private int length;

  KvCache cache;
  /** Tokens the cache holds (what this sequence counts against the KV budget). */
  int held;
  float[] logits;
  long logitsVersion = GenerationResult.NO_VERSION;
  long lastTokenVersion = GenerationResult.NO_VERSION;
  /** Runs of completion tokens sampled with one weight version: {version, start, end}, in token order. */
  private final List<long[]> versionRuns = new ArrayList<>(1);
  long scheduled;
  long firstToken;
  long lastToken;
  int preemptions;
  boolean finished;
  List<Event> events;

  Sequence(GenerationRequest request, long arrival) {
    this.request = request;
    this.arrival = arrival;
    this.phases = new RequestPhases(arrival);
    int[] prompt = request.promptRef();
    this.promptLength = prompt.length;
    int capacity = promptLength + Math.min(request.params().maxTokens(), 64);
    this.tokens = Arrays.copyOf(prompt, capacity);
    this.logprobs = new float[capacity - promptLength];
    this.length = promptLength;
  }

  /** Records that the completion token just appended was sampled with {@code version}. */
  void sampledWith(long version) {
    int index = length - promptLength - 1;
    long[] last = versionRuns.isEmpty() ? null : versionRuns.get(versionRuns.size() - 1);
    if (last != null && last[0] == version && last[2] == index) {
      last[2] = index + 1;
    } else {
      versionRuns.add(new long[] {version, index, index + 1});
    }
    lastTokenVersion = version;
  }

  /** Which version sampled which completion tokens. */
  List<VersionSpan> versionSpans() {
    List<VersionSpan> out = new ArrayList<>(versionRuns.size());
    for (long[] r : versionRuns) {
      out.add(new VersionSpan(r[0], (int) r[1], (int) r[2]));
    }
    return out;
  }

  /** Prompt plus generated tokens; only {@code [0, length())} is meaningful. */
  int[] tokens() {
    return tokens;
  }

  int length() {
    return length;
  }

  int generated() {
    return length - promptLength;
  }

  void append(int token, float logprob) {
    if (length == tokens.length) {
      tokens = Arrays.copyOf(tokens, Math.max(tokens.length * 2, 1));
      logprobs = Arrays.copyOf(logprobs, tokens.length - promptLength);
    }
    logprobs[length - promptLength] = logprob;
    tokens[length++] = token;
  }

  int[] completion() {
    return Arrays.copyOfRange(tokens, promptLength, length);
  }

  float[] completionLogprobs() {
    return Arrays.copyOf(logprobs, generated());
  }

  void addEvent(String name, long epochNanos, Attributes attributes) {
    if (events == null) {
      events = new ArrayList<>(2);
    }
    events.add(new Event(name, epochNanos, attributes));
  }
}
