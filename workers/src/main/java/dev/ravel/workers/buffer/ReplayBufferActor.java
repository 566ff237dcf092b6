package dev.ravel.workers.buffer;

import dev.ravel.workers.actor.RavelActor;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.Iterator;
import java.util.List;

/** {@link ReplayBuffer} in one actor, FIFO. */
public final class ReplayBufferActor extends RavelActor implements ReplayBuffer {
  private final Deque<Rollout> queue = new ArrayDeque<>();
  private long pushed;
  private long taken;
  private long dropped;
  private long droppedTrajectories;

  public ReplayBufferActor() {}

  @Override
  public synchronized int push(List<Rollout> rollouts) {
    queue.addAll(rollouts);
    pushed += rollouts.size();
    notifyAll();
    return queue.size();
  }

  @Override
  public synchronized BufferBatch take(long step, int groups, long maxAgeSteps, long timeoutMs) {
    long deadline = System.nanoTime() + timeoutMs * 1_000_000L;
    List<Rollout> out = new ArrayList<>();
    int droppedNow = 0;
    int droppedTrajNow = 0;
    while (true) {
      for (Iterator<Rollout> it = queue.iterator(); it.hasNext() && out.size() < groups; ) {
        Rollout r = it.next();
        if (step - r.weightVersion() > maxAgeSteps) {
          it.remove();
          droppedNow++;
          droppedTrajNow += r.trajectories().size();
        } else if (r.targetVersion() <= step) {
          it.remove();
          out.add(r);
        }
      }
      long left = deadline - System.nanoTime();
      if (out.size() >= groups || left <= 0) {
        break;
      }
      try {
        wait(Math.max(1, left / 1_000_000L));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        break;
      }
    }
    taken += out.size();
    dropped += droppedNow;
    droppedTrajectories += droppedTrajNow;
    return new BufferBatch(out, droppedNow, droppedTrajNow);
  }

  @Override
  public synchronized BufferStats stats() {
    return new BufferStats(queue.size(), pushed, taken, dropped, droppedTrajectories);
  }
}
