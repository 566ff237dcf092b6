package dev.ravel.workers.generation;

import dev.ravel.workers.actor.ActorRole;
import dev.ravel.workers.actor.RavelRole;
import dev.ravel.workers.actor.Untraced;
import dev.ravel.workers.engine.EngineStats;
import dev.ravel.workers.engine.GenerationRequest;
import dev.ravel.workers.engine.GenerationResult;
import io.ray.api.ObjectRef;
import java.util.List;

/**
 * A generation worker: an inference engine behind an actor. Its calls run in spans
 * {@code rl.worker.<method>}; each request's engine span {@code llm_request} is a child of the call.
 */
@ActorRole(name = "generation_worker", spans = "worker")
public interface GenerationWorker extends RavelRole {
  /** Sync mode: generates a whole batch, continuously batched by the engine; results in request order. */
  List<GenerationResult> generate(List<GenerationRequest> requests);

  /**
   * Async mode: a chunk of one target step's groups (the collector's call per worker and target step, or
   * per {@code grpo.groups_per_call} groups); results in request order. The actor serves several such calls
   * at once (its max concurrency) and the engine batches all their requests together.
   */
  List<GenerationResult> generateAsync(List<GenerationRequest> requests);

  /**
   * Loads the weights behind {@code weights}, one object in the object store that every worker is passed by
   * reference; returns their version. For a Java worker the object is a {@code Payload<ModelWeights>} the
   * driver put there; for a Python worker it is the Python trainer's weights ({@code PythonWorkers.WEIGHTS_FORMAT}),
   * left in the object store by its {@code weights} call.
   */
  long updateWeights(ObjectRef<?> weights);

  /** The engine's counters. */
  @Untraced
  EngineStats engineStats();
}
