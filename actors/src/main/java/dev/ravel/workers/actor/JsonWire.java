package dev.ravel.workers.actor;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.ravel.telemetry.spans.SpanNames;
import io.ray.api.ObjectRef;
import java.io.IOException;
import java.lang.reflect.Array;
import java.lang.reflect.Constructor;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.RecordComponent;
import java.lang.reflect.Type;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * The JSON wire form of a user's values between Java and Python actors ({@code docs/python-workers.md}, "Your own
 * types"), defined once for both directions: {@code null}, strings, booleans, integers ({@code int}, {@code long},
 * {@code short}, {@code byte}), finite {@code double}s and {@code float}s, enums (by name), arrays of primitives,
 * lists and sets (JSON arrays), maps with string keys (JSON objects), and records (JSON objects whose keys are the
 * components' names in snake case, {@code maxTokens} -> {@code max_tokens}; on the Python side a dataclass with
 * those fields). Anything else is refused with its type's name: the wire never guesses.
 *
 * <p>Stateless; {@link #INSTANCE} is a {@link CrossLanguageCodec} for Python actors of a user's own.
 */
public final class JsonWire implements CrossLanguageCodec {
  private static final long serialVersionUID = 1L;
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final JsonNodeFactory NODES = JsonNodeFactory.instance;

  /** The codec of values of the forms above. */
  public static final JsonWire INSTANCE = new JsonWire();

  private JsonWire() {}

  /** {@return {@link #INSTANCE}, so that deserializing keeps the codec a singleton} */
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
    JsonNode n;
    try {
      n = JSON.readTree(json);
    } catch (IOException e) {
      throw new IllegalArgumentException("a result is not JSON (expected " + type.getTypeName() + "): "
          + e.getMessage(), e);
    }
    return decode(n, type);
  }

  /**
   * {@code value}'s wire form; object references become {@code {"$ref": i}} and go to {@code refs}.
   *
   * @param value the value to encode; may be {@code null}
   * @param refs the list the object references met in {@code value} are appended to; i is the index there
   * @return the JSON tree of {@code value}
   * @throws IllegalArgumentException naming a value's type that has no wire form, or a non-finite number
   */
  public static JsonNode encode(Object value, List<ObjectRef<?>> refs) {
    if (value == null) {
      return NODES.nullNode();
    }
    if (value instanceof ObjectRef<?> r) {
      ObjectNode o = NODES.objectNode();
      o.put("$ref", refs.size());
      refs.add(r);
      return o;
    }
    if (value instanceof String s) {
      return NODES.textNode(s);
    }
    if (value instanceof Boolean b) {
      return NODES.booleanNode(b);
    }
    if (value instanceof Integer || value instanceof Long || value instanceof Short || value instanceof Byte) {
      return NODES.numberNode(((Number) value).longValue());
    }
    if (value instanceof Double || value instanceof Float) {
      double d = ((Number) value).doubleValue();
      if (!Double.isFinite(d)) {
        throw new IllegalArgumentException("a non-finite number (" + d + ") has no JSON wire form");
      }
      return NODES.numberNode(d);
    }
    if (value instanceof Enum<?> e) {
      return NODES.textNode(e.name());
    }
    if (value instanceof Collection<?> c) {
      ArrayNode a = NODES.arrayNode();
      c.forEach(x -> a.add(encode(x, refs)));
      return a;
    }
    if (value instanceof Map<?, ?> m) {
      ObjectNode o = NODES.objectNode();
      for (Map.Entry<?, ?> e : m.entrySet()) {
        if (!(e.getKey() instanceof String k)) {
          throw new IllegalArgumentException("a map key of type " + typeName(e.getKey())
              + " has no JSON wire form (keys must be strings)");
        }
        o.set(k, encode(e.getValue(), refs));
      }
      return o;
    }
    if (value.getClass().isArray() && value.getClass().getComponentType().isPrimitive()
        && value.getClass() != byte[].class && value.getClass() != char[].class) {
      ArrayNode a = NODES.arrayNode();
      int n = Array.getLength(value);
      for (int i = 0; i < n; i++) {
        a.add(encode(Array.get(value, i), refs));
      }
      return a;
    }
    if (value instanceof Record r) {
      ObjectNode o = NODES.objectNode();
      for (RecordComponent c : r.getClass().getRecordComponents()) {
        Object v;
        try {
          c.getAccessor().setAccessible(true);
          v = c.getAccessor().invoke(r);
        } catch (IllegalAccessException | InvocationTargetException e) {
          throw new IllegalArgumentException("cannot read " + r.getClass().getName() + "." + c.getName(), e);
        }
        o.set(SpanNames.snakeCase(c.getName()), encode(v, refs));
      }
      return o;
    }
    throw new IllegalArgumentException(value.getClass().getName() + " has no JSON wire form (strings, numbers,"
        + " booleans, enums, lists, sets, maps with string keys, primitive arrays and records do)");
  }

  /**
   * The value of {@code type} in {@code n}. A {@code List}, {@code Set} or {@code Map} type comes back
   * unmodifiable; JSON {@code null} is {@code null} for any class that is not primitive.
   *
   * @param n the JSON tree of the value
   * @param type the type to decode it as, not {@code null}
   * @return the decoded value
   * @throws NullPointerException if {@code type} is {@code null}
   * @throws IllegalArgumentException naming the type, or the record field, that {@code n} does not fit
   */
  public static Object decode(JsonNode n, Type type) {
    Objects.requireNonNull(type, "type");
    if (type instanceof ParameterizedType p) {
      Type raw = p.getRawType();
      Type[] targs = p.getActualTypeArguments();
      if (raw == List.class || raw == Collection.class || raw == Set.class) {
        expect(n.isArray(), n, type);
        Collection<Object> out = raw == Set.class ? new LinkedHashSet<>() : new ArrayList<>(n.size());
        n.forEach(x -> out.add(decode(x, targs[0])));
        return raw == Set.class ? java.util.Collections.unmodifiableSet((Set<Object>) out)
            : java.util.Collections.unmodifiableList((List<Object>) out);
      }
      if (raw == Map.class) {
        expect(n.isObject(), n, type);
        if (targs[0] != String.class) {
          throw new IllegalArgumentException(type.getTypeName() + " has no JSON wire form (keys must be strings)");
        }
        Map<String, Object> out = new LinkedHashMap<>();
        n.fields().forEachRemaining(e -> out.put(e.getKey(), decode(e.getValue(), targs[1])));
        return java.util.Collections.unmodifiableMap(out);
      }
      throw new IllegalArgumentException(type.getTypeName() + " has no JSON wire form");
    }
    if (!(type instanceof Class<?> c)) {
      throw new IllegalArgumentException(type.getTypeName() + " has no JSON wire form");
    }
    if (n.isNull() && !c.isPrimitive()) {
      return null;
    }
    if (c == void.class || c == Void.class) {
      return null;
    }
    if (c == Object.class) {
      return JSON.convertValue(n, Object.class);
    }
    if (c == String.class) {
      expect(n.isTextual(), n, type);
      return n.asText();
    }
    if (c == boolean.class || c == Boolean.class) {
      expect(n.isBoolean(), n, type);
      return n.asBoolean();
    }
    if (c == long.class || c == Long.class) {
      expect(n.isIntegralNumber() && n.canConvertToLong(), n, type);
      return n.asLong();
    }
    if (c == int.class || c == Integer.class) {
      expect(n.isIntegralNumber() && n.canConvertToInt(), n, type);
      return n.asInt();
    }
    if (c == short.class || c == Short.class) {
      expect(n.isIntegralNumber() && n.canConvertToInt() && n.asInt() >= Short.MIN_VALUE
          && n.asInt() <= Short.MAX_VALUE, n, type);
      return (short) n.asInt();
    }
    if (c == byte.class || c == Byte.class) {
      expect(n.isIntegralNumber() && n.canConvertToInt() && n.asInt() >= Byte.MIN_VALUE
          && n.asInt() <= Byte.MAX_VALUE, n, type);
      return (byte) n.asInt();
    }
    if (c == double.class || c == Double.class) {
      expect(n.isNumber(), n, type);
      return n.asDouble();
    }
    if (c == float.class || c == Float.class) {
      expect(n.isNumber() && Float.isFinite((float) n.asDouble()), n, type);
      return (float) n.asDouble();
    }
    if (c.isEnum()) {
      expect(n.isTextual(), n, type);
      for (Object constant : c.getEnumConstants()) {
        if (((Enum<?>) constant).name().equals(n.asText())) {
          return constant;
        }
      }
      throw new IllegalArgumentException("\"" + n.asText() + "\" is not a constant of " + c.getName());
    }
    if (c.isArray() && c.getComponentType().isPrimitive()) {
      expect(n.isArray(), n, type);
      Object out = Array.newInstance(c.getComponentType(), n.size());
      for (int i = 0; i < n.size(); i++) {
        Array.set(out, i, decode(n.get(i), c.getComponentType()));
      }
      return out;
    }
    if (c.isRecord()) {
      expect(n.isObject(), n, type);
      RecordComponent[] comps = c.getRecordComponents();
      Object[] values = new Object[comps.length];
      Class<?>[] types = new Class<?>[comps.length];
      for (int i = 0; i < comps.length; i++) {
        String key = SpanNames.snakeCase(comps[i].getName());
        JsonNode v = n.get(key);
        if (v == null) {
          throw new IllegalArgumentException(c.getName() + ": field \"" + key + "\" is missing (fields given: "
              + abbreviate(String.join(", ", (Iterable<String>) n::fieldNames)) + ")");
        }
        try {
          values[i] = decode(v, comps[i].getGenericType());
        } catch (IllegalArgumentException e) {
          throw new IllegalArgumentException(c.getName() + "." + key + ": " + e.getMessage(), e);
        }
        types[i] = comps[i].getType();
      }
      try {
        Constructor<?> ctor = c.getDeclaredConstructor(types);
        ctor.setAccessible(true);
        return ctor.newInstance(values);
      } catch (InvocationTargetException e) {
        throw new IllegalArgumentException(c.getName() + " refused its fields: " + e.getCause().getMessage(),
            e.getCause());
      } catch (ReflectiveOperationException e) {
        throw new IllegalArgumentException("cannot build " + c.getName(), e);
      }
    }
    throw new IllegalArgumentException(type.getTypeName() + " has no JSON wire form");
  }

  private static void expect(boolean ok, JsonNode n, Type type) {
    if (!ok) {
      throw new IllegalArgumentException("expected " + type.getTypeName() + ", got " + abbreviate(n.toString()));
    }
  }

  /** At most 80 characters of {@code s}: messages end up on spans, so values are not copied there whole. */
  static String abbreviate(String s) {
    return s.length() > 80 ? s.substring(0, 77) + "..." : s;
  }

  private static String typeName(Object o) {
    return o == null ? "null" : o.getClass().getName();
  }
}
