package dev.ravel.driver.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.DisabledOnOs;
import org.junit.jupiter.api.condition.OS;
import org.junit.jupiter.api.io.TempDir;

final class RayHomeTest {
  private static final String VENV_NAME = "ray-" + RayHome.DEFAULT_RAY_VERSION + "-py311";

  @TempDir
  Path tmp;

  private String savedRavelHome;

  @BeforeEach
  void saveRavelHome() {
    savedRavelHome = System.getProperty("ravel.home");
    System.clearProperty("ravel.home");
  }

  @AfterEach
  void restoreRavelHome() {
    if (savedRavelHome == null) {
      System.clearProperty("ravel.home");
    } else {
      System.setProperty("ravel.home", savedRavelHome);
    }
  }

  @Test
  void locate_ravelRayVenvWinsOverTheCache() {
    Path venv = tmp.resolve("my-venv");

    RayHome home = RayHome.locate(Map.of("RAVEL_RAY_VENV", venv.toString(), "XDG_CACHE_HOME", tmp.toString()));

    assertThat(home.venv()).isEqualTo(venv);
  }

  @Test
  void locate_xdgCacheHomeHoldsTheDefaultVenv() {
    RayHome home = RayHome.locate(Map.of("XDG_CACHE_HOME", tmp.toString()));

    assertThat(home.venv()).isEqualTo(tmp.resolve("ravel").resolve(VENV_NAME));
  }

  @Test
  void locate_emptyVariablesCountAsUnset() {
    RayHome home = RayHome.locate(Map.of("RAVEL_RAY_VENV", "", "XDG_CACHE_HOME", ""));

    assertThat(home.venv())
        .isEqualTo(Path.of(System.getProperty("user.home"), ".cache", "ravel", VENV_NAME));
  }

  @Test
  void locate_ravelHomePropertyWinsOverEnvironment() {
    System.setProperty("ravel.home", tmp.resolve("a").resolve("..").resolve("checkout").toString());

    RayHome home = RayHome.locate(Map.of("RAVEL_HOME", "/somewhere/else"));

    assertThat(home.ravelHome()).isEqualTo(tmp.resolve("checkout").toAbsolutePath());
  }

  @Test
  void locate_ravelHomeFromEnvironmentWithoutProperty() {
    RayHome home = RayHome.locate(Map.of("RAVEL_HOME", tmp.toString()));

    assertThat(home.ravelHome()).isEqualTo(tmp.toAbsolutePath());
  }

  @Test
  void rayCommand_missingVenvTellsToRunSetupScript() {
    Path venv = tmp.resolve("missing-venv");
    RayHome home = RayHome.locate(Map.of("RAVEL_RAY_VENV", venv.toString()));

    assertThatThrownBy(home::rayCommand)
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining(venv.toString())
        .hasMessageContaining("scripts/setup-ray.sh")
        .hasMessageContaining(RayHome.DEFAULT_RAY_VERSION);
  }

  @Test
  @DisabledOnOs(OS.WINDOWS)
  void rayCommand_installedVenvGivesItsRayExecutable() throws IOException {
    Path venv = tmp.resolve("venv");
    Path ray = Files.createDirectories(venv.resolve("bin")).resolve("ray");
    Files.writeString(ray, "#!/bin/sh\n");
    Files.setPosixFilePermissions(ray, PosixFilePermissions.fromString("rwxr-xr-x"));

    assertThat(RayHome.locate(Map.of("RAVEL_RAY_VENV", venv.toString())).rayCommand()).isEqualTo(ray);
  }

  @Test
  void workerCodeSearchPath_unbuiltTreeSaysToBuild() {
    System.setProperty("ravel.home", tmp.toString());
    RayHome home = RayHome.locate(Map.of());

    assertThatThrownBy(home::workerCodeSearchPath)
        .hasMessageContaining("workers are not built under " + tmp.resolve("workers").resolve("target"))
        .hasMessageContaining("mvn -DskipTests package");
  }

  @Test
  void workerCodeSearchPath_jarWithoutDependencyFolderSaysToBuild() throws IOException {
    Path target = Files.createDirectories(tmp.resolve("workers").resolve("target"));
    Files.writeString(target.resolve("workers-0.1.0-SNAPSHOT.jar"), "");
    System.setProperty("ravel.home", tmp.toString());
    RayHome home = RayHome.locate(Map.of());

    assertThatThrownBy(home::workerCodeSearchPath)
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("mvn -DskipTests package");
  }

  @Test
  void workerCodeSearchPath_builtTreeGivesTheWorkersJarAndItsLibFolder() throws IOException {
    Path target = Files.createDirectories(tmp.resolve("workers").resolve("target"));
    Path jar = Files.writeString(target.resolve("workers-0.1.0-SNAPSHOT.jar"), "");
    Files.writeString(target.resolve("workers-0.1.0-SNAPSHOT-tests.jar"), "");
    Path lib = Files.createDirectories(target.resolve("worker-lib"));
    System.setProperty("ravel.home", tmp.toString());

    assertThat(RayHome.locate(Map.of()).workerCodeSearchPath())
        .containsExactly(jar.toAbsolutePath(), lib.toAbsolutePath());
  }

  @Test
  void locate_ravelRayVersionPicksTheVirtualenvOfThatVersion() {
    RayHome home = RayHome.locate(Map.of("RAVEL_RAY_VERSION", "2.39.0", "XDG_CACHE_HOME", tmp.toString()));

    assertThat(home.version()).isEqualTo("2.39.0");
    assertThat(home.venv()).isEqualTo(tmp.resolve("ravel").resolve("ray-2.39.0-py311"));
  }

  @Test
  void locate_badVersionIsRejectedNamingTheSetting() {
    assertThatThrownBy(() -> RayHome.locate(Map.of("RAVEL_RAY_VERSION", "latest")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("RAVEL_RAY_VERSION").hasMessageContaining("'latest'");
  }

  @Test
  void rayJar_theVirtualenvsWheelJarAndItsRelease() throws IOException {
    Path jars = Files.createDirectories(tmp.resolve("venv/lib/python3.11/site-packages/ray/jars"));
    Path jar = Files.createFile(jars.resolve("ray_dist.jar"));
    Files.writeString(jars.getParent().resolve("_version.py"), "commit = \"abc\"\nversion = \"2.60.0\"\n");

    RayHome home = RayHome.locate(Map.of("RAVEL_RAY_VENV", tmp.resolve("venv").toString()));

    assertThat(home.rayJar()).isEqualTo(jar);
    assertThat(RayHome.versionOfJar(jar)).contains("2.60.0");
  }

  @Test
  void rayJar_ravelRayJarWinsAndMustExist() throws IOException {
    Path jar = Files.createFile(tmp.resolve("cluster-ray.jar"));

    assertThat(RayHome.locate(Map.of("RAVEL_RAY_JAR", jar.toString())).rayJar()).isEqualTo(jar);
    assertThat(RayHome.locate(Map.of("RAVEL_RAY_JAR", jar.toString())).jarOverride()).contains(jar);
    assertThatThrownBy(() -> RayHome.locate(Map.of("RAVEL_RAY_JAR", tmp.resolve("gone.jar").toString())).rayJar())
        .isInstanceOf(IllegalStateException.class).hasMessageContaining("RAVEL_RAY_JAR");
    assertThatThrownBy(() -> RayHome.locate(Map.of("RAVEL_RAY_VENV", tmp.resolve("empty").toString())).rayJar())
        .isInstanceOf(IllegalStateException.class).hasMessageContaining("scripts/setup-ray.sh");
  }

  @Test
  void versionOfJar_mavenJarsByNameOthersUnknown() {
    assertThat(RayHome.versionOfJar(Path.of("/m2/io/ray/ray-runtime-2.39.0.jar"))).contains("2.39.0");
    assertThat(RayHome.versionOfJar(Path.of("/m2/io/ray/ray-api-2.39.0.jar"))).contains("2.39.0");
    assertThat(RayHome.versionOfJar(tmp.resolve("somewhere/ray_dist.jar"))).isEmpty();
  }
}
