package dev.ravel.telemetry.view;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

final class WaterfallAssetsTest {
  @Test
  void get_readsTheStylesheetAndScriptOnce() {
    WaterfallAssets assets = WaterfallAssets.get();

    assertThat(WaterfallAssets.get()).isSameAs(assets);
    assertThat(assets.css()).contains(".span-row{").contains(".error .bar{background:#e53935 !important}")
        .endsWith("}\n");
    assertThat(assets.js()).startsWith("(function () {").contains("'use strict';")
        .contains("document.getElementById('trace-data')").endsWith("}());\n");
  }

  @Test
  void get_assetsAreAsciiAndNeedNothingFromTheNetwork() {
    WaterfallAssets assets = WaterfallAssets.get();

    for (String text : new String[] {assets.css(), assets.js()}) {
      assertThat(text.chars()).allMatch(c -> c == '\n' || (c >= 0x20 && c < 0x7f));
      assertThat(text).doesNotContain("http:").doesNotContain("https:").doesNotContain("url(")
          .doesNotContain("@import");
    }
  }

  @Test
  void read_missingResource_failsNamingItsClasspathPath() {
    assertThatThrownBy(() -> WaterfallAssets.read("no-such-asset.css", "</style"))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageStartingWith("classpath resource dev/ravel/telemetry/view/no-such-asset.css is missing");
  }

  @Test
  void read_resourceWithItsClosingTagInAnyCase_fails() {
    assertThatThrownBy(() -> WaterfallAssets.read("test-closing-tag.js", "</script"))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("dev/ravel/telemetry/view/test-closing-tag.js contains </script");
  }

  @Test
  void read_resourceBeyondAscii_failsNamingTheCharacter() {
    assertThatThrownBy(() -> WaterfallAssets.read("test-not-ascii.css", "</style"))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("dev/ravel/telemetry/view/test-not-ascii.css must be printable ASCII")
        .hasMessageContaining("U+00E9");
  }
}
