package dev.ravel.workers.actor;

import io.ray.api.ObjectRef;
import java.io.Serializable;
import java.lang.reflect.Type;
import java.util.List;

/**
 * How the arguments and results of calls to a Python actor cross the language hop (see
 * {@code docs/python-workers.md}): arguments as one JSON array, results as JSON bytes. Ray object references
 * do not go into the JSON: each becomes {@code {"$ref": i}} and travels as a call argument of its own, so Ray
 * resolves it on the Python side. Implementations are stateless and serializable (handles carrying them are
 * passed to other actors).
 */
public interface CrossLanguageCodec extends Serializable {
  /**
   * The JSON array of {@code args}; every {@link ObjectRef} among them is replaced by {@code {"$ref": i}} and
   * appended to {@code refs} (i is its index there).
   *
   * @param args the call's arguments
   * @param refs the list the object references among {@code args} are appended to, in order
   * @return the JSON array of {@code args}
   * @throws IllegalArgumentException naming a value that has no wire form
   */
  String encodeArgs(Object[] args, List<ObjectRef<?>> refs);

  /**
   * The value of {@code type} in {@code json} (a result's UTF-8 JSON).
   *
   * @param json a result's JSON, UTF-8 encoded
   * @param type the type to decode the result as
   * @return the decoded value
   * @throws IllegalArgumentException naming the type when it has no wire form or the JSON does not fit it
   */
  Object decode(byte[] json, Type type);
}
