package dev.ravel.telemetry.view;

import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.Locale;

/** Shared formatting: durations, percentages, instants, ids, and making foreign text safe to print. */
final class Fmt {
  private static final DateTimeFormatter INSTANT =
      DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss.SSS 'UTC'", Locale.ROOT).withZone(ZoneOffset.UTC);

  private Fmt() {}

  /** A compact duration: {@code 850ns}, {@code 12.3us}, {@code 4.56ms}, {@code 1.23s}, {@code 2m05s}, {@code 1h02m}. */
  static String duration(long nanos) {
    if (nanos < 0) {
      return "-" + duration(nanos == Long.MIN_VALUE ? Long.MAX_VALUE : -nanos);
    }
    if (nanos < 1_000L) {
      return nanos + "ns";
    }
    if (nanos < 1_000_000L) {
      return decimal(nanos / 1e3) + "us";
    }
    if (nanos < 1_000_000_000L) {
      return decimal(nanos / 1e6) + "ms";
    }
    if (nanos < 60_000_000_000L) {
      return decimal(nanos / 1e9) + "s";
    }
    long s = nanos / 1_000_000_000L;
    if (s < 3600) {
      return (s / 60) + "m" + two(s % 60) + "s";
    }
    return (s / 3600) + "h" + two((s % 3600) / 60) + "m";
  }

  private static String decimal(double x) {
    if (x < 9.995) {
      return String.format(Locale.ROOT, "%.2f", x);
    }
    if (x < 99.95) {
      return String.format(Locale.ROOT, "%.1f", x);
    }
    return String.format(Locale.ROOT, "%.0f", x);
  }

  private static String two(long x) {
    return x < 10 ? "0" + x : Long.toString(x);
  }

  /** A share as a whole percentage; a positive share under half a percent shows as {@code <1%}. */
  static String percent(double share) {
    if (share > 0 && share < 0.005) {
      return "<1%";
    }
    return Math.round(share * 100) + "%";
  }

  /** Epoch nanoseconds as a UTC date and time with milliseconds. */
  static String instant(long epochNanos) {
    return INSTANT.format(Instant.ofEpochSecond(Math.floorDiv(epochNanos, 1_000_000_000L),
        Math.floorMod(epochNanos, 1_000_000_000L)));
  }

  /** The first {@code n} code points of {@code s}. */
  static String cut(String s, int n) {
    if (s.codePointCount(0, s.length()) <= n) {
      return s;
    }
    return s.substring(0, s.offsetByCodePoints(0, n));
  }

  /** The first 8 characters of an id. */
  static String shortId(String id) {
    return id.length() <= 8 ? id : id.substring(0, 8);
  }

  /** Foreign text made printable on one terminal line: control characters (ESC, newlines, ...) become '?'. */
  static String clean(String s) {
    if (s == null) {
      return "";
    }
    StringBuilder sb = null;
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      boolean control = c < 0x20 || (c >= 0x7f && c < 0xa0);
      if (control) {
        if (sb == null) {
          sb = new StringBuilder(s.length()).append(s, 0, i);
        }
        sb.append('?');
      } else if (sb != null) {
        sb.append(c);
      }
    }
    return sb == null ? s : sb.toString();
  }

  /**
   * Text escaped for HTML content and attribute values: {@code & < > " '} as references, every character
   * beyond ASCII as a numeric reference (so the document is ASCII whatever encoding it is written in), and
   * control characters as U+FFFD.
   */
  static String html(String s) {
    if (s == null) {
      return "";
    }
    StringBuilder sb = new StringBuilder(s.length() + 16);
    for (int i = 0; i < s.length(); ) {
      int cp = s.codePointAt(i);
      i += Character.charCount(cp);
      switch (cp) {
        case '&' -> sb.append("&amp;");
        case '<' -> sb.append("&lt;");
        case '>' -> sb.append("&gt;");
        case '"' -> sb.append("&quot;");
        case '\'' -> sb.append("&#39;");
        default -> {
          if ((cp < 0x20 && cp != '\t' && cp != '\n') || (cp >= 0x7f && cp < 0xa0)
              || (cp >= 0xd800 && cp <= 0xdfff)) {
            sb.append("&#xfffd;");
          } else if (cp > 0x7e) {
            sb.append("&#x").append(Integer.toHexString(cp)).append(';');
          } else {
            sb.append((char) cp);
          }
        }
      }
    }
    return sb.toString();
  }

  /**
   * JSON text made safe inside {@code <script type="application/json">} and ASCII-only: {@code < > &} and
   * every character beyond ASCII become {@code \}{@code uXXXX} escapes. Valid because in JSON those characters
   * can only occur inside strings, where the escapes mean the same characters.
   */
  static String scriptJson(String json) {
    StringBuilder sb = new StringBuilder(json.length() + 64);
    for (int i = 0; i < json.length(); i++) {
      char c = json.charAt(i);
      if (c == '<' || c == '>' || c == '&' || c > 0x7e) {
        sb.append('\\').append('u').append(String.format(Locale.ROOT, "%04x", (int) c));
      } else {
        sb.append(c);
      }
    }
    return sb.toString();
  }
}
