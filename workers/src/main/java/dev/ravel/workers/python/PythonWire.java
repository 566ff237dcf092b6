package dev.ravel.workers.python;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.ravel.telemetry.sdk.ExportStats;
import dev.ravel.workers.actor.CrossLanguageCodec;
import dev.ravel.workers.actor.JsonWire;
import dev.ravel.workers.engine.EngineStats;
import dev.ravel.workers.engine.FinishReason;
import dev.ravel.workers.engine.GenerationRequest;
import dev.ravel.workers.engine.GenerationResult;
import dev.ravel.workers.engine.RequestStats;
import dev.ravel.workers.engine.SamplingParams;
import dev.ravel.workers.grpo.TrainMetrics;
import dev.ravel.workers.grpo.Trajectory;
import dev.ravel.workers.trainer.LogProbSummary;
import dev.ravel.workers.trainer.TrainOutcome;
import io.ray.api.ObjectRef;
import java.io.IOException;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.Type;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;

/**
 * The JSON wire form of every value that crosses the hop between the Java driver and Ravel's Python workers
 * ({@code docs/python-workers.md}, "Wire forms"), in one place. Keys are snake case; a value type that is
 * not listed there has no wire form and is refused with its name.
 */
public final class PythonWire implements CrossLanguageCodec {
  private static final long serialVersionUID = 1L;
  /** The one instance (stateless). */
  public static final PythonWire INSTANCE = new PythonWire();
  private static final ObjectMapper JSON = new ObjectMapper();

  private PythonWire() {}

  private Object readResolve() {
    return INSTANCE;
  }

  @Override
  public String encodeArgs(Object[] args, List<ObjectRef<?>> refs) {
    ArrayNode a = JSON.createArrayNode();
    for (Object arg : args) {
      a.add(encode(arg, refs));
    }
    return a.toString();
  }

  @Override
  public Object decode(byte[] json, Type type) {
    if (dev.ravel.workers.engine.ResultWire.isWire(json)) { // a generate call's results, in their binary form
      if (!(type instanceof ParameterizedType p && p.getRawType() == List.class
          && p.getActualTypeArguments()[0] == GenerationResult.class)) {
        throw new IllegalArgumentException("a Python worker answered generation results where "
            + type.getTypeName() + " was expected");
      }
      return dev.ravel.workers.engine.ResultWire.decode(json);
    }
    JsonNode n;
    try {
      n = JSON.readTree(json);
    } catch (IOException e) {
      throw new IllegalArgumentException("a Python worker's result is not JSON (expected " + type.getTypeName() + "): "
          + e.getMessage(), e);
    }
    try {
      return decode(n, type);
    } catch (RuntimeException e) {
      throw new IllegalArgumentException("a Python worker's result does not fit " + type.getTypeName() + ": "
          + e.getMessage(), e);
    }
  }

  /** {@code value}'s wire form; object references go to {@code refs}. */
  JsonNode encode(Object value, List<ObjectRef<?>> refs) {
    if (value == null) {
      return JSON.nullNode();
    }
    if (value instanceof ObjectRef<?> r) {
      ObjectNode o = JSON.createObjectNode();
      o.put("$ref", refs.size());
      refs.add(r);
      return o;
    }
    if (value instanceof String s) {
      return JSON.getNodeFactory().textNode(s);
    }
    if (value instanceof Boolean b) {
      return JSON.getNodeFactory().booleanNode(b);
    }
    if (value instanceof Integer || value instanceof Long) {
      return JSON.getNodeFactory().numberNode(((Number) value).longValue());
    }
    if (value instanceof Double || value instanceof Float) {
      return JSON.getNodeFactory().numberNode(((Number) value).doubleValue());
    }
    if (value instanceof Collection<?> c) {
      ArrayNode a = JSON.createArrayNode();
      c.forEach(x -> a.add(encode(x, refs)));
      return a;
    }
    if (value instanceof GenerationRequest r) {
      return request(r);
    }
    if (value instanceof Trajectory t) {
      return trajectory(t);
    }
    if (value instanceof int[] xs) {
      return ints(xs);
    }
    if (value instanceof dev.ravel.workers.task.Problem p) {
      ObjectNode o = JSON.createObjectNode();
      o.put("prompt", p.prompt());
      o.put("answer", p.answer());
      try {
        o.set("metadata", JSON.readTree(p.metadataJson()));
      } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
        throw new IllegalArgumentException("problem metadata is not JSON: " + e.getOriginalMessage(), e);
      }
      return o;
    }
    return JsonWire.encode(value, refs); // a user's value: records, maps, enums, ... or refused naming its type
  }

  static ObjectNode request(GenerationRequest r) {
    ObjectNode o = JSON.createObjectNode();
    o.put("request_id", r.requestId());
    o.set("prompt_tokens", ints(r.promptTokens()));
    SamplingParams p = r.params();
    ObjectNode params = o.putObject("params");
    params.put("max_tokens", p.maxTokens());
    params.put("temperature", p.temperature());
    params.put("top_p", p.topP());
    params.put("seed", p.seed());
    if (p.ignoreEos()) {
      params.put("ignore_eos", true);
    }
    return o;
  }

  static ObjectNode trajectory(Trajectory t) {
    ObjectNode o = JSON.createObjectNode();
    o.put("request_id", t.requestId());
    o.set("prompt", ints(t.prompt()));
    o.set("completion", ints(t.completion()));
    ArrayNode lp = o.putArray("logprobs");
    for (float x : t.logprobs()) {
      lp.add((double) x);
    }
    o.put("reward", t.reward());
    o.put("weight_version", t.weightVersion());
    o.put("group_index", t.groupIndex());
    return o;
  }

  private static ArrayNode ints(int[] xs) {
    ArrayNode a = JSON.createArrayNode();
    for (int x : xs) {
      a.add(x);
    }
    return a;
  }

  Object decode(JsonNode n, Type type) {
    if (type instanceof ParameterizedType p && p.getRawType() == List.class) {
      Type element = p.getActualTypeArguments()[0];
      if (!n.isArray()) {
        throw new IllegalArgumentException("expected an array, got " + n.getNodeType());
      }
      List<Object> out = new ArrayList<>(n.size());
      n.forEach(x -> out.add(decode(x, element)));
      return List.copyOf(out);
    }
    if (type == double[].class) {
      if (!n.isArray()) {
        throw new IllegalArgumentException("expected an array of numbers, got " + n.getNodeType());
      }
      double[] out = new double[n.size()];
      for (int i = 0; i < out.length; i++) {
        out[i] = required(n.get(i), "a number").asDouble();
      }
      return out;
    }
    if (type == long.class || type == Long.class) {
      return required(n, "a number").asLong();
    }
    if (type == int.class || type == Integer.class) {
      JsonNode v = required(n, "a number");
      if (!v.canConvertToInt()) {
        throw new IllegalArgumentException("expected an int, got " + v);
      }
      return v.asInt();
    }
    if (type == String.class) {
      return n.isNull() ? null : n.asText();
    }
    if (type == GenerationResult.class) {
      return result(n);
    }
    if (type == EngineStats.class) {
      return engineStats(n);
    }
    if (type == ExportStats.class) {
      JsonNode per = n.path("exporters");
      if (!per.isObject() || per.isEmpty()) { // a worker with no exporter (telemetry off), or of an older wire
        return new ExportStats(num(n, "ended"), num(n, "exported"), num(n, "failed"), num(n, "dropped"));
      }
      java.util.Map<String, ExportStats.Sent> sent = new java.util.LinkedHashMap<>();
      per.fields().forEachRemaining(e -> sent.put(e.getKey(), new ExportStats.Sent(num(e.getValue(), "exported"),
          num(e.getValue(), "failed"), num(e.getValue(), "dropped"))));
      return new ExportStats(num(n, "ended"), sent);
    }
    if (type == LogProbSummary.class) {
      return new LogProbSummary(real(n, "policy"), real(n, "reference"), real(n, "kl"), num(n, "tokens"));
    }
    if (type == TrainOutcome.class) {
      return new TrainOutcome(null, trainMetrics(n));
    }
    if (type == dev.ravel.workers.reward.RewardScores.class) {
      return rewardScores(n);
    }
    return JsonWire.decode(n, type); // a user's type, or refused naming it
  }

  /** {@code {rewards: [..], texts: [..], components: {name: [..]}, failed: n}}. */
  static dev.ravel.workers.reward.RewardScores rewardScores(JsonNode n) {
    double[] rewards = (double[]) INSTANCE.decode(field(n, "rewards"), double[].class);
    JsonNode t = field(n, "texts");
    if (!t.isArray()) {
      throw new IllegalArgumentException("texts: expected an array, got " + t.getNodeType());
    }
    List<String> texts = new ArrayList<>(t.size());
    t.forEach(x -> texts.add(x.asText()));
    java.util.Map<String, double[]> components = new java.util.LinkedHashMap<>();
    JsonNode c = n.path("components");
    if (!c.isMissingNode() && !c.isNull()) {
      if (!c.isObject()) {
        throw new IllegalArgumentException("components: expected an object, got " + c.getNodeType());
      }
      c.fields().forEachRemaining(e -> components.put(e.getKey(),
          (double[]) INSTANCE.decode(e.getValue(), double[].class)));
    }
    return new dev.ravel.workers.reward.RewardScores(rewards, texts, components, (int) num(n, "failed"));
  }

  static GenerationResult result(JsonNode n) {
    JsonNode s = field(n, "stats");
    RequestStats stats = RequestStats.builder()
        .arrivalEpochNanos(num(s, "arrival_epoch_nanos"))
        .scheduledEpochNanos(num(s, "scheduled_epoch_nanos"))
        .firstTokenEpochNanos(num(s, "first_token_epoch_nanos"))
        .finishEpochNanos(num(s, "finish_epoch_nanos"))
        .prefillNanos(num(s, "prefill_nanos"))
        .decodeNanos(num(s, "decode_nanos"))
        .preemptions((int) num(s, "preemptions"))
        .promptTokens((int) num(s, "prompt_tokens"))
        .completionTokens((int) num(s, "completion_tokens"))
        .build();
    JsonNode lp = field(n, "logprobs");
    float[] logprobs = new float[lp.size()];
    for (int i = 0; i < logprobs.length; i++) {
      logprobs[i] = (float) lp.get(i).asDouble();
    }
    JsonNode error = n.get("error");
    return GenerationResult.builder()
        .requestId(field(n, "request_id").asText())
        .promptTokens(intArray(field(n, "prompt_tokens")))
        .completionTokens(intArray(field(n, "completion_tokens")))
        .logprobs(logprobs)
        .finishReason(finishReason(field(n, "finish_reason").asText()))
        .weightVersion(num(n, "weight_version"))
        .stats(stats)
        .traced(field(n, "traced").asBoolean())
        .error(error == null || error.isNull() ? null : error.asText())
        .build();
  }

  static EngineStats engineStats(JsonNode n) {
    EngineStats.Builder b = EngineStats.builder();
    JsonNode finished = field(n, "finished");
    for (FinishReason r : FinishReason.values()) {
      JsonNode c = finished.get(r.wireName());
      if (c != null) {
        b.finished(r, c.asLong());
      }
    }
    return b.preemptions(num(n, "preemptions"))
        .running((int) num(n, "running"))
        .waiting((int) num(n, "waiting"))
        .kvTokens((int) num(n, "kv_tokens_used"), (int) num(n, "kv_token_budget"))
        .tokens(num(n, "prompt_tokens"), num(n, "generation_tokens"))
        .spans(num(n, "spans_kept"), num(n, "spans_sampled_out"))
        .queue(num(n, "queue_nanos"), num(n, "queue_count"))
        .load(real(n, "load_seconds"), real(n, "running_seconds"), real(n, "waiting_seconds"),
            real(n, "kv_token_seconds"))
        .build();
  }

  static FinishReason finishReason(String wire) {
    for (FinishReason r : FinishReason.values()) {
      if (r.wireName().equals(wire)) {
        return r;
      }
    }
    throw new IllegalArgumentException("finish_reason: unknown value '" + wire + "'");
  }

  private static int[] intArray(JsonNode a) {
    if (!a.isArray()) {
      throw new IllegalArgumentException("expected an array of token ids, got " + a.getNodeType());
    }
    int[] out = new int[a.size()];
    for (int i = 0; i < out.length; i++) {
      out[i] = a.get(i).asInt();
    }
    return out;
  }

  /**
   * The wire names of {@link TrainMetrics}' components, in order: each component's name in snake case
   * ({@code clipFraction} is {@code clip_fraction}), as the contract's {@code train_metrics} lists them.
   */
  public static List<String> trainMetricsFields() {
    List<String> out = new java.util.ArrayList<>();
    for (java.lang.reflect.RecordComponent c : TrainMetrics.class.getRecordComponents()) {
      out.add(c.getName().replaceAll("([A-Z])", "_$1").toLowerCase(java.util.Locale.ROOT));
    }
    return out;
  }

  /** A {@link TrainMetrics} from its wire form ({@link #trainMetricsFields()}), each field a number. */
  static TrainMetrics trainMetrics(JsonNode n) {
    java.lang.reflect.RecordComponent[] components = TrainMetrics.class.getRecordComponents();
    List<String> names = trainMetricsFields();
    Object[] values = new Object[components.length];
    Class<?>[] types = new Class<?>[components.length];
    for (int i = 0; i < components.length; i++) {
      types[i] = components[i].getType();
      String name = names.get(i);
      values[i] = types[i] == long.class ? (Object) num(n, name)
          : types[i] == int.class ? (Object) Math.toIntExact(num(n, name)) : (Object) real(n, name);
    }
    try {
      return TrainMetrics.class.getDeclaredConstructor(types).newInstance(values);
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException("cannot build TrainMetrics: " + e, e);
    }
  }

  private static JsonNode field(JsonNode n, String name) {
    JsonNode x = n == null ? null : n.get(name);
    if (x == null || x.isNull()) {
      throw new IllegalArgumentException("missing field '" + name + "'");
    }
    return x;
  }

  private static JsonNode required(JsonNode n, String what) {
    if (n == null || n.isNull() || !n.isNumber()) {
      throw new IllegalArgumentException("expected " + what + ", got " + (n == null ? "nothing" : n.getNodeType()));
    }
    return n;
  }

  private static long num(JsonNode n, String name) {
    return required(field(n, name), "a number for '" + name + "'").asLong();
  }

  private static double real(JsonNode n, String name) {
    return required(field(n, name), "a number for '" + name + "'").asDouble();
  }
}
