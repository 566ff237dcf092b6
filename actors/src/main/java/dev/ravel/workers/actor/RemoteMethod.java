package dev.ravel.workers.actor;

import java.io.Serializable;

/**
 * Method references of a role interface {@code I}, by arity, for {@link RavelActorHandle#call}: they keep
 * actor calls typed ({@code handle.call(Greeter::greet, "bob")} takes a String and yields the method's
 * return type) while one generic entry point carries the trace context.
 */
public final class RemoteMethod {
  private RemoteMethod() {}

  /**
   * A role method with no argument.
   *
   * @param <I> the role interface
   * @param <R> the method's result type
   */
  @FunctionalInterface
  public interface M0<I, R> extends Serializable {
    /**
     * Calls the method on {@code actor}.
     *
     * @param actor the actor whose method is called
     * @return the method's result
     * @throws Exception what the method throws
     */
    R apply(I actor) throws Exception;
  }

  /**
   * A role method with one argument.
   *
   * @param <I> the role interface
   * @param <A> the argument's type
   * @param <R> the method's result type
   */
  @FunctionalInterface
  public interface M1<I, A, R> extends Serializable {
    /**
     * Calls the method on {@code actor}.
     *
     * @param actor the actor whose method is called
     * @param a the argument
     * @return the method's result
     * @throws Exception what the method throws
     */
    R apply(I actor, A a) throws Exception;
  }

  /**
   * A role method with two arguments.
   *
   * @param <I> the role interface
   * @param <A> the first argument's type
   * @param <B> the second argument's type
   * @param <R> the method's result type
   */
  @FunctionalInterface
  public interface M2<I, A, B, R> extends Serializable {
    /**
     * Calls the method on {@code actor}.
     *
     * @param actor the actor whose method is called
     * @param a the first argument
     * @param b the second argument
     * @return the method's result
     * @throws Exception what the method throws
     */
    R apply(I actor, A a, B b) throws Exception;
  }

  /**
   * A role method with three arguments.
   *
   * @param <I> the role interface
   * @param <A> the first argument's type
   * @param <B> the second argument's type
   * @param <C> the third argument's type
   * @param <R> the method's result type
   */
  @FunctionalInterface
  public interface M3<I, A, B, C, R> extends Serializable {
    /**
     * Calls the method on {@code actor}.
     *
     * @param actor the actor whose method is called
     * @param a the first argument
     * @param b the second argument
     * @param c the third argument
     * @return the method's result
     * @throws Exception what the method throws
     */
    R apply(I actor, A a, B b, C c) throws Exception;
  }

  /**
   * A role method with four arguments.
   *
   * @param <I> the role interface
   * @param <A> the first argument's type
   * @param <B> the second argument's type
   * @param <C> the third argument's type
   * @param <D> the fourth argument's type
   * @param <R> the method's result type
   */
  @FunctionalInterface
  public interface M4<I, A, B, C, D, R> extends Serializable {
    /**
     * Calls the method on {@code actor}.
     *
     * @param actor the actor whose method is called
     * @param a the first argument
     * @param b the second argument
     * @param c the third argument
     * @param d the fourth argument
     * @return the method's result
     * @throws Exception what the method throws
     */
    R apply(I actor, A a, B b, C c, D d) throws Exception;
  }
}
