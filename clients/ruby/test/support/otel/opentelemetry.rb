# SPDX-License-Identifier: Apache-2.0
# frozen_string_literal: true

require "securerandom"

# A stand-in for the part of the opentelemetry-api gem's interface that the
# README's tracing recipe calls (Debian packages no Ruby OpenTelemetry, and
# only Debian's registry is reachable here): OpenTelemetry.tracer_provider
# .tracer(name, version).in_span(name, attributes:, kind:) { |span, context| },
# OpenTelemetry.propagation.inject(carrier) / .extract(carrier) with W3C
# traceparent, OpenTelemetry::Context.with_current(context) { },
# OpenTelemetry::Trace.current_span. Written from that interface's
# documentation; finished spans are kept in OpenTelemetryStandIn.finished
# (the SDK's in-memory exporter's part).
module OpenTelemetryStandIn
  FINISHED = [] # rubocop:disable Style/MutableConstant -- the finished spans, appended to
  LOCK = Mutex.new

  def self.finished
    LOCK.synchronize { FINISHED.dup }
  end
end

module OpenTelemetry
  # The current context: a span, kept per thread (fibers aside).
  class Context
    attr_reader :span

    def initialize(span = nil)
      @span = span
    end

    def self.current
      Thread.current[:otel_stand_in_context] ||= Context.new
    end

    def self.with_current(context)
      before = current
      Thread.current[:otel_stand_in_context] = context
      yield context
    ensure
      Thread.current[:otel_stand_in_context] = before
    end
  end

  module Trace
    SpanContext = Struct.new(:hex_trace_id, :hex_span_id)
    Span = Struct.new(:name, :kind, :attributes, :context, :parent_span_id)

    def self.current_span(context = Context.current)
      context.span
    end

    class Tracer
      def in_span(name, attributes: nil, links: nil, start_timestamp: nil, kind: nil) # rubocop:disable Lint/UnusedMethodArgument
        parent = Context.current.span
        trace_id = parent ? parent.context.hex_trace_id : SecureRandom.hex(16)
        span = Span.new(name, kind || :internal, attributes || {}, SpanContext.new(trace_id, SecureRandom.hex(8)),
                        parent&.context&.hex_span_id)
        Context.with_current(Context.new(span)) { |ctx| yield span, ctx }
      ensure
        OpenTelemetryStandIn::LOCK.synchronize { OpenTelemetryStandIn::FINISHED << span } if span
      end
    end

    class TracerProvider
      def tracer(_name = nil, _version = nil)
        Tracer.new
      end
    end
  end

  # W3C Trace Context.
  class Propagator
    def inject(carrier, context: Context.current)
      span = context.span
      carrier["traceparent"] = "00-#{span.context.hex_trace_id}-#{span.context.hex_span_id}-01" if span
      carrier
    end

    def extract(carrier, context: Context.current)
      m = /\A00-(\h{32})-(\h{16})-\h{2}\z/.match(carrier["traceparent"].to_s)
      return context unless m

      Context.new(Trace::Span.new("(remote)", :remote, {}, Trace::SpanContext.new(m[1], m[2]), nil))
    end
  end

  def self.tracer_provider
    @tracer_provider ||= Trace::TracerProvider.new
  end

  def self.propagation
    @propagation ||= Propagator.new
  end
end
