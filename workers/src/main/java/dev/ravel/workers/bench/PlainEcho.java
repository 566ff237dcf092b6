package dev.ravel.workers.bench;

/**
 * The same echo as a plain Ray actor ({@code Ray.actor(PlainEcho::new)}, no Ravel in the path): the baseline
 * {@code ravel bench-calls} compares {@link EchoActor} with.
 */
public final class PlainEcho {
  public PlainEcho() {}

  /** Returns {@code payload} unchanged. */
  public byte[] echo(byte[] payload) {
    return payload;
  }

  /** This actor's process id. */
  public long pid() {
    return ProcessHandle.current().pid();
  }
}
