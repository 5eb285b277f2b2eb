# SPDX-License-Identifier: Apache-2.0
# frozen_string_literal: true

module Tenq
  class Worker
    # The reporter thread: heartbeats each lease at a third of its length
    # (on the monotonic clock) with the progress a handler reported, says
    # when a handler began (after 10 ms), notices cancellation and lost
    # leases, stops handlers past their timeout, and sends the outcomes the
    # leaser cannot carry soon (it is in a long poll, or stopped) by POST
    # /v1/outcomes. A server that is away is retried with backoff; the
    # outcomes wait, in order.
    module Reporting
      LONG_POLL_AFTER = 0.02 # a lease in flight this long is a long poll: do not wait for it
      HOLD_MAX = 0.05        # an outcome waits at most this long for a lease to carry it

      private

      def reporter_loop
        Thread.handle_interrupt(Interrupt => :never) do
          backoff = nil
          while (work = @mutex.synchronize { next_report })
            kind, items = work
            case kind
            when :outcomes then backoff = send_outcomes(items, backoff)
            when :heartbeats then items.each { |task, progress| calling(task) { heartbeat_task(task, progress) } }
            when :starts then items.each { |task| calling(task) { start_task(task) } }
            end
          end
        end
      ensure
        @mutex.synchronize do
          @reporter_done = true
          broadcast_all
        end
        wake_control
      end

      # What to send next (mutex held, waiting until something is due); nil
      # when everything is reported (or given up) after a stop.
      def next_report
        loop do
          return nil if @abandon

          t = now
          enforce_limits(t)
          batch = outcomes_due(t)
          return [:outcomes, batch] if batch

          beats = heartbeats_due(t)
          return [:heartbeats, beats] unless beats.empty?

          starts = starts_due(t)
          return [:starts, starts] unless starts.empty?
          return nil if reporting_over?

          @cv_report.wait(@mutex, next_wake(t))
        end
      end

      # A start or heartbeat of the task, marked in flight from its choice
      # ({#heartbeats_due}, {#starts_due}) to its answer, for {Worker#quiet}.
      def calling(task)
        yield
      ensure
        @mutex.synchronize do
          task.calling = false
          @cv_quiet.broadcast
        end
      end

      # Timeouts, and cancelled handlers that did not stop within the grace.
      def enforce_limits(time)
        @hand.each_value do |task|
          next unless task.state == :running && !task.interrupted

          if task.deadline && time >= task.deadline
            stop_task(task, :timeout)
          elsif task.cancel_seen_at && time - task.cancel_seen_at >= @cancel_grace
            interrupt_task(task, :cancelled)
          end
        end
      end

      def outcomes_due(time)
        return nil if @done.empty? || (@report_retry_at && time < @report_retry_at)

        carried = !@backlog && !@stopping && !@leaser_done && !(@leasing && time - @lease_since >= LONG_POLL_AFTER)
        return nil if carried && time - @done.first.done_at < HOLD_MAX

        @done.shift(Leasing::OUTCOMES_MAX)
      end

      def heartbeats_due(time)
        due = []
        @hand.each_value do |task|
          next if task.lost || task.quiet

          progress_due = task.state != :done && task.progress_dirty? &&
                         time - (task.progress_sent_at || -PROGRESS_EVERY) >= PROGRESS_EVERY
          next unless progress_due || time >= task.next_heartbeat

          task.next_heartbeat = time + [task.lease_length / 3.0, HEARTBEAT_MIN].max
          if progress_due
            task.progress_sent_at = time
            due << [task, task.take_progress]
          else
            due << [task, WorkerCalls::NONE]
          end
          task.calling = true
        end
        due
      end

      def starts_due(time)
        due = @hand.each_value.select do |task|
          task.state == :running && !task.start_sent && !task.quiet && time - task.began >= START_AFTER
        end
        due.each do |task|
          task.start_sent = true
          task.calling = true
        end
      end

      def reporting_over?
        return false unless @leaser_done && @runners_alive.zero?
        return true if @done.empty?
        return false unless @past_grace && @report_failed

        @logger.warn("giving up: #{@done.size} outcome(s) not reported; their jobs come back when the leases expire")
        true
      end

      def next_wake(time)
        wake = time + 1.0
        @hand.each_value { |task| wake = task_wake(task, time, wake) unless task.lost }
        [outcomes_wake(wake), time + 0.001].max - time
      end

      # The earliest of +wake+ and what this task waits for (no allocation:
      # this runs for every job in hand at every wake-up).
      def task_wake(task, time, wake)
        wake = report_wake(task, time, wake) unless task.quiet
        task.state == :running ? limit_wake(task, wake) : wake
      end

      # The earliest of +wake+ and the task's next heartbeat, start or progress.
      def report_wake(task, time, wake)
        wake = task.next_heartbeat if task.next_heartbeat < wake
        # a queued job may start any moment: look again soon to say so
        soon = time + START_AFTER
        wake = soon if soon < wake && (task.state == :queued || (task.state == :running && !task.start_sent))
        later = time + PROGRESS_EVERY
        wake = later if later < wake && task.state != :done && task.progress_dirty?
        wake
      end

      # The earliest of +wake+, a running task's deadline and the end of its
      # cancellation grace.
      def limit_wake(task, wake)
        wake = task.deadline if task.deadline && task.deadline < wake
        cancel_end = task.cancel_seen_at && (task.cancel_seen_at + @cancel_grace)
        cancel_end && cancel_end < wake ? cancel_end : wake
      end

      # When outcomes waiting for a lease to carry them become due.
      def outcomes_wake(wake)
        return wake if @done.empty?

        due = @done.first.done_at + HOLD_MAX
        due = @report_retry_at if @report_retry_at && @report_retry_at > due
        due = @lease_since + LONG_POLL_AFTER if @leasing && !@report_retry_at && @lease_since + LONG_POLL_AFTER < due
        [due, wake].min
      end

      # Sends outcomes; returns the next backoff (nil after a success).
      def send_outcomes(batch, backoff)
        results = Thread.handle_interrupt(Interrupt => :immediate) { @client.outcomes(batch.map(&:outcome)) }
        server_back
        apply_results(batch, results)
        @mutex.synchronize { @report_retry_at = nil }
        nil
      rescue Interrupt
        put_back(batch)
        backoff
      rescue TooLargeError, InvalidError => e
        @logger.error("outcomes refused (#{e.message}); #{batch.size} job(s) come back when their leases expire")
        forget(batch, :refused)
        backoff
      rescue Error => e
        outcomes_failed(batch, backoff, e)
      end

      def outcomes_failed(batch, backoff, error)
        server_away(error, "outcomes")
        backoff = backoff ? [backoff * 2, BACKOFF_MAX].min : BACKOFF_FIRST
        @mutex.synchronize do
          @report_retry_at = now + backoff
          @report_failed = @past_grace
        end
        put_back(batch)
        backoff
      end

      # Counts the results of delivered outcomes and forgets their jobs. An
      # outcome sent again after its answer was lost is answered 200: the
      # server takes a repeated ack/fail under the same token as done.
      def apply_results(tasks, results)
        unless results.is_a?(Array) && results.size == tasks.size
          @logger.error("the server answered #{results.inspect[0, 100]} for #{tasks.size} outcome(s)")
          return forget(tasks, :refused)
        end
        # by index, not zip and pairs: two Arrays a job fewer
        kinds = Array.new(tasks.size) { |i| result_kind(tasks[i], results[i]) }
        @mutex.synchronize do
          tasks.each_with_index do |task, i|
            @counts[kinds[i]] += 1
            @hand.delete(task.id)
          end
          @cv_report.signal
        end
      end

      # A failure the handler's transaction committed already ({Tx.fail})
      # may be refused when sent again: the job was retried, and leased
      # again under another token. That is not an error.
      def result_kind(task, result)
        error = result.is_a?(Hash) ? result["error"] : { "message" => "no result" }
        return task.outcome["ok"] ? :succeeded : :failed unless error
        return :failed if task.settled && !task.settled.ok && !task.outcome["ok"]

        @logger.warn("job #{task.id}: the server refused its outcome: #{error['message']}")
        :refused
      end

      def forget(tasks, kind)
        @mutex.synchronize do
          tasks.each do |task|
            @counts[kind] += 1
            @hand.delete(task.id)
          end
          @cv_report.signal
        end
      end

      def heartbeat_task(task, progress)
        answer = Thread.handle_interrupt(Interrupt => :immediate) do
          @client.heartbeat(task.id, task.token, progress: progress)
        end
        heartbeat_answered(task, answer)
      rescue Interrupt
        nil
      rescue NotFoundError, ConflictError => e
        lease_lost(task, e) unless task.state == :done # else its outcome may have landed: its answer says
      rescue Error => e
        server_away(e, "heartbeat")
        @mutex.synchronize do
          task.next_heartbeat = now + [task.lease_length / 6.0, BACKOFF_MAX].min
          task.set_progress(progress) unless WorkerCalls::NONE.equal?(progress) || task.progress_dirty?
        end
      end

      def heartbeat_answered(task, answer)
        left = lease_left(answer)
        @mutex.synchronize do
          if left
            task.lease_length = left
            task.next_heartbeat = now + [left / 3.0, HEARTBEAT_MIN].max
          end
          if answer["cancel"] == true && !task.cancel_seen_at
            @logger.info("job #{task.id}: cancelled; stopping its handler")
            task.cancel_seen_at = now
            stop_task(task, :cancelled)
          end
        end
      end

      def lease_lost(task, error)
        return if task.parked # a heartbeat sent as a step parked it: the lease is over, as it should be

        @logger.warn("job #{task.id}: lease lost (#{error.message}); its handler is stopped, its outcome dropped")
        @mutex.synchronize do
          task.lost = true
          stop_task(task, :lost)
          if task.state == :done && @done.delete(task)
            @hand.delete(task.id)
            @counts[:lost] += 1
          end
        end
      end

      def start_task(task)
        Thread.handle_interrupt(Interrupt => :immediate) { @client.start(task.id, task.token) }
      rescue Interrupt
        nil
      rescue Error => e
        @logger.debug("job #{task.id}: start: #{e.message}")
      end
    end
  end
end
