# SPDX-License-Identifier: Apache-2.0
# frozen_string_literal: true

require "securerandom"

module Tenq
  # W3C trace context (https://www.w3.org/TR/trace-context/) as tenq keeps
  # it: the job field "traceparent", "00-<32 hex>-<16 hex>-<2 hex>",
  # lowercase. No tracing package is needed: the application gives the
  # client a hook that returns the current span's traceparent
  # (+Client.new(trace: -> { current_traceparent })+), and a worker's
  # {Middleware::Tracing} hands each job's traceparent to a hook that opens
  # the run's span as its child.
  module Traceparent
    FORMAT = /\A00-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-[0-9a-f]{2}\z/
    private_constant :FORMAT

    module_function

    # @param value [Object]
    # @return [Boolean] a traceparent the server takes
    def valid?(value)
      value.is_a?(String) && FORMAT.match?(value)
    end

    # @return [String] value
    # @raise [InvalidError] naming the field "traceparent"
    def check!(value, at = "")
      return value if valid?(value)

      raise InvalidError.new("#{at}traceparent must be 00-<32 hex>-<16 hex>-<2 hex> in lowercase, " \
                             "not #{value.inspect[0, 80]}", field: "traceparent")
    end

    # A new traceparent (a fresh trace id and span id, sampled): for tests
    # and for applications without a tracer that want jobs correlated.
    # @return [String]
    def generate(sampled: true)
      "00-#{SecureRandom.hex(16)}-#{SecureRandom.hex(8)}-#{sampled ? '01' : '00'}"
    end

    # The trace id (32 hex) of a traceparent.
    # @return [String, nil]
    def trace_id(value)
      valid?(value) ? value[3, 32] : nil
    end

    # The parent span id (16 hex) of a traceparent.
    # @return [String, nil]
    def span_id(value)
      valid?(value) ? value[36, 16] : nil
    end
  end
end
