package dev.ravel.driver.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class NativeLibraryCopyTest {
  @TempDir
  Path tmp;

  private static String mapsLine(String path) {
    return "7f1c2a000000-7f1c2a400000 r-xp 00000000 fd:00 123456                     " + path;
  }

  @Test
  void folderIn_driversOwnCopy_isFound() {
    List<String> maps = List.of(mapsLine("/usr/lib/x86_64-linux-gnu/libc.so.6"),
        mapsLine("/tmp/ray/1796483857439/libcore_worker_library_java.so"));
    assertThat(NativeLibraryCopy.folderIn(maps)).contains(Path.of("/tmp/ray/1796483857439"));
  }

  @Test
  void folderIn_sessionFolderOrNoLibrary_isNotFound() {
    assertThat(NativeLibraryCopy.folderIn(List.of(
        mapsLine("/tmp/ray/session_2026-12-05_15-14-34_866063_28274/libcore_worker_library_java.so"),
        mapsLine("/tmp/ray/1796483857439/libother.so"), "7f1c2a000000-7f1c2a400000 rw-p 00000000 00:00 0"))).isEmpty();
    // a folder named by digits outside Ray's temp folder is someone else's
    assertThat(NativeLibraryCopy.folderIn(List.of(mapsLine("/opt/vendor/1796483857439/libcore_worker_library_java.so"))))
        .isEmpty();
  }

  @Test
  void remove_folderWithTheLibraryAndLockOnly_isRemoved() throws Exception {
    Path folder = Files.createDirectories(tmp.resolve("1796483857439"));
    Files.write(folder.resolve(NativeLibraryCopy.LIBRARY), new byte[] {1, 2, 3});
    Files.createFile(folder.resolve("file_lock"));
    assertThat(NativeLibraryCopy.remove(folder)).isTrue();
    assertThat(folder).doesNotExist();
  }

  @Test
  void remove_lockHeldByAnotherDriverCopying_keepsTheFolder() throws Exception {
    Path folder = Files.createDirectories(tmp.resolve("1796483857441"));
    Files.write(folder.resolve(NativeLibraryCopy.LIBRARY), new byte[] {1});
    // held from another process in real life; from this JVM the second lock attempt is refused the same way
    try (java.nio.channels.FileChannel ch = java.nio.channels.FileChannel.open(folder.resolve("file_lock"),
        java.nio.file.StandardOpenOption.CREATE, java.nio.file.StandardOpenOption.WRITE);
        java.nio.channels.FileLock held = ch.lock()) {
      assertThat(held.isValid()).isTrue();
      assertThat(NativeLibraryCopy.remove(folder)).isFalse();
    }
    assertThat(folder.resolve(NativeLibraryCopy.LIBRARY)).exists();
  }

  @Test
  void remove_folderWithOtherFiles_isKeptWhole() throws Exception {
    Path folder = Files.createDirectories(tmp.resolve("1796483857440"));
    Files.write(folder.resolve(NativeLibraryCopy.LIBRARY), new byte[] {1});
    Files.writeString(folder.resolve("notes.txt"), "someone's");
    assertThat(NativeLibraryCopy.remove(folder)).isFalse();
    assertThat(folder.resolve(NativeLibraryCopy.LIBRARY)).exists();
    assertThat(folder.resolve("notes.txt")).hasContent("someone's");
  }

  @Test
  void sessionIn_rayStartsExitLogLine_namesTheSessionFolder() {
    List<String> log = List.of("2026-12-05 15:19:30,087\tINFO scripts.py:1274 -- Local node IP: 127.0.0.1",
        "2026-12-05 15:19:30,087\tINFO scripts.py:1274 -- Process exit logs will be saved to: \u001b[1m"
            + "/tmp/ray/session_2026-12-05_15-19-25_568664_12955/logs/ray_process_exit.log\u001b[22m\u001b[26m");
    assertThat(NativeLibraryCopy.sessionIn(log)).contains(Path.of("/tmp/ray/session_2026-12-05_15-19-25_568664_12955"));
    assertThat(NativeLibraryCopy.sessionIn(List.of("no such line"))).isEmpty();
  }

  @Test
  void removeSessionCopy_stoppedHeadsSession_losesTheLibraryKeepsTheLogs() throws Exception {
    Path session = Files.createDirectories(tmp.resolve("ray/session_2026-12-05_15-19-25_568664_12955/logs"))
        .getParent();
    Files.write(session.resolve(NativeLibraryCopy.LIBRARY), new byte[] {1, 2});
    Files.writeString(session.resolve("logs/raylet.out"), "kept");
    Path headLog = tmp.resolve("ray-head-1234.log");
    Files.writeString(headLog, "INFO -- Process exit logs will be saved to: " + session + "/logs/ray_process_exit.log\n");
    NativeLibraryCopy.removeSessionCopy(headLog);
    assertThat(session.resolve(NativeLibraryCopy.LIBRARY)).doesNotExist();
    assertThat(session.resolve("logs/raylet.out")).hasContent("kept");
  }
}
