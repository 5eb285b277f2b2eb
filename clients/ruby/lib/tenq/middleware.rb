# SPDX-License-Identifier: Apache-2.0
# frozen_string_literal: true

module Tenq
  # Middleware around each submit (client) or each job a worker runs
  # (worker), as Sidekiq's client and server middleware: an object with
  # +call(job) { ... }+ that yields to go on and returns what the block
  # returned. A client middleware gets the job's Hash (string keys) and may
  # change it; a worker middleware gets the {Task} and sees the handler's
  # result (or its exception). Logging, error reporting and tracing go here;
  # a tracer would put its context into the job in a client middleware and
  # read it back in a worker middleware.
  module Middleware
    # An ordered list of middleware.
    class Chain
      include Enumerable

      def initialize
        @entries = []
      end

      # Adds a middleware at the end: an instance, or a class made with args.
      # @return [self]
      def add(middleware, *args)
        @entries << instantiate(middleware, args)
        self
      end
      alias << add

      # Adds a middleware at the front (it runs first).
      # @return [self]
      def prepend(middleware, *args)
        @entries.unshift(instantiate(middleware, args))
        self
      end

      # Removes every middleware of that class (or that instance).
      # @return [self]
      def remove(middleware)
        @entries.reject! { |m| m.equal?(middleware) || m.instance_of?(middleware) }
        self
      end

      def each(&block)
        @entries.each(&block)
      end

      def empty?
        @entries.empty?
      end

      def clear
        @entries.clear
      end

      # Runs the chain around the block.
      # @return [Object] what the block (through the chain) returned
      def invoke(job, &block)
        return yield if @entries.empty?

        step(job, 0, block)
      end

      private

      def step(job, index, block)
        m = @entries[index]
        return block.call unless m

        m.call(job) { step(job, index + 1, block) }
      end

      def instantiate(middleware, args)
        middleware.is_a?(Class) ? middleware.new(*args) : middleware
      end
    end

    # Hands each job's traceparent (nil when it has none) to an application
    # hook that opens the run's span as its child, so submit, wait and run
    # are one trace. The hook is called as +hook.call(traceparent, task) {
    # run }+ and returns what the block returned:
    #
    #   Tenq.worker_middleware.add(Tenq::Middleware::Tracing.new do |parent, task, &run|
    #     ctx = OpenTelemetry::Trace::Propagation::TraceContext::TextMapPropagator.new
    #             .extract("traceparent" => parent)
    #     tracer.in_span("run #{task.type}", kind: :consumer, context: ctx) { run.call }
    #   end)
    class Tracing
      # @param hook [#call, nil] or a block
      def initialize(hook = nil, &block)
        @hook = hook || block
        raise ArgumentError, "Tracing needs a hook (a callable or a block)" unless @hook.respond_to?(:call)
      end

      def call(task, &run)
        ran = false
        result = nil
        @hook.call(task.traceparent, task) do
          ran = true
          result = run.call
        end
        ran ? result : run.call
      end
    end

    # Calls a hook with every exception a handler raises (not {Retry} or
    # {NoRetry}, which a handler raises on purpose), then lets it go on to
    # fail the attempt: +hook.call(error, task)+. An exception in the hook is
    # ignored.
    class ErrorReporter
      # @param hook [#call, nil] or a block
      def initialize(hook = nil, &block)
        @hook = hook || block
        raise ArgumentError, "ErrorReporter needs a hook (a callable or a block)" unless @hook.respond_to?(:call)
      end

      def call(task)
        yield
      rescue Retry, NoRetry
        raise
      rescue StandardError, ScriptError => e
        begin
          @hook.call(e, task)
        rescue StandardError
          nil
        end
        raise
      end
    end

    # Logs each job a worker runs: its start (debug) and its end with the
    # time it took (info), or its exception (warn).
    class Logging
      def initialize(logger)
        @logger = logger
      end

      def call(job)
        t0 = Process.clock_gettime(Process::CLOCK_MONOTONIC)
        @logger.debug { "job #{job.id} #{job.type}: start (attempt #{job.attempt})" }
        result = yield
        @logger.info { "job #{job.id} #{job.type}: done in #{ms_since(t0)} ms" }
        result
      rescue Parked => e
        @logger.info { "job #{job.id} #{job.type}: parked (#{e.kind} #{e.name.inspect}) after #{ms_since(t0)} ms" }
        raise
      rescue Exception => e # rubocop:disable Lint/RescueException -- logged, then raised again
        @logger.warn { "job #{job.id} #{job.type}: #{e.class}: #{e.message} after #{ms_since(t0)} ms" }
        raise
      end

      private

      def ms_since(start)
        ((Process.clock_gettime(Process::CLOCK_MONOTONIC) - start) * 1000).round(1)
      end
    end
  end
end
