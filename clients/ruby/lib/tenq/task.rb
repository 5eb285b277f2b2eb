# SPDX-License-Identifier: Apache-2.0
# frozen_string_literal: true

module Tenq
  # Raise in a handler to fail the attempt and have it retried after
  # +retry_in+ seconds (instead of the queue's backoff).
  class Retry < StandardError
    # @return [Float]
    attr_reader :retry_in

    def initialize(message = "retry", retry_in: 0)
      @retry_in = retry_in
      super(message)
    end
  end

  # Raise in a handler to fail the job for good: it goes to the morgue now.
  class NoRetry < StandardError; end

  # Raised inside a handler that is stopped: the job was cancelled
  # ({Task#check!}), it ran past its timeout, or the worker's grace period
  # ended. {#reason} says which (:cancelled, :timeout, :shutdown, :lost).
  class Stopped < Exception
    # @return [Symbol]
    attr_reader :reason

    def initialize(reason)
      @reason = reason
      super(reason == :timeout ? "timeout" : "stopped (#{reason})")
    end
  end

  # A leased job as its handler sees it: the job's fields, its progress
  # and stats, and whether it should stop.
  class Task
    include TaskSteps

    # @return [Symbol, nil] why it should stop: :cancelled, :timeout, :shutdown, :lost
    attr_reader :stop_reason
    # @return [Hash, nil] stats sent with the outcome (see {#stats=})
    attr_reader :stats
    # @return [Execution::Outcome, nil] the outcome a handler gave the job
    #   in its own database transaction ({Tx.complete}, {Tx.fail})
    attr_reader :settled

    # @api private: the worker's bookkeeping, read and written under its lock
    attr_accessor :state, :thread, :began, :deadline, :lease_length, :next_heartbeat, :start_sent,
                  :progress_sent_at, :cancel_seen_at, :lost, :interrupted, :outcome, :done_at, :quiet, :calling,
                  :parked

    def initialize(data, worker = nil, client: nil)
      @data = data
      @worker = worker
      @client = client
      @state = :queued
      @stop_reason = nil
      @settled = nil
    end

    # @return [Hash{String => Object}] the job as the lease answered it
    def data
      @data.is_a?(Hash) ? @data : (@data = @data.to_h)
    end

    def id = @data["id"]
    def token = @data["token"]
    def tenant = @data["tenant"]
    def queue = @data["queue"]
    def type = @data["type"]
    def key = @data["key"]
    def args = @data["args"]
    def payloads = @data["payloads"]
    # The attempt this run is, from 1: the first run is 1, as the job's
    # +attempts+ and its attempt history ({Client#attempts}) count. (The
    # lease's "attempt" field counts the attempts before this one.)
    def attempt = @data["attempt"].to_i + 1
    def max_attempts = @data["max_attempts"]
    def priority = @data["priority"]
    def created_at = @data["created_at"]
    def lease_until = @data["lease_until"]
    def traceparent = @data["traceparent"]
    # The job's own server-side timeout (nil: the queue's, if any): past
    # it the server fails the attempt and the handler is stopped (:lost).
    def timeout_ms = @data["timeout_ms"]
    # The id of the job's batch (nil: it is in none).
    def batch = @data["batch"]
    # "on_complete", "on_success" or "on_death" on a batch's callback job.
    def batch_callback = @data["batch_callback"]

    # The ids of the jobs this one depended on, from the lease ([] when none).
    # @return [Array<Integer>]
    def parents
      Array(@data["parents"])
    end

    # Its parents' ids, states and results (GET /v1/jobs/{id}/parents).
    # @return [Parents]
    def parent_results
      client.parents(id)
    end

    # Fan-out: adds jobs to this job's batch (open while it runs).
    # @return [Array<Handle>]
    # @raise [InvalidError] the job is in no batch
    def add_to_batch(jobs)
      raise InvalidError.new("job #{id} is in no batch", field: "batch") unless batch

      client.add_to_batch(batch, jobs)
    end

    # Reports progress (any JSON); the latest reaches the job within a
    # second, with a heartbeat.
    # @return [void]
    def progress(value)
      JSONValue.check!(value, "progress")
      @worker ? @worker.progress(self, value) : set_progress(value)
    end

    # Stats to keep with the outcome (a Hash of JSON).
    def stats=(hash)
      @stats = JSONValue.check!(hash, "stats")
    end

    # The job was cancelled: stop and raise (or call {#check!}).
    def cancelled?
      @stop_reason == :cancelled
    end

    # The handler should stop: cancelled, its lease lost, or the worker
    # stopping past its grace period.
    def stopping?
      !@stop_reason.nil?
    end

    # Raises {Stopped} when the handler should stop.
    # @return [void]
    def check!
      raise Stopped, @stop_reason if @stop_reason
    end

    # @api private: the job was completed or failed in the handler's
    # database transaction ({Tx}); the worker's own outcome says the same.
    def settle(outcome)
      @settled = outcome
    end

    # @api private: {Tx} is about to complete or fail the job in the
    # handler's transaction, which holds the job's row until it ends: the
    # worker sends no start or heartbeat for it from now on (a write of that
    # row would wait for the transaction), and one already sent is answered
    # first.
    def quiet!
      @worker ? @worker.quiet(self, true) : @quiet = true
    end

    # @api private: the statement failed: the reports go on.
    def unquiet!
      @worker ? @worker.quiet(self, false) : @quiet = false
    end

    # The worker's client (a test mode's store answers in a test mode).
    def client
      @client || @worker&.client || Tenq.client
    end

    # @api private
    def stop!(reason)
      @stop_reason = reason if @stop_reason.nil?
    end

    # @api private: the latest progress not yet sent
    def take_progress
      v = @progress
      @progress_dirty = false
      v
    end

    # @api private
    def set_progress(value) # rubocop:disable Naming/AccessorMethodName -- it also marks the value unsent
      @progress = value
      @progress_dirty = true
    end

    # @api private
    def progress_dirty?
      @progress_dirty == true
    end

    def inspect
      "#<Tenq::Task id=#{id} type=#{type} attempt=#{attempt}>"
    end
  end
end
