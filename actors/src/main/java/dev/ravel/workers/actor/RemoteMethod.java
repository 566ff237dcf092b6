package dev.ravel.workers.actor;

import java.io.Serializable;

/**
 * Method references of a role interface {@code I}, by arity, for {@link RavelActorHandle#call}: they keep
 * actor calls typed ({@code handle.call(Greeter::greet, "bob")} takes a String and yields the method's
 * return type) while one generic entry point carries the trace context.
 */
public final class RemoteMethod {
  private RemoteMethod() {}

  /** A role method with no argument. */
  @FunctionalInterface
  public interface M0<I, R> extends Serializable {
    R apply(I actor) throws Exception;
  }

  /** A role method with one argument. */
  @FunctionalInterface
  public interface M1<I, A, R> extends Serializable {
    R apply(I actor, A a) throws Exception;
  }

  /** A role method with two arguments. */
  @FunctionalInterface
  public interface M2<I, A, B, R> extends Serializable {
    R apply(I actor, A a, B b) throws Exception;
  }

  /** A role method with three arguments. */
  @FunctionalInterface
  public interface M3<I, A, B, C, R> extends Serializable {
    R apply(I actor, A a, B b, C c) throws Exception;
  }

  /** A role method with four arguments. */
  @FunctionalInterface
  public interface M4<I, A, B, C, D, R> extends Serializable {
    R apply(I actor, A a, B b, C c, D d) throws Exception;
  }
}
