package dev.ravel.driver.session;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The workers' code search path: what of the class path goes on it, and the checks before an actor is made. */
final class CodeSearchPathTest {
  @TempDir
  Path dir;

  /** A Ravel checkout: a reactor pom and a module with its build output, and the workers' jars. */
  private Path ravelHome() throws IOException {
    Path home = Files.createDirectories(dir.resolve("ravel"));
    Files.writeString(home.resolve("pom.xml"),
        "<project><modules><module>workers</module>\n<module> driver </module></modules></project>");
    Files.createDirectories(home.resolve("workers/target/worker-lib"));
    Files.writeString(home.resolve("workers/pom.xml"), "<project/>");
    Files.createDirectories(home.resolve("driver/target/classes"));
    Files.writeString(home.resolve("driver/pom.xml"), "<project/>");
    Files.writeString(home.resolve("workers/target/workers-0.1.0-SNAPSHOT.jar"), "jar");
    Files.createDirectories(home.resolve("examples/app/target/classes"));
    Files.createDirectories(home.resolve("my-app/target/classes"));
    Files.writeString(home.resolve("my-app/pom.xml"), "<project/>"); // an application of its own, not a module
    return home;
  }

  @Test
  void userClasspath_keepsTheApplicationsEntriesAndDropsRavelsAndRays() throws IOException {
    Path home = ravelHome();
    Path app = Files.createDirectories(dir.resolve("app/target/classes"));
    Path lib = Files.writeString(dir.resolve("mylib-1.0.jar"), "jar");
    Path ravelJar = Files.writeString(dir.resolve("workers-0.1.0-SNAPSHOT.jar"), "jar"); // from ~/.m2
    Path rayJar = Files.writeString(dir.resolve("ray_dist.jar"), "jar");
    String cp = String.join(File.pathSeparator, app.toString(), home.resolve("driver/target/classes").toString(),
        lib.toString(), ravelJar.toString(), rayJar.toString(), dir.resolve("gone.jar").toString(),
        home.resolve("examples/app/target/classes").toString(), home.resolve("my-app/target/classes").toString());

    List<Path> user = CodeSearchPath.userClasspath(cp, home, Set.of("workers-0.1.0-SNAPSHOT.jar"));

    assertThat(user).containsExactly(app, lib, home.resolve("examples/app/target/classes"),
        home.resolve("my-app/target/classes"));
  }

  @Test
  void of_missingUserEntry_namesIt() throws IOException {
    Path home = ravelHome();
    assertThatThrownBy(() -> CodeSearchPath.of(List.of(home.resolve("workers/target/worker-lib")),
        List.of(dir.resolve("nowhere")), home, Set.of()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("code search path: " + dir.resolve("nowhere") + " does not exist");
  }

  @Test
  void entries_ravelsFirstThenTheUsersWithoutDuplicates() throws IOException {
    Path home = ravelHome();
    Path lib = home.resolve("workers/target/worker-lib");
    Path py = Files.createDirectories(dir.resolve("py"));
    CodeSearchPath p = CodeSearchPath.of(List.of(lib), List.of(py, lib, py), home, Set.of());
    assertThat(p.entries()).containsExactly(lib, py);
    assertThat(p.user()).containsExactly(py);
  }

  @Test
  void checkJava_classNotOnThePath_namesTheClassWhereItCameFromAndThePath() throws IOException {
    Path home = ravelHome();
    CodeSearchPath p = CodeSearchPath.of(List.of(home.resolve("workers/target/worker-lib")), List.of(), home, Set.of());
    assertThatThrownBy(() -> p.checkJava(CodeSearchPathTest.class))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("actor class " + CodeSearchPathTest.class.getName() + " (loaded from ")
        .hasMessageContaining("is not on the workers' code search path [" + home.resolve("workers/target/worker-lib"))
        .hasMessageContaining("DriverSession.Builder.codeSearchPath");
  }

  @Test
  void checkJava_classFolderOnThePath_passes() throws Exception {
    Path home = ravelHome();
    Path classes = Path.of(CodeSearchPathTest.class.getProtectionDomain().getCodeSource().getLocation().toURI());
    CodeSearchPath p = CodeSearchPath.of(List.of(), List.of(classes), home, Set.of());
    p.checkJava(CodeSearchPathTest.class);
    p.checkJava(String.class); // the JDK's: no code source
  }

  @Test
  void checkPython_moduleOrPackageInAFolder_passesAndMissingNamesModuleAndPath() throws IOException {
    Path home = ravelHome();
    Path py = Files.createDirectories(dir.resolve("py"));
    Files.writeString(py.resolve("shouter.py"), "");
    Files.createDirectories(py.resolve("pkg/sub"));
    Files.writeString(py.resolve("pkg/sub/__init__.py"), "");
    CodeSearchPath p = CodeSearchPath.of(List.of(), List.of(py), home, Set.of());
    p.checkPython("shouter");
    p.checkPython("pkg.sub");
    assertThatThrownBy(() -> p.checkPython("nope.mod"))
        .hasMessageContaining("Python module nope.mod is in no folder of the workers' code search path [" + py);
  }
}
