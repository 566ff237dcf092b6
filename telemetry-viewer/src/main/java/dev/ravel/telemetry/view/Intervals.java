package dev.ravel.telemetry.view;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/**
 * Lengths of unions of time intervals ({@code [start, end)} in nanoseconds), clipped to a window: how long
 * something was busy when its calls overlap.
 */
public final class Intervals {
  private Intervals() {}

  /** {@code [start, end)} clipped to {@code [lo, hi)}, or null when nothing is left. */
  static long[] clip(long start, long end, long lo, long hi) {
    long s = Math.max(start, lo);
    long e = Math.min(end, hi);
    return e > s ? new long[] {s, e} : null;
  }

  /** The total length covered by the intervals (overlaps counted once). */
  public static long unionLength(List<long[]> intervals) {
    List<long[]> sorted = new ArrayList<>(intervals);
    sorted.sort(Comparator.<long[]>comparingLong(a -> a[0]).thenComparingLong(a -> a[1]));
    long total = 0;
    long curStart = 0;
    long curEnd = Long.MIN_VALUE;
    for (long[] iv : sorted) {
      if (iv[0] > curEnd) {
        if (curEnd != Long.MIN_VALUE) {
          total += curEnd - curStart;
        }
        curStart = iv[0];
        curEnd = iv[1];
      } else if (iv[1] > curEnd) {
        curEnd = iv[1];
      }
    }
    if (curEnd != Long.MIN_VALUE) {
      total += curEnd - curStart;
    }
    return total;
  }

  /** The union length of two lists together. */
  static long unionLength(List<long[]> a, List<long[]> b) {
    List<long[]> all = new ArrayList<>(a);
    all.addAll(b);
    return unionLength(all);
  }
}
