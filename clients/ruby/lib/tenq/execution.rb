# SPDX-License-Identifier: Apache-2.0
# frozen_string_literal: true

module Tenq
  # Runs one task through the middleware and its handler and says how it
  # ended: the one place that turns a handler's return or exception into an
  # outcome, for the worker and the test mode alike.
  module Execution
    # How a run ended. +ok+: the result; else the error text and how to retry.
    Outcome = Struct.new(:ok, :result, :error, :retry_in, :no_retry, :cancelled, :stop_reason) do
      # The outcome as POST /v1/outcomes (and a lease) takes it.
      # @return [Hash]
      def to_wire(task)
        h = { "id" => task.id, "token" => task.token, "ok" => ok }
        if ok
          h["result"] = result
        else
          h["error"] = error
          h["retry_in_ms"] = (retry_in * 1000).round if retry_in
          h["retry"] = false if no_retry
          h["cancelled"] = true if cancelled
        end
        h["stats"] = task.stats if task.stats
        h
      end
    end

    # A success with no result, the most common outcome: one, shared.
    SUCCESS = Outcome.new(true, nil).freeze
    # A step parked the job ({Parked}): the worker drops it (its lease is over).
    PARKED = Outcome.new(false, nil, "parked").freeze

    module_function

    # @param task [Task]
    # @param entry [Registry::Entry, nil] nil: no handler for the type
    # @param middleware [Middleware::Chain, nil]
    # @return [Outcome]
    def perform(task, entry, middleware)
      return failure("no handler for type #{task.type}") unless entry

      result = middleware ? middleware.invoke(task) { entry.callable.call(task) } : entry.callable.call(task)
      returned(task, result)
    rescue Stopped => e
      stopped(task, e.reason)
    rescue Parked
      PARKED # a step parked the job: its lease is over, nothing is reported
    rescue Retry => e
      failure(describe(e), retry_in: e.retry_in.to_f, cancelled: task.cancelled?)
    rescue NoRetry => e
      failure(describe(e), no_retry: true, cancelled: task.cancelled?)
    rescue StandardError, ScriptError, SystemStackError, NoMemoryError => e
      failure(describe(e), cancelled: task.cancelled?)
    end

    # What a handler returned: a result (any JSON), or a {Retry} or
    # {NoRetry} returned rather than raised.
    # @return [Outcome]
    def returned(task, result)
      raise result if result.is_a?(Retry) || result.is_a?(NoRetry)

      return SUCCESS if result.nil?

      JSONValue.check!(result, "result")
      Outcome.new(true, result)
    rescue InvalidError => e
      failure("invalid result: #{e.message}", cancelled: task.cancelled?)
    end

    # The outcome of a handler stopped for +reason+.
    # @return [Outcome]
    def stopped(task, reason)
      case reason
      when :timeout then failure("timeout")
      when :shutdown then failure("worker stopped", retry_in: 0)
      when :cancelled then failure("cancelled", cancelled: true)
      else failure("stopped (#{reason})", cancelled: task.cancelled?)
      end.tap { |o| o.stop_reason = reason }
    end

    def failure(error, retry_in: nil, no_retry: false, cancelled: false)
      Outcome.new(false, nil, error, retry_in, no_retry, cancelled)
    end

    # "RuntimeError: the message", the text a failed job records.
    # @return [String]
    def describe(error)
      message = error.respond_to?(:original_message) ? error.original_message : error.message
      text = "#{error.class}: #{message}"
      text = text.encode("UTF-8", invalid: :replace, undef: :replace) unless text.encoding == Encoding::UTF_8
      text.scrub[0, 4000]
    end
  end
end
