package dev.ravel.telemetry.spans;

/**
 * Every span name Ravel emits, in one place (see docs/design.md, "Span placement"). The step's phases are opened
 * through {@link Phase}, which names them from here.
 */
public final class SpanNames {
  private SpanNames() {}

  public static final String GRPO_STEP = "rl.grpo.step";
  public static final String GRPO_DATA_PROCESSING = "rl.grpo.data_processing";
  public static final String GRPO_REFIT = "rl.grpo.refit";
  /**
   * The stages of a refit ({@code rl.grpo.refit}), each with the bytes it moved ({@code rl.refit.bytes}) where it
   * moves any; which exist depends on the path (docs/design.md, "Inside a refit"):
   * <ul>
   *   <li>{@link #REFIT_GATHER}: the Python trainer gathers its weights and serialises them (once per version);
   *   <li>{@link #REFIT_PUT}: the driver puts a Java trainer's weights in Ray's object store;
   *   <li>{@link #REFIT_FETCH}: a Java generation worker takes them from the object store (a Python worker's
   *       fetch is Ray's resolution of the call's argument, before its span starts);
   *   <li>over vLLM's native protocol, children of the worker's {@code rl.worker.update_weights}: the weights
   *       written where the servers read them ({@link #REFIT_TRANSFER}), every server paused ({@link #REFIT_PAUSE},
   *       {@code rl.refit.pause_mode}), the update loaded (start, update, finish on every server,
   *       {@link #REFIT_LOAD}), every server resumed ({@link #REFIT_RESUME});
   *   <li>{@link #REFIT_LOAD} on an embedded engine (Java or Python): the weights swapped in between two engine
   *       iterations (the wait for that boundary included).
   * </ul>
   */
  public static final String REFIT_GATHER = "rl.refit.gather";
  public static final String REFIT_PUT = "rl.refit.put";
  public static final String REFIT_FETCH = "rl.refit.fetch";
  public static final String REFIT_TRANSFER = "rl.refit.transfer";
  public static final String REFIT_PAUSE = "rl.refit.pause";
  public static final String REFIT_LOAD = "rl.refit.load";
  public static final String REFIT_RESUME = "rl.refit.resume";
  public static final String GRPO_GENERATION = "rl.grpo.generation";
  /**
   * A generation worker's role spans for its two generate calls (sync and async), as {@code RavelActor} names
   * them ({@code rl.<spans>.<method>}); what {@code ravel trace}'s hop and engine ratios read.
   */
  public static final String WORKER_GENERATE = "rl.worker.generate";
  public static final String WORKER_GENERATE_ASYNC = "rl.worker.generate_async";
  public static final String VLLM_GENERATE = "rl.vllm.generate";
  public static final String GRPO_REWARD = "rl.grpo.reward_calculation";
  public static final String GRPO_LOGPROBS = "rl.grpo.policy_and_reference_logprobs";
  public static final String GRPO_ADVANTAGE = "rl.grpo.advantage_calculation";
  public static final String GRPO_TRAINING = "rl.grpo.policy_training";
  public static final String GRPO_CHECKPOINT = "rl.grpo.checkpointing";
  /** The eval set generated and scored with the weights the step serves ({@code grpo.eval_every}). */
  public static final String GRPO_EVALUATE = "rl.grpo.evaluate";
  /** The prefix of every idle span; time under one counts as idle in goodput. */
  public static final String IDLE_PREFIX = "rl.idle.";
  public static final String IDLE_BUFFER_STARVATION = "rl.idle.buffer_starvation";
  public static final String IDLE_REFIT_BUBBLE = "rl.idle.refit_bubble";
  /**
   * The root of a run's start-up trace, one trace of its own (docs/design.md, "Span placement"): from the driver's
   * session start (or, for a later run on the same session, the run's start) to just before the first step, on the
   * driver (group {@code step}). Its children: {@link #RUN_RAY}, one {@link #runActors} per role, and the actor
   * calls the start-up makes (the trainer group's forming, a resumed run's first refit).
   */
  public static final String RUN_STARTUP = "rl.run.startup";
  /** Starting a local Ray head and connecting to it, or connecting to a cluster ({@code rl.ray.head_started}). */
  public static final String RUN_RAY = "rl.run.ray";
  /** The prefix of {@link #runActors}'s names. */
  public static final String RUN_ACTORS = "rl.run.actors";
  /**
   * A generation worker's constructor: its engine built, or (backend {@code openai}) its servers reached, a launched
   * server started and waited for ({@link #WORKER_LAUNCH_SERVER}) and Ravel's weight transfer initialised
   * ({@link #WORKER_INIT_WEIGHT_TRANSFER}). A child of its role's {@link #runActors}; not opened in an actor that Ray
   * restarted.
   */
  public static final String WORKER_START_BACKEND = "rl.worker.start_backend";
  /**
   * Launching the inference server a worker starts and waiting until it answers {@code /health}. A launched vLLM's
   * own start-up spans ({@code Overall Loading}, {@code Load weights}, ...) come as a trace of their own (the server
   * is not given this span's context: vLLM seeds Python's {@code random}, which the OpenTelemetry SDK draws span ids
   * from, so two servers in one trace would export the same span ids), marked with the worker's pid
   * ({@code process.parent_pid}); {@code ravel trace --startup} draws them under this span.
   */
  public static final String WORKER_LAUNCH_SERVER = "rl.worker.launch_server";
  /** Ravel's weight transfer initialised on every server ({@code POST /init_weight_transfer_engine}). */
  public static final String WORKER_INIT_WEIGHT_TRANSFER = "rl.worker.init_weight_transfer";
  /**
   * A trainer's constructor: the policy (and the frozen reference) built or loaded, the optimiser, a resumed run's
   * state. A child of the trainers' {@link #runActors}.
   */
  public static final String TRAINER_LOAD_MODEL = "rl.trainer.load_model";
  /**
   * An fsdp2 trainer group's gather of the whole weights onto rank 0 at the end of an update (once a version; each
   * rank's, with the bytes it holds after it: the whole on rank 0, none elsewhere). A child of that rank's
   * {@code rl.trainer.train}.
   */
  public static final String TRAINER_GATHER = "rl.trainer.gather";
  public static final String JOB_SUBMIT = "rl.job.submit";
  public static final String JOB_RUN = "rl.job.run";
  public static final String DEMO_RUN = "rl.demo.run";
  /** The inference engine's per-request span (vLLM's name). */
  public static final String LLM_REQUEST = "llm_request";
  /**
   * The lifecycle of one request, children of its {@code llm_request} (kind INTERNAL) that tile it: each
   * starts where the previous one ends, the first at the request's arrival and the last at its finish, so
   * their durations add up to the parent's. Made when the request finishes, from the instants the engine
   * recorded, for the requests whose {@code llm_request} the engine's sampler kept (never without it).
   * Waiting for its first admission to the running batch.
   */
  public static final String LLM_REQUEST_QUEUED = "llm_request.queued";
  /**
   * From an admission (or a weight update that recomputed the running request's KV cache) to the first
   * token sampled after it, as vLLM's {@code time_in_model_prefill}; with {@code gen_ai.usage.input_tokens},
   * {@code rl.engine.recompute} (true after a preemption or a weight update) and {@code rl.weight_version}.
   */
  public static final String LLM_REQUEST_PREFILL = "llm_request.prefill";
  /**
   * From a token sampled after a prefill until the request leaves the running batch (preempted, finished)
   * or its weights change; with {@code gen_ai.usage.output_tokens} (the tokens sampled in it, the first
   * included) and the {@code rl.weight_version} that sampled them: one decode per weight version.
   */
  public static final String LLM_REQUEST_DECODE = "llm_request.decode";
  /** Evicted from the running batch (its KV cache dropped), waiting to be admitted again and recomputed. */
  public static final String LLM_REQUEST_PREEMPTED = "llm_request.preempted";
  /**
   * A generation worker's HTTP request to an inference server that failed (kind CLIENT, status ERROR): a
   * request that succeeds has no span of its own, the server's {@code llm_request} is the worker call's child.
   */
  public static final String HTTP_REQUEST = "rl.worker.http_request";
  /**
   * A generation worker starting the inference server it launched again after the server died: the dead process
   * ({@code rl.fault.dead_pid}) and the new one ({@code process.pid}), the last weights loaded into it; the
   * requests that failed are then sent again, once.
   */
  public static final String SERVER_RESTART = "rl.worker.server_restart";
  /**
   * A call to an actor whose process died under it (status ERROR, kind CLIENT, from when the call was issued
   * until its failure was known): a call that succeeds has no span of its own on the calling side.
   */
  public static final String FAULT_FAILED_CALL = "rl.fault.failed_call";
  /**
   * The same call issued again once Ray restarted the actor (and the actor was given the current weights),
   * a sibling of the failed call: the actor's own span for the call is its child. A retry that fails too is
   * ERROR, and the next retry is its sibling.
   */
  public static final String FAULT_RETRY = "rl.fault.retry";

  /**
   * The span of one role's actors in a run's start-up, {@code rl.run.actors.<role>} ({@code rl.actor.role},
   * {@code rl.actor.count}): from the first's creation (its placement group included) until the last answers its
   * first call. The actors' own start-up spans are its children, across the creation: the driver names this span in
   * each actor's environment ({@code RAVEL_STARTUP_TRACEPARENT}).
   *
   * @param role the role's name ({@code generation_worker}, {@code policy_trainer}, ...)
   * @return the span's name
   */
  public static String runActors(String role) {
    return RUN_ACTORS + "." + role;
  }

  /**
   * The span an actor opens for a call it serves: {@code rl.<role>.<method in snake_case>}, for example
   * {@code rl.worker.update_weights} for {@code updateWeights} on a role named {@code worker}.
   */
  public static String actorCall(String role, String method) {
    return "rl." + role + "." + snakeCase(method);
  }

  /**
   * A Java method name in snake case, {@code updateWeights} -> {@code update_weights}: the method part of
   * {@link #actorCall} and the name of a Python actor's method.
   */
  public static String snakeCase(String method) {
    StringBuilder sb = new StringBuilder(method.length() + 4);
    for (int i = 0; i < method.length(); i++) {
      char c = method.charAt(i);
      if (Character.isUpperCase(c)) {
        if (i > 0) {
          sb.append('_');
        }
        sb.append(Character.toLowerCase(c));
      } else {
        sb.append(c);
      }
    }
    return sb.toString();
  }
}
