package dev.ravel.workers.buffer;

import java.io.Serializable;

/** Counters of a replay buffer. */
public record BufferStats(int size, long pushed, long taken, long droppedForAge, long droppedTrajectories)
    implements Serializable {}
