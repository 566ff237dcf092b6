package dev.ravel.workers.generation.openai;

import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.api.common.AttributesBuilder;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.api.trace.TraceFlags;
import io.opentelemetry.api.trace.TraceState;
import io.opentelemetry.proto.common.v1.AnyValue;
import io.opentelemetry.proto.common.v1.KeyValue;
import io.opentelemetry.proto.trace.v1.ResourceSpans;
import io.opentelemetry.proto.trace.v1.ScopeSpans;
import io.opentelemetry.proto.trace.v1.Span;
import io.opentelemetry.proto.trace.v1.Status;
import io.opentelemetry.sdk.common.InstrumentationLibraryInfo;
import io.opentelemetry.sdk.common.InstrumentationScopeInfo;
import io.opentelemetry.sdk.resources.Resource;
import io.opentelemetry.sdk.trace.data.EventData;
import io.opentelemetry.sdk.trace.data.LinkData;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.data.StatusData;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;

/**
 * Spans received over OTLP (protobuf) as the SDK's {@link SpanData}, so that the process's own OTLP exporter can send
 * them on unchanged: ids, parent, kind, times, status, attributes (scalars and arrays of one type; other values as
 * their protobuf text), events and links, the resource and the instrumentation scope.
 */
final class ReceivedSpans {
  private static final HexFormat HEX = HexFormat.of();

  private ReceivedSpans() {}

  /** Every span of {@code rs} (its resource as given). */
  static List<SpanData> of(ResourceSpans rs) {
    Resource resource = Resource.create(attributes(rs.getResource().getAttributesList()), rs.getSchemaUrl().isEmpty()
        ? null : rs.getSchemaUrl());
    List<SpanData> out = new ArrayList<>();
    for (ScopeSpans ss : rs.getScopeSpansList()) {
      var scope = ss.getScope();
      var builder = InstrumentationScopeInfo.builder(scope.getName().isEmpty() ? "unknown" : scope.getName())
          .setAttributes(attributes(scope.getAttributesList()));
      if (!scope.getVersion().isEmpty()) {
        builder.setVersion(scope.getVersion());
      }
      if (!ss.getSchemaUrl().isEmpty()) {
        builder.setSchemaUrl(ss.getSchemaUrl());
      }
      InstrumentationScopeInfo info = builder.build();
      for (Span s : ss.getSpansList()) {
        out.add(new Received(s, resource, info));
      }
    }
    return out;
  }

  static Attributes attributes(List<KeyValue> kvs) {
    AttributesBuilder b = Attributes.builder();
    for (KeyValue kv : kvs) {
      put(b, kv.getKey(), kv.getValue());
    }
    return b.build();
  }

  private static void put(AttributesBuilder b, String key, AnyValue v) {
    switch (v.getValueCase()) {
      case STRING_VALUE -> b.put(key, v.getStringValue());
      case BOOL_VALUE -> b.put(key, v.getBoolValue());
      case INT_VALUE -> b.put(key, v.getIntValue());
      case DOUBLE_VALUE -> b.put(key, v.getDoubleValue());
      case ARRAY_VALUE -> array(b, key, v.getArrayValue().getValuesList());
      case VALUE_NOT_SET -> { }
      default -> b.put(key, v.toString().strip()); // kvlist, bytes: no SDK attribute type holds them
    }
  }

  private static void array(AttributesBuilder b, String key, List<AnyValue> values) {
    AnyValue.ValueCase kind = values.isEmpty() ? AnyValue.ValueCase.STRING_VALUE : values.get(0).getValueCase();
    if (values.stream().anyMatch(v -> v.getValueCase() != kind)) {
      b.put(AttributeKey.stringArrayKey(key), values.stream().map(v -> v.toString().strip()).toList());
      return;
    }
    switch (kind) {
      case BOOL_VALUE -> b.put(AttributeKey.booleanArrayKey(key), values.stream().map(AnyValue::getBoolValue).toList());
      case INT_VALUE -> b.put(AttributeKey.longArrayKey(key), values.stream().map(AnyValue::getIntValue).toList());
      case DOUBLE_VALUE -> b.put(AttributeKey.doubleArrayKey(key),
          values.stream().map(AnyValue::getDoubleValue).toList());
      case STRING_VALUE -> b.put(AttributeKey.stringArrayKey(key),
          values.stream().map(AnyValue::getStringValue).toList());
      default -> b.put(AttributeKey.stringArrayKey(key), values.stream().map(v -> v.toString().strip()).toList());
    }
  }

  private static SpanContext context(com.google.protobuf.ByteString traceId, com.google.protobuf.ByteString spanId,
      int flags) {
    if (traceId.isEmpty() || spanId.isEmpty()) {
      return SpanContext.getInvalid();
    }
    return SpanContext.create(HEX.formatHex(traceId.toByteArray()), HEX.formatHex(spanId.toByteArray()),
        TraceFlags.fromByte((byte) (flags & 0xff)), TraceState.getDefault());
  }

  private static SpanKind kind(Span.SpanKind k) {
    return switch (k) {
      case SPAN_KIND_SERVER -> SpanKind.SERVER;
      case SPAN_KIND_CLIENT -> SpanKind.CLIENT;
      case SPAN_KIND_PRODUCER -> SpanKind.PRODUCER;
      case SPAN_KIND_CONSUMER -> SpanKind.CONSUMER;
      default -> SpanKind.INTERNAL;
    };
  }

  private static StatusData status(Status s) {
    return switch (s.getCode()) {
      case STATUS_CODE_OK -> StatusData.create(StatusCode.OK, s.getMessage());
      case STATUS_CODE_ERROR -> StatusData.create(StatusCode.ERROR, s.getMessage());
      default -> StatusData.unset();
    };
  }

  /** One received span; immutable (its parts are read once, at construction). */
  private static final class Received implements SpanData {
    private final Span span;
    private final Resource resource;
    private final InstrumentationScopeInfo scope;
    private final SpanContext context;
    private final SpanContext parent;
    private final Attributes attributes;
    private final List<EventData> events;
    private final List<LinkData> links;

    Received(Span s, Resource resource, InstrumentationScopeInfo scope) {
      this.span = s;
      this.resource = resource;
      this.scope = scope;
      // the sampled flag: the span was exported, so it was sampled whatever its flags field says
      this.context = context(s.getTraceId(), s.getSpanId(), s.getFlags() | TraceFlags.getSampled().asByte());
      this.parent = context(s.getTraceId(), s.getParentSpanId(), TraceFlags.getSampled().asByte());
      this.attributes = attributes(s.getAttributesList());
      this.events = s.getEventsList().stream().map(e -> EventData.create(e.getTimeUnixNano(), e.getName(),
          attributes(e.getAttributesList()), e.getAttributesCount() + e.getDroppedAttributesCount())).toList();
      this.links = s.getLinksList().stream().map(l -> LinkData.create(context(l.getTraceId(), l.getSpanId(),
          l.getFlags()), attributes(l.getAttributesList()), l.getAttributesCount()
          + l.getDroppedAttributesCount())).toList();
    }

    @Override
    public String getName() {
      return span.getName();
    }

    @Override
    public SpanKind getKind() {
      return kind(span.getKind());
    }

    @Override
    public SpanContext getSpanContext() {
      return context;
    }

    @Override
    public SpanContext getParentSpanContext() {
      return parent;
    }

    @Override
    public StatusData getStatus() {
      return status(span.getStatus());
    }

    @Override
    public long getStartEpochNanos() {
      return span.getStartTimeUnixNano();
    }

    @Override
    public Attributes getAttributes() {
      return attributes;
    }

    @Override
    public List<EventData> getEvents() {
      return events;
    }

    @Override
    public List<LinkData> getLinks() {
      return links;
    }

    @Override
    public long getEndEpochNanos() {
      return span.getEndTimeUnixNano();
    }

    @Override
    public boolean hasEnded() {
      return true;
    }

    @Override
    public int getTotalRecordedEvents() {
      return span.getEventsCount() + span.getDroppedEventsCount();
    }

    @Override
    public int getTotalRecordedLinks() {
      return span.getLinksCount() + span.getDroppedLinksCount();
    }

    @Override
    public int getTotalAttributeCount() {
      return span.getAttributesCount() + span.getDroppedAttributesCount();
    }

    @Override
    @SuppressWarnings("deprecation")
    public InstrumentationLibraryInfo getInstrumentationLibraryInfo() {
      return InstrumentationLibraryInfo.create(scope.getName(), scope.getVersion(), scope.getSchemaUrl());
    }

    @Override
    public InstrumentationScopeInfo getInstrumentationScopeInfo() {
      return scope;
    }

    @Override
    public Resource getResource() {
      return resource;
    }
  }
}
