package dev.ravel.workers.model;

/** The per-token state a model keeps for one sequence (what an engine's KV budget is counted in). */
public interface KvCache {
  /** Tokens held. */
  int length();
}
