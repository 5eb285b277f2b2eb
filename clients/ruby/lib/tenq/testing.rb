# SPDX-License-Identifier: Apache-2.0
# frozen_string_literal: true

module Tenq
  # Test modes that need no server, as Sidekiq::Testing and Oban's testing
  # modes. While one is on, every submit (Client#submit, #submit_many, the
  # async switch, {Tx.submit}) stays in this process, and {Tx.complete} and
  # {Tx.fail} send nothing to the database:
  #
  # - +inline!+: the job's handler runs at submit time (through the worker
  #   middleware); the handle's +wait+ gives its result, or raises
  #   {JobFailed} with the error.
  # - +fake!+: submits are recorded: {jobs}, {clear}, and {drain} (runs the
  #   recorded jobs, also those they submit, in order).
  # - +disable!+: back to the server.
  #
  # Each takes a block, and the mode before comes back after it.
  module Testing
    @mode = nil
    @store = nil

    class << self
      # @return [Symbol, nil] :inline, :fake or nil
      attr_reader :mode

      def active?
        !@mode.nil?
      end

      def inline!(&block)
        switch(:inline, &block)
      end

      def fake!(&block)
        switch(:fake, &block)
      end

      def disable!(&block)
        switch(nil, &block)
      end

      def inline?
        @mode == :inline
      end

      def fake?
        @mode == :fake
      end

      # The recorded jobs (Hashes with string keys and their "id"), oldest
      # first; only those of a type and/or queue when named.
      # @return [Array<Hash>]
      def jobs(type: nil, queue: nil)
        store.jobs.select do |j|
          (type.nil? || j["type"] == type) && (queue.nil? || j["queue"] == queue)
        end
      end

      # Forgets every recorded job.
      # @return [void]
      def clear
        store.clear
      end

      # Runs the recorded jobs that have not run, oldest first, and those
      # they submit, until none is left (at most +limit+ runs).
      # @return [Integer] how many ran
      def drain(registry: Tenq.handlers, middleware: Tenq.worker_middleware, limit: 10_000)
        store.drain(registry, middleware, limit)
      end

      # @api private: a submit while a mode is on
      # @return [Handle]
      def submit(job)
        record = store.add(job)
        store.run(record, Tenq.handlers, Tenq.worker_middleware) if inline?
        Handle.new(store, SubmitResult.new({ "id" => record["id"], "state" => record["state"] }))
      end

      # @api private
      def store
        @store ||= Store.new
      end

      private

      def switch(mode)
        before = @mode
        @mode = mode
        return unless block_given?

        begin
          yield
        ensure
          @mode = before
        end
      end
    end

    # The jobs of the test mode, kept in memory. It answers a {Handle} as
    # the client does.
    class Store
      def initialize
        @jobs = []
        @next_id = 0
        @mutex = Monitor.new
      end

      def jobs
        @mutex.synchronize { @jobs.map(&:dup) }
      end

      def clear
        @mutex.synchronize { @jobs.clear }
      end

      def add(job)
        @mutex.synchronize do
          @next_id += 1
          record = job.merge("id" => @next_id, "state" => "ready", "attempts" => 0, "result" => nil,
                             "error" => nil, "tenant" => job["tenant"])
          @jobs << record
          record
        end
      end

      def run(record, registry, middleware)
        task = Task.new(record.merge("token" => 0, "attempt" => record["attempts"]))
        record["attempts"] += 1
        out = Execution.perform(task, registry.lookup(record["type"]), middleware)
        out = task.settled if task.settled && out.ok # completed or failed with Tx, as the worker does
        record["state"] = out.ok ? "succeeded" : "dead"
        record["result"] = out.result
        record["error"] = out.error
        record["progress"] = task.take_progress
        record
      end

      def drain(registry, middleware, limit)
        ran = 0
        while ran < limit && (record = @mutex.synchronize { @jobs.find { |j| j["state"] == "ready" } })
          run(record, registry, middleware)
          ran += 1
        end
        ran
      end

      # Handle's backend: the job now (a fake wait does not wait).
      def wait_job(id, timeout: 0) # rubocop:disable Lint/UnusedMethodArgument -- the client's signature
        job(id)
      end

      def job(id)
        record = @mutex.synchronize { @jobs.find { |j| j["id"] == id } }
        raise NotFoundError.new("no job #{id} in the test mode's store", status: 404, field: "id") unless record

        JobInfo.new(record.dup)
      end

      def cancel(id)
        record = @mutex.synchronize { @jobs.find { |j| j["id"] == id } }
        raise NotFoundError.new("no job #{id}", status: 404, field: "id") unless record
        raise ConflictError.new("job #{id} is #{record['state']}", status: 409) unless record["state"] == "ready"

        record["state"] = "cancelled"
        JobInfo.new(record.dup)
      end
    end
  end
end
