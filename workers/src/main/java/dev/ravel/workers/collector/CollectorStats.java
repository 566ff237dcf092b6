package dev.ravel.workers.collector;

import java.io.Serializable;

/** Counters of a trajectory collector. */
public record CollectorStats(long targetsDone, long groups, long trajectories, long generateCalls,
    long rewardCalls, long bufferCalls, int inFlight, long failures, String lastError) implements Serializable {}
