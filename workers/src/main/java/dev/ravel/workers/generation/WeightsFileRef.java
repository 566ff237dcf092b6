package dev.ravel.workers.generation;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.Serializable;
import java.util.Map;

/**
 * A Python trainer's weights as one file that inference servers load themselves ({@code ravel-file}: vLLM with
 * Ravel's weight-transfer backend, README "Real vLLM"), as the trainer's {@code publish_file} answers: the driver
 * passes it to the generation workers instead of the weights, and each sends it to its servers as vLLM's
 * {@code update_info}.
 *
 * @param path the file, where every server of the run reads it (the run folder)
 * @param sha256 the file's SHA-256 in hex, which each server checks before it loads
 * @param bytes the file's size
 * @param version the weight version the file holds
 */
public record WeightsFileRef(String path, String sha256, long bytes, long version) implements Serializable {
  private static final ObjectMapper JSON = new ObjectMapper();
  /** The keys of vLLM's {@code update_info} for {@code ravel-file} (the plugin's {@code RavelFileUpdateInfo}). */
  static final String PATH = "path";
  static final String SHA256 = "sha256";
  static final String BYTES = "bytes";
  static final String VERSION = "version";

  public WeightsFileRef {
    if (path == null || path.isBlank()) {
      throw new IllegalArgumentException("weights file: no path");
    }
    if (sha256 == null || !sha256.matches("[0-9a-f]{64}")) {
      throw new IllegalArgumentException("weights file " + path + ": sha256 must be 64 hex digits, got " + sha256);
    }
    if (bytes <= 0 || version < 0) {
      throw new IllegalArgumentException("weights file " + path + ": bytes " + bytes + " and version " + version
          + " must be positive and non-negative");
    }
  }

  /**
   * The reference a Python trainer's {@code publish_file} answered ({@code {"path", "sha256", "bytes",
   * "version"}}).
   *
   * @throws IllegalArgumentException naming the missing or bad field
   */
  public static WeightsFileRef parse(String json) {
    JsonNode n;
    try {
      n = JSON.readTree(json);
    } catch (java.io.IOException e) {
      throw new IllegalArgumentException("weights file reference: not JSON (" + e.getMessage() + "): " + json, e);
    }
    for (String k : new String[] {PATH, SHA256, BYTES, VERSION}) {
      if (n == null || !n.hasNonNull(k)) {
        throw new IllegalArgumentException("weights file reference: no '" + k + "' in " + json);
      }
    }
    return new WeightsFileRef(n.get(PATH).asText(), n.get(SHA256).asText(), n.get(BYTES).asLong(),
        n.get(VERSION).asLong());
  }

  /** vLLM's {@code update_info} for this file. */
  public Map<String, Object> updateInfo() {
    return Map.of(PATH, path, SHA256, sha256, BYTES, bytes);
  }
}
