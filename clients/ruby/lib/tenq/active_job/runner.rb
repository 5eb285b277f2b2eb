# SPDX-License-Identifier: Apache-2.0
# frozen_string_literal: true

module Tenq
  module ActiveJob
    # The worker's side: a job whose type names an ActiveJob class runs
    # through +ActiveJob::Base.execute+, and its retries are tenq's.
    #
    # One tenq job carries an ActiveJob job from +perform_later+ to the
    # end: a +retry_on+ (or +retry_job+) fails the attempt with the wait
    # ActiveJob worked out ({Tenq::Retry}), and tenq runs the same job
    # again, so its id, its attempt history and +client.wait(id)+ tell the
    # whole story, and an attempt cut short by a crash or a stop counts as
    # one. ActiveJob's counters come from tenq: +executions+ is the
    # attempt (+job.executions+ == +tenq_job.attempt+), and the counts of
    # each +retry_on+ travel with the failed attempt (its stats) to the
    # next. When +retry_on+ gives up and raises, the job goes to the morgue
    # now; an exception no +retry_on+ handles is retried by the queue's
    # backoff up to the job's +max_attempts+ (+tenq_options max_attempts:+;
    # the queue's, 25 by default, otherwise), as Sidekiq retries it. A
    # +discard_on+ ends the job succeeded, with the result
    # +{"discarded" => "Class: message"}+. A retry that moves the job to
    # another queue or priority (+retry_on ..., queue: :low+) is a new tenq
    # job, as other adapters make it.
    module Runner
      # One run of a job in this thread.
      Run = Struct.new(:job_id, :task, :retry_at, :retry_error, :counts, :gave_up, :discarded) do
        # The adapter's question: is this the job running here asking to
        # run again, in its own queue and priority? Then it is kept for
        # the attempt's end.
        def retry_later(job, timestamp, fields)
          return false unless job.job_id == job_id && fields[:queue] == task.queue &&
                              fields.fetch(:priority, 0) == task.priority

          self.retry_at = timestamp || Time.now.to_f
          self.counts = job.exception_executions
          true
        end
      end

      CLASS_NAME = /\A[A-Z]\w*(::[A-Z]\w*)*\z/
      STATS = "active_job"
      @routes = {}.freeze # replaced, never changed: read without the lock
      @mutex = Mutex.new

      class << self
        # The job run in this thread now, or nil.
        # @return [Run, nil]
        def current
          Thread.current[:tenq_active_job]
        end

        # The handler of a type that names an ActiveJob class, or nil.
        # @return [Registry::Entry, nil]
        def route(type)
          found = @routes[type]
          return found if found
          return nil unless CLASS_NAME.match?(type) && active_job_class?(type)

          entry = Registry::Entry.new(method(:perform), nil)
          @mutex.synchronize { @routes = @routes.merge(type => entry).freeze }
          entry
        end

        # Runs the job of a task: its result (nil, or what a discard_on says).
        def perform(task)
          data = job_data(task)
          run = Run.new(data["job_id"], task)
          outer = current
          Thread.current[:tenq_active_job] = run
          begin
            ::ActiveJob::Base.execute(data)
          rescue StandardError => e
            raise NoRetry, "retry_on gave up after #{task.attempt} attempt(s): #{Execution.describe(e)}" if run.gave_up

            raise
          ensure
            Thread.current[:tenq_active_job] = outer
          end
          finish(task, run)
        end

        # Notifications of ActiveJob's own, for the run of this thread.
        def notified(name, payload)
          run = current
          return unless run && payload[:job]&.job_id == run.job_id

          case name
          when "enqueue_retry.active_job" then run.retry_error = payload[:error]
          when "retry_stopped.active_job" then run.gave_up = true
          when "discard.active_job" then run.discarded = payload[:error]
          end
        end

        private

        def active_job_class?(name)
          klass = Object.const_get(name)
          klass.is_a?(Class) && klass < ::ActiveJob::Base
        rescue NameError
          false
        end

        # The job's data as ActiveJob reads it, its counters from tenq's.
        def job_data(task)
          data = task.args
          unless data.is_a?(Hash) && data["job_class"] == task.type
            raise NoRetry, "the args of an ActiveJob job of type #{task.type} are not its serialized job"
          end

          data = data.merge("provider_job_id" => task.id, "executions" => task.attempt - 1)
          data["exception_executions"] = counts_before(task) if task.attempt > 1
          data
        end

        # The counts of each retry_on the last attempt that kept them.
        def counts_before(task)
          kept = task.client.attempts(task.id).reverse_each.find { |a| a.stats.is_a?(Hash) && a.stats[STATS] }
          kept ? kept.stats[STATS].fetch("exception_executions", {}) : {}
        end

        def finish(task, run)
          if run.retry_at
            task.stats = (task.stats || {}).merge(STATS => { "exception_executions" => run.counts || {} })
            wait = [run.retry_at - Time.now.to_f, 0].max
            raise Retry.new(run.retry_error ? Execution.describe(run.retry_error) : "retry_job", retry_in: wait)
          end
          run.discarded ? { "discarded" => Execution.describe(run.discarded) } : nil
        end
      end

      %w[enqueue_retry retry_stopped discard].each do |event|
        ActiveSupport::Notifications.subscribe("#{event}.active_job") do |name, _start, _finish, _id, payload|
          notified(name, payload)
        end
      end
      Registry::ROUTERS << self
    end
  end
end
