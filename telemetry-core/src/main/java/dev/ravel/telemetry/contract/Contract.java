package dev.ravel.telemetry.contract;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;

/**
 * Ravel's cross-language contract ({@code dev/ravel/contract.json}): every span name, attribute key, preset,
 * exporter, engine, shared default and golden vector that the Java and Python runtimes must agree on, in one
 * file. The Python package loads it for its names ({@code ravel_workers/names.py}); on the Java side each
 * constant stays a constant (a compile-time value, one definition in its own class) and a test per module
 * holds it equal to this file, so that a change on one side fails until the other follows.
 */
public final class Contract {
  /** Where the file is on the classpath. */
  public static final String RESOURCE = "dev/ravel/contract.json";

  private static final JsonNode JSON = load();

  private Contract() {}

  /** The whole contract (read once). */
  public static JsonNode json() {
    return JSON;
  }

  /** One section of the contract, for example {@code "engine_attributes"}; fails naming a section that is absent. */
  public static JsonNode section(String name) {
    JsonNode n = JSON.get(name);
    if (n == null) {
      throw new IllegalArgumentException("the contract " + RESOURCE + " has no section '" + name + "'");
    }
    return n;
  }

  private static JsonNode load() {
    try (InputStream in = Contract.class.getClassLoader().getResourceAsStream(RESOURCE)) {
      if (in == null) {
        throw new IllegalStateException("classpath resource " + RESOURCE + " is missing from telemetry-core's jar");
      }
      return new ObjectMapper().readTree(in);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read " + RESOURCE, e);
    }
  }
}
