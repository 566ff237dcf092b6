package dev.ravel.workers.bench;

import dev.ravel.workers.actor.RavelActor;

/** {@link Echo} on Ray, through Ravel's call path (context carried, the call in an {@code rl.echo.echo} span). */
public final class EchoActor extends RavelActor implements Echo {
  public EchoActor() {}

  @Override
  public byte[] echo(byte[] payload) {
    return payload;
  }

  @Override
  public long pid() {
    return ProcessHandle.current().pid();
  }
}
