# SPDX-License-Identifier: Apache-2.0
# frozen_string_literal: true

module Tenq
  class Worker
    # The leaser thread: waits for free capacity, then leases up to it in
    # one request that carries the outcomes finished since (POST /v1/lease
    # "outcomes") and long-polls when nothing is eligible. It stops at the
    # first stop; a long poll is cut short by the control thread
    # ({Worker#interrupt_lease}), the only place an {Interrupt} may land.
    module Leasing
      GATHER = 0.001     # wait this long for more slots while handlers still run
      LEASE_MAX = 1000   # the protocol's largest "max"
      OUTCOMES_MAX = 10_000
      AUTO_AHEAD = 0.005 # prefetch :auto leases about this much work ahead of the runners
      # and at most a lease's most: blank jobs cost this worker about 7 us each
      # (the runners share one interpreter lock), so 1,000 are 7 ms of work
      AUTO_MAX = LEASE_MAX
      FATAL = [UnauthenticatedError, ForbiddenError, InvalidError, NotFoundError].freeze

      private

      def leaser_loop
        Thread.handle_interrupt(Interrupt => :never) do
          backoff = nil
          while (max, outcomes = @mutex.synchronize { next_lease })
            answer = lease_once(max, outcomes)
            if answer
              backoff = nil
              take_answer(answer, max, outcomes)
            else
              backoff = lease_pause(backoff)
            end
          end
        end
      ensure
        @mutex.synchronize do
          @leaser_done = true
          @leasing = false
          broadcast_all
        end
        wake_control
      end

      # Waits for free capacity (mutex held); nil once stopping. Marks the
      # lease in flight and takes the outcomes waiting.
      #
      # With jobs leased ahead, a lease asks for half of them at most, and
      # the next one goes as soon as the jobs waiting are down to half: so
      # the leaser, which gets the interpreter's lock back only when the
      # runners leave it (short jobs: when they have run everything in
      # hand), puts its next request to the server before the runners start
      # on the jobs it just brought, and they do not idle through the
      # server's answer.
      def next_lease
        gather_until = nil
        loop do
          return nil if @stopping

          most = capacity
          free = most - @active
          half = (most - @concurrency) / 2
          if free.positive? && half.positive?
            return begin_lease([free, [half, @concurrency - @running].max].min) if @ready.size <= half

            @lease_half = half
            lease_wait(:half, nil)
          elsif free.positive?
            gather_until ||= now + GATHER
            left = gather_until - now
            if free < most && @running.positive? && left.positive?
              lease_wait(:gather, left)
              next
            end
            return begin_lease(free)
          else
            lease_wait(:capacity, nil)
          end
        end
      end

      # Waits (mutex held) for a runner's signal: +:capacity+ for a free
      # slot, +:half+ for the jobs waiting to be down to half those leased
      # ahead, +:gather+ until +timeout+ unless every runner is idle first
      # ({Running#wake_leaser?} wakes it only then, not at every outcome).
      def lease_wait(why, timeout)
        @lease_wait = why
        @cv_lease.wait(@mutex, timeout)
      ensure
        @lease_wait = nil
      end

      # How many jobs the worker holds at most (mutex held): its runners,
      # and the jobs leased ahead. With prefetch :auto, as many as the
      # runners get through in AUTO_AHEAD at the average run time so far
      # (none before a job has run, none while jobs are long), at most
      # AUTO_MAX: short jobs then come hundreds a lease rather than one a
      # runner (a lease costs the Ruby side about as much as 10 blank jobs),
      # and a long job holds few up.
      def capacity
        return @concurrency + @prefetch unless @prefetch == :auto
        return @concurrency unless @run_time

        ahead = (@concurrency * AUTO_AHEAD / [@run_time, 1e-6].max).floor
        @concurrency + ahead.clamp(0, AUTO_MAX)
      end

      # The outcomes ride on the lease, unless the last lease came back full
      # (a backlog): then a lease that waits for their commit would hold the
      # runners up, and the reporter sends them while the lease is answered
      # at once.
      def begin_lease(free)
        outcomes = @backlog ? [] : @done.shift(OUTCOMES_MAX)
        @leasing = true
        @lease_since = now
        [[free, LEASE_MAX].min, outcomes]
      end

      # One lease request: the answer, or nil (the outcomes are put back).
      # A lease that carries outcomes does not long-poll: its answer, which
      # acknowledges them, would wait for a job to come (the tail of a
      # drain); when it finds nothing, the next lease, without outcomes, does.
      #
      # The jobs come as columns, which JSON.parse reads in a quarter of the
      # time; from a server too old to know them, as a list of objects.
      def lease_once(max, outcomes)
        wire = outcomes.map(&:outcome)
        wait = wire.empty? ? @poll : 0
        Thread.handle_interrupt(Interrupt => :immediate) do
          @client.lease(queues: @queues, max: max, wait: wait, worker: @name, types: @types, outcomes: wire,
                        columns: @columns)
        end
      rescue Interrupt
        put_back(outcomes)
        nil
      rescue *FATAL => e
        retry if columns_refused?(e)
        put_back(outcomes)
        fatal(e)
        nil
      rescue Error => e
        put_back(outcomes)
        server_away(e, "lease")
        nil
      ensure
        @mutex.synchronize do
          @leasing = false
          @lease_since = nil
        end
      end

      # Whether the server refused "columns" (a 400 naming it, the request
      # refused whole: nothing applied); leases go without from then on.
      def columns_refused?(error)
        return false unless @columns && error.is_a?(InvalidError) && error.field == "columns"

        @columns = false
        true
      end

      # The leased jobs go to the runners; the outcomes' results are counted.
      def take_answer(answer, max, outcomes)
        server_back
        columns = answer["columns"]
        jobs = columns.is_a?(Hash) ? LeaseRow.all(columns) : answer["jobs"]
        jobs = [] unless jobs.is_a?(Array)
        @backlog = !jobs.empty? && jobs.size >= max
        arrived = now
        @mutex.synchronize do
          jobs.each { |data| enqueue_task(Task.new(data, self), arrived, lease_left(data) || 0.0) }
          unless jobs.empty?
            @cv_run.broadcast
            @cv_report.signal # new leases to heartbeat, handlers to tell the server about
          end
        end
        apply_results(outcomes, answer["results"]) unless outcomes.empty?
      end

      # Seconds the lease has left as the server answered ("lease_left_ms" of
      # a leased job or of a heartbeat's answer), or nil. Heartbeats are
      # spaced by it on CLOCK_MONOTONIC, so that no step of either machine's
      # wall clock moves them; from a server too old to say, "lease_until"
      # by this machine's clock.
      def lease_left(answer)
        left = answer["lease_left_ms"]
        return left / 1000.0 if left.is_a?(Integer) && left.positive?

        until_ms = answer["lease_until"]
        return nil unless until_ms.is_a?(Integer)

        (until_ms - Process.clock_gettime(Process::CLOCK_REALTIME, :millisecond)) / 1000.0
      end

      # A leased job joins the hand and the runners' queue (mutex held).
      # Its heartbeats are spaced by the lease's time left (seconds).
      def enqueue_task(task, arrived, length)
        task.lease_length = length
        task.next_heartbeat = arrived + [length / 3.0, HEARTBEAT_MIN].max
        @hand[task.id] = task
        @ready << task
        @active += 1
      end

      def put_back(outcomes)
        return if outcomes.empty?

        @mutex.synchronize do
          @done.unshift(*outcomes)
          @cv_report.signal
        end
      end

      # Sleeps a backoff (100 ms doubling to 5 s) unless a stop comes.
      def lease_pause(backoff)
        backoff = backoff ? [backoff * 2, BACKOFF_MAX].min : BACKOFF_FIRST
        @mutex.synchronize { @cv_lease.wait(@mutex, backoff) unless @stopping }
        backoff
      end

      # The server refused the worker: stop (gracefully), and {Worker#run}
      # raises this error.
      def fatal(error)
        @fatal ||= error
        @logger.error("the server refused the worker: #{error.class}: #{error.message}")
        stop if @stops.zero?
      end

      def server_away(error, what)
        first = @mutex.synchronize do
          was = @outage
          @outage = true
          !was
        end
        @logger.warn("#{what}: #{error.class}: #{error.message}; retrying with backoff") if first
      end

      def server_back
        was = @mutex.synchronize do
          w = @outage
          @outage = false
          w
        end
        @logger.info("the server answers again") if was
      end
    end
  end
end
