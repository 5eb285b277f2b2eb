# SPDX-License-Identifier: Apache-2.0
# frozen_string_literal: true

module Tenq
  class Worker
    # The runner threads: each takes the next leased job, runs it through
    # the middleware and its handler ({Execution.perform}) and queues the
    # outcome for the reporter. A {Stopped} raised into a runner (timeout,
    # lost lease, cancellation not heeded, the end of the grace period) can
    # land only while its handler runs.
    module Running
      # Interrupt masks, made once: a Hash literal would be made again at
      # every job.
      STOPPED_NEVER = { Stopped => :never }.freeze
      STOPPED_AT_ONCE = { Stopped => :immediate }.freeze

      private

      def runner_loop
        Thread.handle_interrupt(STOPPED_NEVER) do
          task = @mutex.synchronize { next_task }
          while task
            outcome = run_task(task)
            drain_stale_stops
            task = finish_task(task, outcome)
          end
        end
      ensure
        @mutex.synchronize do
          @runners_alive -= 1
          broadcast_all
        end
        wake_control
      end

      # The next job to run (mutex held, waiting for one); nil when the
      # worker stops and nothing is left. Past the grace period, queued jobs
      # are given back without running. It tells the leaser when the jobs
      # waiting are down to half those leased ahead. (A while loop: a return
      # from inside a block allocates, and this runs at every job.)
      def next_task
        until @abandon
          task = @ready.shift
          if task
            @cv_lease.signal if @lease_wait == :half && @ready.size <= @lease_half
            return begin_task(task) unless @past_grace

            give_back(task)
            next
          end
          break if @stopping && @leaser_done

          @cv_run.wait(@mutex)
        end
        nil
      end

      def begin_task(task)
        task.state = :running
        task.thread = Thread.current
        task.began = now
        @running += 1
        task
      end

      def give_back(task)
        task.state = :running
        @running += 1
        queue_outcome(task, Execution.stopped(task, :shutdown))
      end

      def run_task(task)
        entry = @registry.lookup(task.type)
        limit = entry&.timeout || @timeout
        task.deadline = task.began + limit if limit
        @cv_report.signal if limit
        Thread.handle_interrupt(STOPPED_AT_ONCE) { Execution.perform(task, entry, @middleware) }
      rescue Stopped => e # landed after perform's own rescue
        Execution.stopped(task, e.reason)
      end

      # A Stopped raised as the handler returned waits, deferred: it was
      # meant for this job, which is over, so it is dropped here.
      def drain_stale_stops
        while Thread.pending_interrupt?
          begin
            Thread.handle_interrupt(STOPPED_AT_ONCE) { nil }
          rescue Stopped
            nil
          end
        end
      end

      # Queues the outcome and returns the next job to run ({#next_task}),
      # under one lock. A handler that completed or failed its job in its own
      # database transaction ({Tx}) and returned: the worker reports the same
      # outcome (answered as applied, whether the transaction's landed first
      # or not).
      def finish_task(task, outcome)
        outcome = task.settled if task.settled && outcome.ok
        @mutex.synchronize do
          queue_outcome(task, outcome)
          next_task
        end
      end

      # (mutex held) The outcome waits for the next lease or the reporter;
      # a job whose lease was lost is dropped: its new owner reports it.
      def queue_outcome(task, outcome)
        task.state = :done
        task.thread = nil
        @running -= 1
        @active -= 1
        t = now
        if task.lost
          @hand.delete(task.id)
          @counts[task.parked ? :parked : :lost] += 1
        else
          task.outcome = outcome.to_wire(task)
          task.done_at = t
          @done << task
        end
        took = t - task.began if task.began
        @run_time = @run_time ? (@run_time * 0.9) + (took * 0.1) : took if took
        log_outcome(task, outcome)
        @cv_lease.signal if wake_leaser?
        @cv_report.signal if @done.size == 1 || task.lost # else it knows of outcomes waiting already
      end

      # Whether the leaser must hear of this outcome now (mutex held): it
      # waits for a free slot, or gathers slots and every runner is idle.
      # While it gathers with runners busy, its own short timeout wakes it:
      # a wake-up at every outcome would cost more than the jobs themselves.
      def wake_leaser?
        @lease_wait == :capacity || (@lease_wait == :gather && @running.zero?)
      end

      def log_outcome(task, outcome)
        return if outcome.ok || !@logger.debug?

        @logger.debug("job #{task.id} #{task.type}: #{outcome.error}")
      end
    end
  end
end
