package dev.ravel.workers.actor;

import static org.assertj.core.api.Assertions.assertThat;

import io.ray.api.exception.CrossLanguageException;
import org.junit.jupiter.api.Test;

class PythonWorkerExceptionTest {
  /** What Ray 2.60 gives a Java caller when a Python actor method raises (colour codes included). */
  private static final String RAY_MESSAGE = "An exception raised from PYTHON:\n"
      + "ray.exceptions.RayTaskError: \u001B[36mray::PolicyTrainer.train()\u001B[39m (pid=11655, ip=127.0.0.1,"
      + " actor_id=96c419131fec0df1ba22b47201000000, repr=<ravel_workers.actors.PolicyTrainer object at 0x7f>)\n"
      + "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
      + "  File \"/work/main/workers/src/main/python/ravel_workers/role.py\", line 14, in call\n"
      + "    raise ValueError(\"batch: size 3 is not a positive multiple of group_size 4\")\n"
      + "ValueError: batch: size 3 is not a positive multiple of group_size 4\n";

  @Test
  void of_rayMessage_namesThePythonTypeAndMessage() {
    PythonWorkerException e = PythonWorkerException.of("PolicyTrainer.train", new CrossLanguageException(RAY_MESSAGE));

    assertThat(e.pythonType()).isEqualTo("ValueError");
    assertThat(e.pythonMessage()).isEqualTo("batch: size 3 is not a positive multiple of group_size 4");
    assertThat(e.getMessage()).isEqualTo("ValueError: batch: size 3 is not a positive multiple of group_size 4"
        + " (in Python PolicyTrainer.train)");
    assertThat(e.traceback()).contains("role.py\", line 14").doesNotContain("\u001B[");
  }

  @Test
  void of_qualifiedExceptionWithoutMessage_keepsTheQualifiedName() {
    PythonWorkerException e = PythonWorkerException.of("GenerationWorker.generate",
        new CrossLanguageException("An exception raised from PYTHON:\nray.exceptions.RayTaskError: x\n"
            + "  File \"a.py\", line 1, in f\ntorch.OutOfMemoryError\n"));

    assertThat(e.pythonType()).isEqualTo("torch.OutOfMemoryError");
    assertThat(e.pythonMessage()).isEmpty();
  }

  @Test
  void of_noExceptionLine_keepsTheLastLine() {
    PythonWorkerException e = PythonWorkerException.of("X.y", new CrossLanguageException("something odd\nthe end"));

    assertThat(e.pythonType()).isEqualTo("PythonError");
    assertThat(e.pythonMessage()).isEqualTo("the end");
  }

  @Test
  void pythonName_camelCaseBecomesSnakeCase() {
    assertThat(RavelActorHandle.pythonName("generateAsync")).isEqualTo("generate_async");
    assertThat(RavelActorHandle.pythonName("updateWeights")).isEqualTo("update_weights");
    assertThat(RavelActorHandle.pythonName("train")).isEqualTo("train");
  }
}
