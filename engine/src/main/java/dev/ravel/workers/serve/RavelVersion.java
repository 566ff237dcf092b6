package dev.ravel.workers.serve;

import java.io.IOException;
import java.io.InputStream;
import java.util.Properties;

/** Ravel's version, from the build ({@code ravel-version.properties}, filtered by Maven). */
public final class RavelVersion {
  private static final String UNKNOWN = "unknown";

  private RavelVersion() {}

  /** The version, or {@code unknown} when the build did not say. */
  public static String get() {
    try (InputStream in = RavelVersion.class.getResourceAsStream("ravel-version.properties")) {
      if (in == null) {
        return UNKNOWN;
      }
      Properties p = new Properties();
      p.load(in);
      String v = p.getProperty("version", UNKNOWN);
      return v.startsWith("${") ? UNKNOWN : v;
    } catch (IOException e) {
      return UNKNOWN;
    }
  }
}
