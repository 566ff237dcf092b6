package dev.ravel.driver.trackers;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.ravel.telemetry.config.ConfigException;
import dev.ravel.telemetry.runs.StepRecord;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The {@code tensorboard} tracker: TensorBoard event files under {@code runs/<run-id>/tensorboard/}, written by
 * TensorBoard's own writer in a Python process of the run's ({@code python -m ravel_workers.trackers}, the Ray
 * virtualenv's interpreter), fed one JSON line per step and acknowledging each once it is flushed. Its standard
 * error goes to {@value #ERR_FILE} in that folder. A writer that died is started again for the next steps (in a
 * new event file of the same folder, which TensorBoard reads as one run).
 */
final class TensorBoardSink implements Sink {
  /** The folder of the event files, in the run folder. */
  static final String DIR = "tensorboard";
  /** The writer's standard error, in {@link #DIR}. */
  static final String ERR_FILE = "writer.err";
  /** How long the writer may take to close its file once its input ended. */
  static final long EXIT_TIMEOUT_S = 20;
  /** How long the check of the interpreter may take. */
  static final long CHECK_TIMEOUT_S = 60;
  private static final ObjectMapper JSON = new ObjectMapper();

  private final Path python;
  private final Path pythonPath;
  private final Path logdir;
  private Process process;
  private OutputStream in;
  private BufferedReader out;

  /**
   * @param python the interpreter with {@code tensorboard} installed (the Ray virtualenv's)
   * @param pythonPath the folder holding {@code ravel_workers}
   * @param runDir the run folder
   */
  TensorBoardSink(Path python, Path pythonPath, Path runDir) {
    this.python = python;
    this.pythonPath = pythonPath;
    this.logdir = runDir.resolve(DIR);
  }

  /**
   * Fails unless {@code python} imports TensorBoard's event-file writer (the Ray virtualenv of
   * {@code scripts/setup-ray.sh} has it).
   *
   * @throws ConfigException naming {@code telemetry.trackers}
   */
  static void checkPython(Path python) {
    String why;
    Path out = null;
    try {
      out = Files.createTempFile("ravel-tensorboard-check", ".txt");
      Process p = new ProcessBuilder(python.toString(), "-c", "import tensorboard.summary.writer.event_file_writer")
          .redirectErrorStream(true).redirectOutput(out.toFile()).start();
      p.getOutputStream().close();
      if (!p.waitFor(CHECK_TIMEOUT_S, TimeUnit.SECONDS)) {
        p.destroyForcibly(); // our own child, not yet reaped: its PID is still its own
        why = "did not answer within " + CHECK_TIMEOUT_S + " s";
      } else if (p.exitValue() == 0) {
        return;
      } else {
        String text = Files.readString(out, StandardCharsets.UTF_8).strip();
        why = text.isEmpty() ? "exit code " + p.exitValue() : text.lines().reduce((x, y) -> y).orElse(text);
      }
    } catch (IOException e) {
      why = e.getMessage();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      why = "interrupted";
    } finally {
      if (out != null) {
        try {
          Files.deleteIfExists(out);
        } catch (IOException e) {
          // a temporary file left behind
        }
      }
    }
    throw new ConfigException("telemetry.trackers", "tensorboard needs the tensorboard package in the Python of the"
        + " Ray virtualenv (scripts/setup-ray.sh installs it): " + python + ": " + why);
  }

  @Override
  public String name() {
    return "tensorboard";
  }

  @Override
  public synchronized void start() throws IOException {
    if (process != null && process.isAlive()) {
      return;
    }
    Files.createDirectories(logdir);
    ProcessBuilder pb = new ProcessBuilder(python.toString(), "-m", "ravel_workers.trackers", logdir.toString())
        .directory(pythonPath.toFile())
        .redirectError(ProcessBuilder.Redirect.appendTo(logdir.resolve(ERR_FILE).toFile()));
    pb.environment().put("PYTHONPATH", pythonPath.toString());
    pb.environment().put("PYTHONUNBUFFERED", "1");
    // the writer needs nothing of the driver's secrets or telemetry settings
    pb.environment().keySet().removeIf(k -> k.startsWith("MLFLOW_") || k.startsWith("OTEL_")
        || dev.ravel.telemetry.env.WorkerEnvironment.isSecret(k));
    try {
      process = pb.start();
    } catch (IOException e) {
      throw new IOException("cannot start the TensorBoard writer with " + python + ": " + e.getMessage(), e);
    }
    in = process.getOutputStream();
    out = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
  }

  /** One step as the writer reads it. */
  static String line(StepRecord m, long wallTimeMillis) throws IOException {
    ObjectNode doc = JSON.createObjectNode().put("step", m.step()).put("wall_time", wallTimeMillis / 1000.0);
    ObjectNode scalars = doc.putObject("scalars");
    TrackerMetrics.of(m).forEach((k, v) -> {
      if (Double.isFinite(v)) {
        scalars.put(k, v);
      } else {
        scalars.put(k, Double.isNaN(v) ? "NaN" : v > 0 ? "Infinity" : "-Infinity");
      }
    });
    return JSON.writeValueAsString(doc);
  }

  @Override
  public void send(List<StepRecord> steps) throws IOException {
    Process p;
    synchronized (this) {
      start(); // again, if the writer died
      p = process;
    }
    long now = System.currentTimeMillis();
    StringBuilder lines = new StringBuilder();
    for (StepRecord m : steps) {
      lines.append(line(m, now)).append('\n');
    }
    try {
      in.write(lines.toString().getBytes(StandardCharsets.UTF_8));
      in.flush();
      for (StepRecord m : steps) {
        String ack = out.readLine();
        if (ack == null) {
          throw new IOException("ended");
        }
        JsonNode a = JSON.readTree(ack);
        if (a.path("step").asInt(-1) != m.step()) {
          throw new IOException("acknowledged '" + ack + "' for step " + m.step());
        }
      }
    } catch (IOException e) {
      throw new IOException("the TensorBoard writer " + ended(p) + " (" + e.getMessage() + "); see "
          + logdir.resolve(ERR_FILE) + lastError(), e);
    }
  }

  private String ended(Process p) {
    try {
      if (p.waitFor(2, TimeUnit.SECONDS)) {
        return "ended with exit code " + p.exitValue();
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    return "stopped answering";
  }

  private String lastError() {
    try {
      List<String> lines = Files.readAllLines(logdir.resolve(ERR_FILE), StandardCharsets.UTF_8);
      for (int i = lines.size() - 1; i >= 0; i--) {
        if (!lines.get(i).isBlank()) {
          String l = lines.get(i).strip();
          return ": " + (l.length() > 200 ? l.substring(0, 197) + "..." : l);
        }
      }
    } catch (IOException e) {
      // no log to quote
    }
    return "";
  }

  @Override
  public void finish(String status) throws IOException, InterruptedException {
    Process p;
    synchronized (this) {
      p = process;
    }
    if (p == null) {
      return;
    }
    in.close(); // end of input: the writer closes its file and exits
    if (!p.waitFor(EXIT_TIMEOUT_S, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      throw new IOException("the TensorBoard writer did not exit within " + EXIT_TIMEOUT_S + " s of its input's end");
    }
    if (p.exitValue() != 0) {
      throw new IOException("the TensorBoard writer ended with exit code " + p.exitValue() + "; see "
          + logdir.resolve(ERR_FILE) + lastError());
    }
  }

  @Override
  public synchronized void close() {
    if (process != null && process.isAlive()) {
      process.destroyForcibly(); // our own child, by its handle
    }
  }

  @Override
  public Map<String, Object> details() {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("logdir", logdir.toString());
    return m;
  }
}
