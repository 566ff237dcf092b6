package dev.ravel.driver.api;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ravel.driver.session.DriverSession;
import dev.ravel.telemetry.config.TelemetryConfig;
import dev.ravel.telemetry.traces.RunTraces;
import dev.ravel.workers.actor.RavelActor;
import dev.ravel.workers.model.TinyLm;
import dev.ravel.workers.python.PythonWire;
import java.io.IOException;
import java.lang.reflect.Modifier;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The public types of every module Ravel ships, held in {@code docs/public-types.txt}: a type that becomes public
 * (or stops being) shows up as a difference here, to be reviewed. After a deliberate change,
 * {@code -Dravel.docs.write=true} rewrites the file.
 */
final class PublicSurfaceTest {
  private static final Path ROOT = Path.of("").toAbsolutePath().getParent();
  private static final Path FILE = ROOT.resolve("docs/public-types.txt");

  /** A class of each module, to find the module's classes by. */
  private static final Map<String, Class<?>> MODULES = new LinkedHashMap<>();

  static {
    MODULES.put("telemetry-core", TelemetryConfig.class);
    MODULES.put("telemetry-viewer", RunTraces.class);
    MODULES.put("actors", RavelActor.class);
    MODULES.put("engine", TinyLm.class);
    MODULES.put("workers", PythonWire.class);
    MODULES.put("driver", DriverSession.class);
  }

  @Test
  void publicTypes_matchTheListInDocs() throws Exception {
    StringBuilder sb = new StringBuilder("# Public types per module (PublicSurfaceTest; -Dravel.docs.write=true"
        + " rewrites it)\n");
    for (Map.Entry<String, Class<?>> m : MODULES.entrySet()) {
      for (String type : publicTypes(m.getValue())) {
        sb.append(m.getKey()).append(' ').append(type).append('\n');
      }
    }
    String expected = sb.toString();
    String actual = Files.exists(FILE) ? Files.readString(FILE) : "";
    if (Boolean.getBoolean("ravel.docs.write") && !actual.equals(expected)) {
      Files.writeString(FILE, expected);
      actual = expected;
    }
    assertThat(actual).as("docs/public-types.txt is stale: review the change, then run this test with"
        + " -Dravel.docs.write=true").isEqualTo(expected);
  }

  @Test
  void apiTypes_arePublicTypesOfTheirModule() throws Exception {
    for (String[] t : ApiJavadocTest.apiTypes()) {
      assertThat(MODULES).as("module of %s", t[1]).containsKey(t[0]);
      assertThat(publicTypes(MODULES.get(t[0]))).as("public types of %s", t[0]).contains(t[1]);
    }
  }

  private static List<String> publicTypes(Class<?> anchor) throws IOException, URISyntaxException {
    Path location = Path.of(anchor.getProtectionDomain().getCodeSource().getLocation().toURI());
    // a class folder in the reactor, a jar when the module comes from the local repository
    try (java.nio.file.FileSystem jar = Files.isDirectory(location) ? null
        : java.nio.file.FileSystems.newFileSystem(location)) {
      return publicTypes(anchor, jar == null ? location : jar.getPath("/"));
    }
  }

  private static List<String> publicTypes(Class<?> anchor, Path classes) throws IOException {
    List<String> out = new ArrayList<>();
    try (Stream<Path> files = Files.walk(classes)) {
      for (Path f : files.filter(p -> p.toString().endsWith(".class")).sorted().toList()) {
        String name = classes.relativize(f).toString().replace('/', '.').replaceAll("\\.class$", "");
        if (name.endsWith("package-info") || name.endsWith("module-info")) {
          continue;
        }
        Class<?> c;
        try {
          c = Class.forName(name, false, anchor.getClassLoader());
        } catch (ClassNotFoundException | LinkageError e) {
          continue;
        }
        if (visible(c)) {
          out.add(c.getName());
        }
      }
    }
    return out.stream().sorted().toList();
  }

  private static boolean visible(Class<?> c) {
    if (c.isAnonymousClass() || c.isLocalClass() || c.isSynthetic()) {
      return false;
    }
    for (Class<?> x = c; x != null; x = x.getEnclosingClass()) {
      if (!Modifier.isPublic(x.getModifiers())) {
        return false;
      }
    }
    return true;
  }
}
