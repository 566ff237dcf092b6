package dev.ravel.driver.session;

import java.io.File;
import java.io.Serializable;
import java.lang.invoke.SerializedLambda;
import java.lang.reflect.Method;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.CodeSource;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * The workers' code search path: Ravel's own (its workers jar, their libraries, its Python package) then the
 * user's (jars and class folders of Java roles, folders of Python modules), and the checks that a role's class or
 * module is on it before an actor is created, so a missing one is one line naming it and the path instead of a
 * Ray stack trace on a worker.
 */
final class CodeSearchPath {
  private final List<Path> ravel;
  private final List<Path> user;
  private final Path ravelHome;
  private final Set<String> ravelJars;

  private CodeSearchPath(List<Path> ravel, List<Path> user, Path ravelHome, Set<String> ravelJars) {
    this.ravel = List.copyOf(ravel);
    this.user = List.copyOf(user);
    this.ravelHome = ravelHome;
    this.ravelJars = Set.copyOf(ravelJars);
  }

  /**
   * Ravel's entries (from its build at {@code ravelHome}; {@code ravelJars} the file names of its jars) then
   * {@code user}'s, each made absolute, duplicates dropped.
   *
   * @throws IllegalArgumentException naming an entry of {@code user} that does not exist
   */
  static CodeSearchPath of(List<Path> ravel, List<Path> user, Path ravelHome, Set<String> ravelJars) {
    Set<Path> seen = new LinkedHashSet<>();
    ravel.forEach(p -> seen.add(p.toAbsolutePath().normalize()));
    List<Path> own = List.copyOf(seen);
    List<Path> mine = new ArrayList<>();
    for (Path p : user) {
      Path a = p.toAbsolutePath().normalize();
      if (!Files.exists(a)) {
        throw new IllegalArgumentException("code search path: " + a + " does not exist (a jar, a class folder or a"
            + " folder of Python modules; on a cluster, a path every node has)");
      }
      if (seen.add(a)) {
        mine.add(a);
      }
    }
    return new CodeSearchPath(own, mine, ravelHome.toAbsolutePath().normalize(), ravelJars);
  }

  /**
   * The user's entries of this JVM's class path: every entry that is not an output of Ravel's own build at
   * {@code ravelHome} ({@link #ravelBuild}), not a jar Ravel's workers already have by file name ({@code ravelJars}), not Ray's own jars and not a
   * test runner's; what is left is the application's own classes and libraries.
   */
  static List<Path> userClasspath(String classPath, Path ravelHome, Set<String> ravelJars) {
    List<Path> out = new ArrayList<>();
    if (classPath == null || classPath.isBlank()) {
      return out;
    }
    Path home = ravelHome.toAbsolutePath().normalize();
    for (String entry : classPath.split(File.pathSeparator)) {
      if (entry.isBlank()) {
        continue;
      }
      Path p = Path.of(entry).toAbsolutePath().normalize();
      String name = p.getFileName() == null ? "" : p.getFileName().toString();
      String lower = name.toLowerCase(Locale.ROOT);
      if (ravelBuild(home, p) || ravelJars.contains(name) || lower.equals("ray_dist.jar") || lower.startsWith("ray-api-")
          || lower.startsWith("ray-runtime-") || lower.startsWith("surefire") || lower.startsWith("junit-")
          || !Files.exists(p)) {
        continue;
      }
      out.add(p);
    }
    return out;
  }

  /**
   * Whether {@code p} is an output of Ravel's own build at {@code home}: under a module its root {@code pom.xml}
   * lists, such as {@code workers/target/classes}. An application kept elsewhere under {@code home} (as
   * {@code examples/java-app}, or a folder of its own with a {@code pom.xml}) is not.
   */
  static boolean ravelBuild(Path home, Path p) {
    if (!p.startsWith(home) || p.equals(home)) {
      return false;
    }
    return reactorModules(home).contains(home.relativize(p).getName(0).toString());
  }

  private static final java.util.regex.Pattern MODULE =
      java.util.regex.Pattern.compile("<module>\\s*([^<\\s]+)\\s*</module>");

  /** The modules Ravel's root {@code pom.xml} at {@code home} lists; none when it has none or cannot be read. */
  static Set<String> reactorModules(Path home) {
    Set<String> out = new java.util.HashSet<>();
    try {
      java.util.regex.Matcher m = MODULE.matcher(Files.readString(home.resolve("pom.xml")));
      while (m.find()) {
        out.add(m.group(1));
      }
    } catch (java.io.IOException e) {
      // not a checkout (an installed Ravel): nothing under it is a module's output
    }
    return out;
  }

  /** Every entry, Ravel's first: what Ray's {@code ray.job.code-search-path} gets. */
  List<Path> entries() {
    List<Path> all = new ArrayList<>(ravel);
    all.addAll(user);
    return all;
  }

  /** The user's entries. */
  List<Path> user() {
    return user;
  }

  String joined() {
    return entries().stream().map(Path::toString).collect(Collectors.joining(File.pathSeparator));
  }

  /**
   * Checks that the class a Java actor is made of (the class of {@code constructor}, a method reference such as
   * {@code MyActor::new}) is on the path; classes with no code source (the JDK's) pass.
   *
   * @throws IllegalArgumentException naming the class, where it was loaded from, and the path
   */
  void checkJava(Serializable constructor) {
    implClass(constructor).ifPresent(this::checkJava);
  }

  void checkJava(Class<?> c) {
    CodeSource src = c.getProtectionDomain() == null ? null : c.getProtectionDomain().getCodeSource();
    if (src == null || src.getLocation() == null) {
      return;
    }
    Path from;
    try {
      from = Path.of(src.getLocation().toURI()).toAbsolutePath().normalize();
    } catch (URISyntaxException | IllegalArgumentException e) {
      return; // not a file (a custom class loader): nothing to compare
    }
    String name = from.getFileName() == null ? "" : from.getFileName().toString();
    if ((ravelBuild(ravelHome, from) && from.endsWith(Path.of("target", "classes"))) || ravelJars.contains(name)) {
      return; // Ravel's own roles: its build is on the path already
    }
    if (!covers(from)) {
      throw new IllegalArgumentException("actor class " + c.getName() + " (loaded from " + from + ") is not on the"
          + " workers' code search path " + entries() + ": add its jar or class folder with"
          + " DriverSession.Builder.codeSearchPath(...)");
    }
  }

  /**
   * Checks that the Python module {@code module} ({@code pkg.mod}) is in a folder of the path.
   *
   * @throws IllegalArgumentException naming the module and the path
   */
  void checkPython(String module) {
    String rel = module.replace('.', File.separatorChar);
    for (Path p : entries()) {
      if (Files.isDirectory(p) && (Files.isRegularFile(p.resolve(rel + ".py"))
          || Files.isRegularFile(p.resolve(rel).resolve("__init__.py")))) {
        return;
      }
    }
    throw new IllegalArgumentException("Python module " + module + " is in no folder of the workers' code search path "
        + entries() + ": add its folder with DriverSession.Builder.codeSearchPath(...)");
  }

  /** Whether a class loaded from {@code from} (a jar or a class folder) is found through this path. */
  boolean covers(Path from) {
    for (Path e : entries()) {
      // Ray takes a jar, a class folder, or a folder whose jars it adds
      if (from.equals(e) || (Files.isDirectory(e) && from.getParent() != null && from.getParent().equals(e))) {
        return true;
      }
    }
    return false;
  }

  private static Optional<Class<?>> implClass(Serializable ref) {
    try {
      Method writeReplace = ref.getClass().getDeclaredMethod("writeReplace");
      writeReplace.setAccessible(true);
      SerializedLambda l = (SerializedLambda) writeReplace.invoke(ref);
      return Optional.of(Class.forName(l.getImplClass().replace('/', '.'), false, ref.getClass().getClassLoader()));
    } catch (ReflectiveOperationException | ClassCastException e) {
      return Optional.empty(); // not a method reference: Ray will say what it cannot load
    }
  }
}
