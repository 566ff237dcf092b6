package dev.ravel.workers.demo;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

final class Environments {
  static final String UNSET = "<unset>";

  private Environments() {}

  static Map<String, String> view(List<String> names) {
    Map<String, String> out = new LinkedHashMap<>();
    for (String n : names) {
      String v = System.getenv(n);
      out.put(n, v == null ? UNSET : v);
    }
    return out;
  }
}
