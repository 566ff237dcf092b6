package dev.ravel.driver.session;

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
  void remove_folderWithOtherFiles_isKeptWhole() throws Exception {
    Path folder = Files.createDirectories(tmp.resolve("1796483857440"));
    Files.write(folder.resolve(NativeLibraryCopy.LIBRARY), new byte[] {1});
    Files.writeString(folder.resolve("notes.txt"), "someone's");
    assertThat(NativeLibraryCopy.remove(folder)).isFalse();
    assertThat(folder.resolve(NativeLibraryCopy.LIBRARY)).exists();
    assertThat(folder.resolve("notes.txt")).hasContent("someone's");
  }
}
