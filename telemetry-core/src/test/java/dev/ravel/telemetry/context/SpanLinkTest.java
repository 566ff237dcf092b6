package dev.ravel.telemetry.context;

import static org.assertj.core.api.Assertions.assertThat;

import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.api.trace.TraceFlags;
import io.opentelemetry.api.trace.TraceState;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import org.junit.jupiter.api.Test;

final class SpanLinkTest {
  private static final String TRACE = "0af7651916cd43dd8448eb211c80319c";
  private static final String SPAN = "b7ad6b7169203331";

  @Test
  void of_validContextRoundTripsIdsAndFlagsAsARemoteContext() {
    SpanContext sampled = SpanContext.create(TRACE, SPAN, TraceFlags.getSampled(), TraceState.getDefault());

    SpanContext back = SpanLink.of(sampled).spanContext();

    assertThat(back.getTraceId()).isEqualTo(TRACE);
    assertThat(back.getSpanId()).isEqualTo(SPAN);
    assertThat(back.isSampled()).isTrue();
    assertThat(back.isRemote()).isTrue();
  }

  @Test
  void of_unsampledContextStaysUnsampled() {
    SpanContext unsampled = SpanContext.create(TRACE, SPAN, TraceFlags.getDefault(), TraceState.getDefault());

    assertThat(SpanLink.of(unsampled).spanContext().isSampled()).isFalse();
  }

  @Test
  void of_invalidOrNullIsNone() {
    assertThat(SpanLink.of(SpanContext.getInvalid())).isSameAs(SpanLink.NONE);
    assertThat(SpanLink.of(null)).isSameAs(SpanLink.NONE);
    assertThat(SpanLink.NONE.isValid()).isFalse();
    assertThat(SpanLink.NONE.spanContext().isValid()).isFalse();
  }

  @Test
  void serialization_keepsTheValue() throws Exception {
    SpanLink link = SpanLink.of(SpanContext.create(TRACE, SPAN, TraceFlags.getSampled(), TraceState.getDefault()));
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (ObjectOutputStream out = new ObjectOutputStream(bytes)) {
      out.writeObject(link);
    }
    Object back;
    try (ObjectInputStream in = new ObjectInputStream(new ByteArrayInputStream(bytes.toByteArray()))) {
      back = in.readObject();
    }

    assertThat(back).isEqualTo(link).hasSameHashCodeAs(link);
    assertThat(((SpanLink) back).traceId()).isEqualTo(TRACE);
    assertThat(((SpanLink) back).spanId()).isEqualTo(SPAN);
  }
}
