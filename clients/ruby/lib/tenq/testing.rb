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
  #
  # Args, results and progress go through JSON in both modes, as they do
  # through a server: a handler sees string keys, and a handle's +wait+
  # gives what a worker's job would give (+{ rows: 1 }+ comes back as
  # +{"rows"=>1}+).
  #
  # Workflows, kept simple: a job with +depends_on+ (ids or handles of the
  # mode's jobs, or Tenq.index(i) in submit_many) is "waiting" until its
  # parents finished. Inline, its parents ran already: it runs at once when
  # they all succeeded; a parent that died or was cancelled cancels it
  # (+on_parent_failure: :cancel+, the default) or lets it run (+:run+).
  # Fake: {drain} runs it once its parents finished, by the same rule.
  # +create_batch+ and +add_to_batch+ submit their jobs as submits do, with
  # "batch" set ({Task#batch}, {Task#add_to_batch} work); the callbacks are
  # not run and there is no batch status to read. {Task#parent_results}
  # reads the parents the mode holds.
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
      def submit(job, before = [])
        record = store.add(job, before)
        store.run(record, Tenq.handlers, Tenq.worker_middleware) if inline? && record["state"] == "ready"
        Handle.new(store, SubmitResult.new({ "id" => record["id"], "state" => record["state"] }))
      end

      # @api private: a submit_many while a mode is on ({"index": i} names
      # a job of the same list)
      # @return [Array<Handle>]
      def submit_all(jobs)
        jobs.each_with_object([]) do |j, out|
          out << begin
            submit(j, out)
          rescue Error => e # refused alone, as the server refuses one job of many
            Handle.new(store, SubmitResult.new({}, e))
          end
        end
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

      def add(job, before = [])
        @mutex.synchronize do
          parents = parent_ids(job.delete("depends_on") || [], before)
          @next_id += 1
          record = job.merge("id" => @next_id, "state" => "ready", "attempts" => 0, "result" => nil,
                             "error" => nil, "tenant" => job["tenant"])
          record["args"] = Store.through_json(job["args"]) if job.key?("args")
          unless parents.empty?
            record["parents"] = parents
            record["on_parent_failure"] ||= "cancel"
            record["state"] = "waiting"
            settle(record)
          end
          @jobs << record
          record
        end
      end

      def new_batch
        @mutex.synchronize { @batches = (@batches || 0) + 1 }
      end

      # The parents and children of a job of the mode.
      # @return [Parents]
      def parents(id)
        @mutex.synchronize do
          record = find(id)
          raise NotFoundError.new("no job #{id} in the test mode's store", status: 404, field: "id") unless record

          ps = record.fetch("parents", []).map { |p| ParentInfo.new(p, find(p)["state"], find(p)["result"]) }
          cs = @jobs.select { |j| j.fetch("parents", []).include?(id) }
                    .map { |c| ChildInfo.new(c["id"], c["state"]) }
          Parents.new(id, record["state"], ps, cs, cs.size)
        end
      end

      def run(record, registry, middleware)
        task = Task.new(record.merge("token" => 0, "attempt" => record["attempts"]), nil, client: self)
        record["attempts"] += 1
        out = Execution.perform(task, registry.lookup(record["type"]), middleware)
        out = task.settled if task.settled && out.ok # completed or failed with Tx, as the worker does
        record["state"] = out.ok ? "succeeded" : "dead"
        record["result"] = Store.through_json(out.result)
        record["error"] = out.error
        record["progress"] = Store.through_json(task.take_progress)
        record
      end

      # A value as it comes back from a server: through JSON.
      def self.through_json(value)
        value.nil? ? nil : JSON.parse(JSON.generate(value))
      end

      # {Task#add_to_batch} in the test mode: as the default client does
      # (its defaults apply; the jobs go to the mode).
      def add_to_batch(batch_id, jobs)
        Tenq.client.add_to_batch(batch_id, jobs)
      end

      def drain(registry, middleware, limit)
        ran = 0
        while ran < limit && (record = next_ready)
          run(record, registry, middleware)
          ran += 1
        end
        ran
      end

      # Handle's backend: the job now (a fake wait does not wait).
      def wait_job(id, timeout: 0) # rubocop:disable Lint/UnusedMethodArgument -- the client's signature
        job(id)
      end

      def next_ready
        @mutex.synchronize do
          @jobs.each { |j| settle(j) if j["state"] == "waiting" }
          @jobs.find { |j| j["state"] == "ready" }
        end
      end

      def job(id)
        record = @mutex.synchronize { @jobs.find { |j| j["id"] == id } }
        raise NotFoundError.new("no job #{id} in the test mode's store", status: 404, field: "id") unless record

        JobInfo.new(record.dup)
      end

      def cancel(id)
        record = @mutex.synchronize { @jobs.find { |j| j["id"] == id } }
        raise NotFoundError.new("no job #{id}", status: 404, field: "id") unless record
        unless %w[ready waiting].include?(record["state"])
          raise ConflictError.new("job #{id} is #{record['state']}", status: 409)
        end

        record["state"] = "cancelled"
        JobInfo.new(record.dup)
      end

      private

      def find(id)
        @jobs.find { |j| j["id"] == id }
      end

      def parent_ids(deps, before)
        deps.map do |d|
          if d.is_a?(Hash)
            h = before[d["index"]]
            unless h&.ok?
              raise ConflictError.new("depends_on index #{d['index']} names no job made", field: "depends_on")
            end

            d = h.id
          end
          raise NotFoundError.new("depends_on: no job #{d} in the test mode", field: "depends_on") unless find(d)

          d
        end.uniq
      end

      # A waiting job whose parents all finished: ready, or cancelled by a
      # parent that did not succeed (policy cancel).
      def settle(record)
        states = record["parents"].map { |p| find(p)["state"] }
        return unless states.all? { |st| %w[succeeded dead cancelled].include?(st) } # else still unfinished

        cancel = record["on_parent_failure"] == "cancel" && states.any? { |st| st != "succeeded" }
        record["state"] = cancel ? "cancelled" : "ready"
        record["error"] = "cancelled: a parent did not succeed" if cancel
      end
    end
  end
end
