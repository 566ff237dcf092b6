package dev.ravel.it.trace;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ravel.it.support.GrpoRuns;
import dev.ravel.it.support.RavelCommand;
import dev.ravel.telemetry.traces.SpanRecord;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.function.BooleanSupplier;
import java.util.logging.Level;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.openqa.selenium.By;
import org.openqa.selenium.Dimension;
import org.openqa.selenium.JavascriptExecutor;
import org.openqa.selenium.Keys;
import org.openqa.selenium.OutputType;
import org.openqa.selenium.TakesScreenshot;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.interactions.Actions;
import org.openqa.selenium.logging.LogType;

/**
 * The HTML waterfall of a real run in a real headless Chromium, as a user reads it (issue 31 item 7): the
 * engine's requests folded as the terminal folds them (count, p50, max) and unfolded by a click, search by name
 * and by attribute, zoom on a time range (inputs and a drag on the ruler), and the layout of the waterfall and
 * of the run report at 1400 and 800 px: headers and legends inside their boxes, clear of the first bar.
 */
final class WaterfallBrowserIT {
  private static final Duration WAIT = Duration.ofSeconds(20);

  @TempDir
  static Path dir;
  static Path runs;
  static GrpoRuns.Finished run;
  static Path target;
  static Path html;
  static ChromeDriver browser;
  /** The spans of step 1's trace, by span id. */
  static Map<String, SpanRecord> spans;
  static long traceStart;

  @BeforeAll
  static void aRunAndABrowser() throws Exception {
    runs = dir.resolve("runs");
    // 9 requests on 2 workers: one worker runs at least 5, which the waterfalls fold
    run = GrpoRuns.run(runs, "it-waterfall", "run.mode=sync", "grpo.steps=2", "grpo.prompts_per_step=3",
        "grpo.group_size=3", "generation.workers=2", "telemetry.engine_tracing=true",
        "telemetry.engine_sample_ratio=1.0");
    target = Path.of(System.getProperty("ravel.home"), "integration-tests", "target");
    html = target.resolve("waterfall-it-waterfall-step1.html");
    RavelCommand.Result r = TraceCommandIT.ravel("trace", "it-waterfall", "--step", "1", "--html", html.toString(),
        "--runs-dir", runs.toString());
    assertThat(r.exitCode()).as(r.stderr()).isZero();
    String traceId = run.traces().named("rl.grpo.step").stream()
        .filter(s -> Long.valueOf(1).equals(s.attributes().get("rl.step"))).findFirst().orElseThrow().traceId();
    spans = run.traces().byTrace().get(traceId).stream()
        .collect(Collectors.toMap(SpanRecord::spanId, s -> s, (a, b) -> a, java.util.LinkedHashMap::new));
    traceStart = spans.values().stream().mapToLong(SpanRecord::startNanos).min().orElseThrow();
    browser = TraceCommandIT.chromium();
  }

  @AfterAll
  static void done() {
    if (browser != null) {
      browser.quit();
    }
  }

  private static void open() {
    browser.manage().window().setSize(new Dimension(1400, 1000));
    browser.get(html.toUri().toString());
    waitFor("the waterfall's rows", () -> !browser.findElements(By.cssSelector(".span-row")).isEmpty());
  }

  private static void waitFor(String what, BooleanSupplier condition) {
    long deadline = System.nanoTime() + WAIT.toNanos();
    while (!condition.getAsBoolean()) {
      assertThat(System.nanoTime()).as("waited %s for %s", WAIT, what).isLessThan(deadline);
      try {
        Thread.sleep(50);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new AssertionError(e);
      }
    }
  }

  private static List<WebElement> displayed(String css) {
    return browser.findElements(By.cssSelector(css)).stream().filter(WebElement::isDisplayed).toList();
  }

  private static Set<String> ids(List<WebElement> rows) {
    return rows.stream().map(e -> e.getAttribute("data-span-id")).collect(Collectors.toSet());
  }

  private static void noBrowserErrors() {
    assertThat(browser.manage().logs().get(LogType.BROWSER).getAll().stream()
        .filter(e -> e.getLevel().intValue() >= Level.SEVERE.intValue()).map(Object::toString)).isEmpty();
  }

  @Test
  void fold_theEnginesRequestsAreOneRowWithCountP50AndMaxAsInTheTerminalAndAClickShowsThem() throws Exception {
    open();
    List<WebElement> folds = browser.findElements(By.cssSelector(".fold-row"));
    assertThat(folds).as("folded groups of llm_request").isNotEmpty();
    RavelCommand.Result terminal = TraceCommandIT.ravel("trace", "it-waterfall", "--step", "1", "--runs-dir",
        runs.toString(), "--width", "200");
    assertThat(terminal.exitCode()).as(terminal.stderr()).isZero();
    for (WebElement fold : folds) {
      String id = fold.getAttribute("data-fold-id");
      String name = fold.getAttribute("data-span-name");
      String parent = fold.getAttribute("data-parent-id");
      // the spans it stands for: the parent's children of that name (without errors, one process), each with its
      // lifecycle children (an llm_request's queued, prefill, decode), which fold with it
      List<SpanRecord> expected = spans.values().stream()
          .filter(s -> s.parentSpanId().equals(parent) && s.name().equals(name)).toList();
      Set<String> rows = new java.util.HashSet<>(expected.stream().map(SpanRecord::spanId).toList());
      spans.values().stream().filter(s -> rows.contains(s.parentSpanId())).toList()
          .forEach(c -> rows.add(c.spanId()));
      List<WebElement> members = browser.findElements(By.cssSelector(".span-row[data-fold-id='" + id + "']"));
      assertThat(ids(members)).isEqualTo(rows);
      assertThat(members).noneMatch(WebElement::isDisplayed);
      long[] d = expected.stream().mapToLong(SpanRecord::durationNanos).sorted().toArray();
      assertThat(fold.getAttribute("data-fold-count")).isEqualTo(Integer.toString(d.length));
      assertThat(fold.getAttribute("data-fold-p50-nanos")).isEqualTo(Long.toString(d[(d.length - 1) / 2]));
      assertThat(fold.getAttribute("data-fold-max-nanos")).isEqualTo(Long.toString(d[d.length - 1]));
      assertThat(fold.findElement(By.cssSelector(".fold-count")).getText()).isEqualTo(Integer.toString(d.length));
      String label = fold.findElement(By.cssSelector(".fold-label")).getText();
      assertThat(label).startsWith(d.length + " spans p50 ");
      // the terminal's folded row of the same spans says the same
      assertThat(terminal.stdout()).contains(name + " x" + d.length).contains(label + " p");
    }

    WebElement fold = folds.get(0);
    String id = fold.getAttribute("data-fold-id");
    int n = browser.findElements(By.cssSelector(".span-row[data-fold-id='" + id + "']")).size();
    WebElement toggle = fold.findElement(By.cssSelector("button.fold-toggle"));
    assertThat(toggle.getAttribute("aria-expanded")).isEqualTo("false");
    toggle.click();
    waitFor("the folded rows to show", () -> displayed(".span-row[data-fold-id='" + id + "']").size() == n);
    assertThat(toggle.getAttribute("aria-expanded")).isEqualTo("true");
    assertThat(fold.getAttribute("class")).contains("unfolded");
    // the keyboard folds them again (a button: Enter)
    toggle.sendKeys(Keys.ENTER);
    waitFor("the rows to fold again", () -> displayed(".span-row[data-fold-id='" + id + "']").isEmpty());
    assertThat(toggle.getAttribute("aria-expanded")).isEqualTo("false");
    noBrowserErrors();
  }

  /** Spans whose name or attributes ({@code key=value}) contain {@code q}, as the page's search has it. */
  private static Set<String> matching(String q) {
    String needle = q.toLowerCase(Locale.ROOT);
    return spans.values().stream().filter(s -> s.name().toLowerCase(Locale.ROOT).contains(needle)
            || s.attributes().entrySet().stream().anyMatch(e -> (e.getKey() + "=" + jsText(e.getValue()))
                .toLowerCase(Locale.ROOT).contains(needle)))
        .map(SpanRecord::spanId).collect(Collectors.toSet());
  }

  private static String jsText(Object v) {
    if (v instanceof Double x && x == Math.rint(x) && Math.abs(x) < 1e15) {
      return Long.toString(x.longValue());
    }
    return String.valueOf(v);
  }

  private static void search(String q) {
    WebElement box = browser.findElement(By.id("span-search"));
    box.sendKeys(Keys.chord(Keys.CONTROL, "a"), Keys.BACK_SPACE);
    box.sendKeys(q);
    waitFor("the search for " + q, () -> q.isEmpty()
        ? browser.findElement(By.id("search-count")).getAttribute("data-matches") == null
        : q.equals(((JavascriptExecutor) browser).executeScript("return document.getElementById('span-search').value"))
            && browser.findElement(By.id("search-count")).getAttribute("data-matches") != null);
  }

  @Test
  void search_byNameOrAttributeHighlightsExactlyTheMatchingSpansCountsThemAndMarksTheirFolds() {
    open();
    Set<String> byName = matching("LLM_Request");
    assertThat(byName).as("the engine's requests").hasSizeGreaterThanOrEqualTo(5);
    search("LLM_Request");
    assertThat(ids(browser.findElements(By.cssSelector(".span-row.search-hit")))).isEqualTo(byName);
    assertThat(browser.findElements(By.cssSelector(".span-row.search-miss"))).hasSize(spans.size() - byName.size());
    WebElement count = browser.findElement(By.id("search-count"));
    assertThat(count.getAttribute("data-matches")).isEqualTo(Integer.toString(byName.size()));
    assertThat(count.getText()).startsWith(byName.size() + " spans match");
    for (WebElement fold : browser.findElements(By.cssSelector(".fold-row"))) {
      // every span in the fold matches: the requests and their lifecycle children (llm_request.*)
      Set<String> inFold = ids(browser.findElements(By.cssSelector(".span-row[data-fold-id='"
          + fold.getAttribute("data-fold-id") + "']")));
      assertThat(byName).containsAll(inFold);
      assertThat(fold.getAttribute("class")).contains("has-match");
      assertThat(fold.findElement(By.cssSelector(".fold-match")).getText()).isEqualTo(inFold.size() + " matches");
    }

    Set<String> byAttribute = matching("rl.step=1");
    assertThat(byAttribute).as("the step's root").isNotEmpty();
    search("rl.step=1");
    assertThat(ids(browser.findElements(By.cssSelector(".span-row.search-hit")))).isEqualTo(byAttribute);
    assertThat(browser.findElement(By.id("search-count")).getAttribute("data-matches"))
        .isEqualTo(Integer.toString(byAttribute.size()));

    search("");
    assertThat(browser.findElements(By.cssSelector(".search-hit, .search-miss"))).isEmpty();
    assertThat(browser.findElement(By.id("search-count")).getText()).isEmpty();
    noBrowserErrors();
  }

  @Test
  void zoom_toATimeRangeRescalesTheRulerAndBarsAndDimsTheSpansOutsideThenResets() {
    open();
    List<String> ticks = browser.findElements(By.cssSelector(".ruler .tick")).stream().map(WebElement::getText).toList();
    long extent = spans.values().stream().mapToLong(SpanRecord::endNanos).max().orElseThrow() - traceStart;
    // around the reward phase (half its length either side), on whole microseconds: data processing and
    // training are outside
    SpanRecord reward = spans.values().stream().filter(s -> s.name().equals("rl.grpo.reward_calculation"))
        .findFirst().orElseThrow();
    long from = Math.max(0, reward.startNanos() - traceStart - reward.durationNanos() / 2) / 1000 * 1000;
    long to = (reward.endNanos() - traceStart + reward.durationNanos() / 2) / 1000 * 1000;
    WebElement fromBox = browser.findElement(By.id("zoom-from"));
    WebElement toBox = browser.findElement(By.id("zoom-to"));
    fromBox.sendKeys(String.format(Locale.ROOT, "%.3f", from / 1e6));
    toBox.sendKeys(String.format(Locale.ROOT, "%.3f", to / 1e6));
    browser.findElement(By.id("zoom-apply")).click();
    WebElement waterfall = browser.findElement(By.id("waterfall"));
    waitFor("the zoom", () -> waterfall.getAttribute("data-zoom-from-nanos") != null);
    assertThat(Long.parseLong(waterfall.getAttribute("data-zoom-from-nanos"))).isEqualTo(from);
    assertThat(Long.parseLong(waterfall.getAttribute("data-zoom-to-nanos"))).isEqualTo(to);
    assertThat(browser.findElement(By.id("zoom-range")).getText()).startsWith("showing ");
    List<String> zoomedTicks = browser.findElements(By.cssSelector(".ruler .tick")).stream()
        .map(WebElement::getText).toList();
    assertThat(zoomedTicks).hasSameSizeAs(ticks).isNotEqualTo(ticks);
    assertThat(zoomedTicks.get(0)).isNotEqualTo("0");

    int outside = 0;
    int inside = 0;
    for (WebElement row : browser.findElements(By.cssSelector(".span-row"))) {
      SpanRecord s = spans.get(row.getAttribute("data-span-id"));
      long start = s.startNanos() - traceStart;
      long end = s.endNanos() - traceStart;
      boolean out = end < from || start > to;
      assertThat(row.getAttribute("class").contains("out-of-range")).as("%s %d..%d", s.name(), start, end)
          .isEqualTo(out);
      if (out) {
        outside++;
        if (row.isDisplayed()) {
          assertThat(row.findElement(By.cssSelector(".bar")).isDisplayed()).isFalse();
        }
      } else if (start >= from && end <= to && row.isDisplayed()) {
        inside++;
        String left = row.findElement(By.cssSelector(".bar")).getAttribute("style");
        double expected = 100.0 * (start - from) / (to - from);
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("left: ([0-9.]+)%").matcher(left);
        assertThat(m.find()).as(left).isTrue();
        assertThat(Double.parseDouble(m.group(1))).as(s.name()).isCloseTo(expected,
            org.assertj.core.data.Offset.offset(0.01));
      }
    }
    assertThat(outside).as("spans outside the range").isPositive();
    assertThat(inside).as("spans inside the range").isPositive();
    assertThat(((JavascriptExecutor) browser).executeScript(
        "return document.documentElement.scrollWidth <= document.documentElement.clientWidth")).as("no sideways scroll")
        .isEqualTo(true);

    browser.findElement(By.id("zoom-reset")).click();
    waitFor("the reset", () -> waterfall.getAttribute("data-zoom-from-nanos") == null);
    assertThat(browser.findElements(By.cssSelector(".ruler .tick")).stream().map(WebElement::getText).toList())
        .isEqualTo(ticks);
    assertThat(browser.findElements(By.cssSelector(".out-of-range"))).isEmpty();

    // a drag across the middle half of the ruler zooms on that part of the trace
    WebElement ruler = browser.findElement(By.cssSelector(".ruler"));
    int width = ruler.getSize().getWidth();
    new Actions(browser).moveToElement(ruler, -width / 4, 0).clickAndHold().moveByOffset(width / 4, 0)
        .moveByOffset(width / 4, 0).release().perform();
    waitFor("the zoom by dragging", () -> waterfall.getAttribute("data-zoom-from-nanos") != null);
    long dragFrom = Long.parseLong(waterfall.getAttribute("data-zoom-from-nanos"));
    long dragTo = Long.parseLong(waterfall.getAttribute("data-zoom-to-nanos"));
    assertThat(dragFrom).isBetween(extent / 5, extent * 3 / 10);
    assertThat(dragTo).isBetween(extent * 7 / 10, extent * 4 / 5);
    browser.findElement(By.id("zoom-reset")).click();
    waitFor("the reset", () -> waterfall.getAttribute("data-zoom-from-nanos") == null);
    noBrowserErrors();
  }

  /**
   * What is wrong with the layout of the current page: any element of the given boxes that lies outside its
   * box or makes it scroll sideways, that overlaps the first span's bar (waterfall), or, in the report's
   * charts, legend entries outside their chart, on top of one another, or on a bar, a point or the plot.
   */
  private static List<String> layoutProblems() {
    String script = """
        var out = [];
        function r(e) { return e.getBoundingClientRect(); }
        function inside(a, b) { return a.left >= b.left - 0.5 && a.right <= b.right + 0.5 && a.top >= b.top - 0.5
          && a.bottom <= b.bottom + 0.5; }
        function overlap(a, b) { return a.left < b.right - 0.5 && b.left < a.right - 0.5 && a.top < b.bottom - 0.5
          && b.top < a.bottom - 0.5; }
        function name(e) { var c = e.getAttribute('class'); return e.tagName.toLowerCase() + (e.id ? '#' + e.id : '')
          + (c ? '.' + c.trim().split(/\\s+/).join('.') : '') + ' "' + (e.textContent || '').trim().substring(0, 30) + '"'; }
        function box(b) { return Math.round(b.left) + ',' + Math.round(b.top) + ' ' + Math.round(b.right) + ','
          + Math.round(b.bottom); }
        function contained(container) {
          if (container.scrollWidth > container.clientWidth + 1) {
            out.push(name(container) + ' scrolls sideways: ' + container.scrollWidth + ' > ' + container.clientWidth);
          }
          var b = r(container);
          Array.prototype.forEach.call(container.querySelectorAll('*'), function (e) {
            var x = r(e);
            if ((x.width === 0 && x.height === 0) || e.closest('[hidden]')) { return; }
            if (!inside(x, b)) { out.push(name(e) + ' [' + box(x) + '] outside ' + name(container) + ' [' + box(b) + ']'); }
          });
        }
        if (document.documentElement.scrollWidth > document.documentElement.clientWidth + 1) {
          out.push('the page scrolls sideways: ' + document.documentElement.scrollWidth);
        }
        var firstBar = document.querySelector('.span-row .bar');
        ['.trace-header', '.summary', '.legend', '.controls', '.tools', '.run-header'].forEach(function (css) {
          Array.prototype.forEach.call(document.querySelectorAll(css), function (c) {
            contained(c);
            if (firstBar && overlap(r(c), r(firstBar))) { out.push(name(c) + ' overlaps the first bar'); }
          });
        });
        Array.prototype.forEach.call(document.querySelectorAll('svg.chart'), function (svg) {
          var s = r(svg);
          var entries = Array.prototype.slice.call(svg.querySelectorAll('.legend-entry'));
          var marks = Array.prototype.slice.call(svg.querySelectorAll('.bar-part, .point, .axis path'));
          entries.forEach(function (e, i) {
            var x = r(e);
            if (!inside(x, s)) { out.push(svg.id + ': legend ' + name(e) + ' [' + box(x) + '] outside [' + box(s) + ']'); }
            entries.slice(i + 1).forEach(function (f) {
              if (overlap(x, r(f))) { out.push(svg.id + ': legend ' + name(e) + ' overlaps ' + name(f)); }
            });
            marks.forEach(function (m) {
              if (overlap(x, r(m))) { out.push(svg.id + ': legend ' + name(e) + ' overlaps ' + name(m)); }
            });
          });
        });
        return out;
        """;
    @SuppressWarnings("unchecked")
    List<Object> problems = (List<Object>) ((JavascriptExecutor) browser).executeScript(script);
    return problems.stream().map(String::valueOf).toList();
  }

  @Test
  void layout_headersAndLegendsStayInTheirBoxesAndOffTheFirstBarAt1400And800Px() throws Exception {
    Path report = target.resolve("report-it-waterfall.html");
    RavelCommand.Result r = TraceCommandIT.ravel("report", "it-waterfall", "--runs-dir", runs.toString(), "--html",
        report.toString());
    assertThat(r.exitCode()).as(r.stderr()).isZero();
    List<String> problems = new ArrayList<>();
    for (int width : List.of(1400, 800)) {
      browser.manage().window().setSize(new Dimension(width, 1000));
      for (Path page : List.of(html, report)) {
        browser.get(page.toUri().toString());
        waitFor("the page's script", () -> !browser.findElements(By.cssSelector(".span-row .bar, svg.chart *"))
            .isEmpty());
        long viewport = (Long) ((JavascriptExecutor) browser).executeScript("return window.innerWidth");
        assertThat(viewport).as("viewport of a %d px window", width).isBetween(width - 40L, (long) width);
        if (page.equals(report)) {
          assertThat(browser.findElements(By.cssSelector("#chart-step-time .legend-entry"))).hasSize(5);
        }
        layoutProblems().forEach(p -> problems.add(width + " px, " + page.getFileName() + ": " + p));
        String shot = page.getFileName().toString().replace(".html", "-" + width + ".png");
        Files.write(target.resolve(shot), ((TakesScreenshot) browser).getScreenshotAs(OutputType.BYTES));
      }
    }
    assertThat(problems).isEmpty();
    noBrowserErrors();
  }
}
