package dev.ravel.workers.actor;

import dev.ravel.telemetry.context.TraceCarrier;
import java.io.Serializable;

/**
 * One actor call as it travels through Ray: the caller's trace context (the "header") beside the role
 * method and its arguments. Built only by {@link RavelActorHandle}; resumed only by {@link RavelActor}.
 */
final class ActorInvocation implements Serializable {
  private static final long serialVersionUID = 1L;

  private final TraceCarrier carrier;
  private final String method;
  private final String descriptor;
  private final byte[] args;

  ActorInvocation(TraceCarrier carrier, String method, String descriptor, Object[] args) {
    this(carrier, method, descriptor, Codec.encode(args));
  }

  private ActorInvocation(TraceCarrier carrier, String method, String descriptor, byte[] args) {
    this.carrier = carrier;
    this.method = method;
    this.descriptor = descriptor;
    this.args = args;
  }

  /** A call read back by {@link Codec}: its arguments still encoded, decoded when {@link #args()} is called. */
  static ActorInvocation encoded(TraceCarrier carrier, String method, String descriptor, byte[] args) {
    return new ActorInvocation(carrier, method, descriptor, args);
  }

  /** The arguments as {@link Codec} wrote them (for {@link Codec} to write the call). */
  byte[] encodedArgs() {
    return args;
  }

  TraceCarrier carrier() {
    return carrier;
  }

  String method() {
    return method;
  }

  String descriptor() {
    return descriptor;
  }

  Object[] args() {
    return (Object[]) Codec.decode(args);
  }

  @Override
  public String toString() {
    return method + descriptor + " " + carrier;
  }
}
