package dev.ravel.workers.actor;

import java.io.Serializable;
import java.lang.invoke.SerializedLambda;
import java.lang.reflect.Method;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The role method a method reference such as {@code Greeter::greet} names: its name and JVM descriptor,
 * read once per call site from the serialized form of the reference (the same way Ray resolves its own
 * typed calls).
 */
record RoleMethod(String name, String descriptor) {
  private static final Map<Class<?>, RoleMethod> CACHE = new ConcurrentHashMap<>();

  static RoleMethod of(Serializable methodRef) {
    return CACHE.computeIfAbsent(methodRef.getClass(), c -> read(methodRef));
  }

  private static RoleMethod read(Serializable ref) {
    try {
      Method writeReplace = ref.getClass().getDeclaredMethod("writeReplace");
      writeReplace.setAccessible(true);
      SerializedLambda l = (SerializedLambda) writeReplace.invoke(ref);
      if (l.getImplMethodName().startsWith("lambda$")) {
        throw new IllegalArgumentException("pass a method reference of the role interface (Role::method), not a lambda");
      }
      return new RoleMethod(l.getImplMethodName(), l.getImplMethodSignature());
    } catch (ReflectiveOperationException e) {
      throw new IllegalArgumentException("not a serializable method reference: " + ref, e);
    }
  }
}
