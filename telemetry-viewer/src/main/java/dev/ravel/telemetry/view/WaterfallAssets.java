package dev.ravel.telemetry.view;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.Locale;

/**
 * The stylesheet and script of the HTML waterfall, {@code waterfall.css} and {@code waterfall.js} next to this
 * class on the classpath ({@code dev/ravel/telemetry/view/}). {@link HtmlWaterfall} inlines them into its page,
 * so they must be ASCII (the page is) and must not contain their element's closing tag; both are checked.
 *
 * <p>Read once, on first use; a missing or unfit file fails that use (and the next ones) with an
 * {@link IllegalStateException} naming the resource, instead of producing a page without styles or code.
 */
final class WaterfallAssets {
  static final String CSS_RESOURCE = "waterfall.css";
  static final String JS_RESOURCE = "waterfall.js";

  private static WaterfallAssets loaded;

  private final String css;
  private final String js;

  private WaterfallAssets(String css, String js) {
    this.css = css;
    this.js = js;
  }

  /** The assets, read from the classpath on the first call. */
  static synchronized WaterfallAssets get() {
    if (loaded == null) {
      loaded = new WaterfallAssets(read(CSS_RESOURCE, "</style"), read(JS_RESOURCE, "</script"));
    }
    return loaded;
  }

  /** The stylesheet, for {@code <style>}. */
  String css() {
    return css;
  }

  /** The script, for {@code <script>}. */
  String js() {
    return js;
  }

  /**
   * The text of resource {@code name} next to this class (UTF-8), checked to be ASCII and free of
   * {@code closingTag} (any case).
   *
   * @throws IllegalStateException when the resource is missing or unfit
   */
  static String read(String name, String closingTag) {
    String path = WaterfallAssets.class.getPackageName().replace('.', '/') + "/" + name;
    String text;
    try (InputStream in = WaterfallAssets.class.getResourceAsStream(name)) {
      if (in == null) {
        throw new IllegalStateException("classpath resource " + path + " is missing; the HTML waterfall inlines it"
            + " (is the telemetry-core jar complete?)");
      }
      text = new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read classpath resource " + path, e);
    }
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      if (c > 0x7e || (c < 0x20 && c != '\n' && c != '\t')) {
        throw new IllegalStateException("classpath resource " + path + " must be printable ASCII; character "
            + i + " is U+" + String.format(Locale.ROOT, "%04X", (int) c));
      }
    }
    if (text.toLowerCase(Locale.ROOT).contains(closingTag)) {
      throw new IllegalStateException("classpath resource " + path + " contains " + closingTag
          + ", which would end its inline element early");
    }
    return text;
  }
}
