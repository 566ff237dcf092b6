package dev.ravel.workers.fault;

import dev.ravel.workers.actor.RavelActorHandle;
import io.ray.api.Ray;
import io.ray.api.id.ActorId;
import io.ray.api.runtimecontext.ActorInfo;
import io.ray.api.runtimecontext.NodeInfo;

/** Where an actor runs, as Ray's GCS tells it, for messages about a dead one. */
final class ActorNodes {
  private ActorNodes() {}

  /** The address of the node {@code actor} runs on; null for an in-process actor or when Ray cannot say. */
  static String nodeOf(RavelActorHandle<?> actor) {
    return nodesOf(java.util.List.of(actor)).get(0);
  }

  /** {@link #nodeOf} for each of {@code actors}, from one listing of the cluster's actors. */
  static java.util.List<String> nodesOf(java.util.List<? extends RavelActorHandle<?>> actors) {
    java.util.List<String> out = new java.util.ArrayList<>(java.util.Collections.nCopies(actors.size(), null));
    if (!Ray.isInitialized() || actors.stream().allMatch(RavelActorHandle::isLocal)) {
      return out;
    }
    try {
      java.util.Map<ActorId, String> where = new java.util.HashMap<>();
      for (ActorInfo a : Ray.getRuntimeContext().getAllActorInfo()) {
        if (a.address != null && a.address.ip != null && !a.address.ip.isEmpty()) {
          where.put(a.actorId, a.address.ip);
        }
      }
      for (int i = 0; i < actors.size(); i++) {
        if (!actors.get(i).isLocal()) {
          out.set(i, where.get((ActorId) actors.get(i).rayHandle().getId()));
        }
      }
    } catch (RuntimeException e) {
      // only a message is missing the nodes
    }
    return out;
  }

  /** Whether a node with address {@code ip} is alive in the cluster (true when Ray cannot say). */
  static boolean alive(String ip) {
    try {
      boolean known = false;
      for (NodeInfo n : Ray.getRuntimeContext().getAllNodeInfo()) {
        if (ip.equals(n.nodeAddress)) {
          known = true;
          if (n.isAlive) {
            return true;
          }
        }
      }
      return !known;
    } catch (RuntimeException e) {
      return true;
    }
  }
}
