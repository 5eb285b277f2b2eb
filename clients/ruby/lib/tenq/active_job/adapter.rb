# SPDX-License-Identifier: Apache-2.0
# frozen_string_literal: true

module ActiveJob
  module QueueAdapters
    # +config.active_job.queue_adapter = :tenq+ ({Tenq::ActiveJob}), or an
    # instance with options of its own:
    #
    #   config.active_job.queue_adapter =
    #     ActiveJob::QueueAdapters::TenqAdapter.new(tenant: ->(job) { Current.account.slug })
    class TenqAdapter
      PRIORITY = (-32_768..32_767)

      # @param client [Tenq::Client, nil] default: {Tenq.client} (config/tenq.yml's)
      # @param tenant [String, #call, nil] the tenant of jobs whose class names
      #   none: a name, or a block given the job
      def initialize(client: nil, tenant: nil)
        @client = client
        @tenant = tenant
      end

      # @return [Tenq::Handle, nil]
      def enqueue(job)
        enqueue_at(job, nil)
      end

      # A job for +timestamp+ (seconds since the epoch). The job a worker is
      # running asking to run again (+retry_on+, +retry_job+) is not
      # submitted: its attempt fails and tenq retries it then
      # ({Tenq::ActiveJob::Runner}).
      # @return [Tenq::Handle, nil]
      def enqueue_at(job, timestamp)
        run = Tenq::ActiveJob::Runner.current
        return nil if run&.retry_later(job, timestamp, fields(job, timestamp))

        handle = client.submit(**fields(job, timestamp), **retry_key(run, job))
        job.provider_job_id = handle.id if handle
        handle
      end

      # Rails 7.1's perform_all_later (and {Tenq::ActiveJob.perform_all_later}):
      # the jobs in one submit_many.
      # @return [Integer] how many the server made
      def enqueue_all(jobs)
        handles = client.submit_many(jobs.map { |j| fields(j, j.scheduled_at) })
        handles.each_with_index.count do |h, i|
          next false unless h.ok?

          jobs[i].provider_job_id = h.id
          jobs[i].successfully_enqueued = true if jobs[i].respond_to?(:successfully_enqueued=)
          true
        end
      end

      # The submit fields of a job.
      # @return [Hash{Symbol => Object}]
      def fields(job, timestamp)
        f = { type: job.class.name, queue: job.queue_name, args: job.serialize }
        f[:run_at] = Time.at(timestamp.to_r) if timestamp
        f[:priority] = (-job.priority).clamp(PRIORITY) if job.priority
        tenant = tenant_of(job)
        f[:tenant] = tenant if tenant
        job.class.tenq_options_in_force.each { |k, v| f[k] = v.respond_to?(:call) ? v.call(job) : v }
        f
      end

      private

      def client
        @client || Tenq.client
      end

      def tenant_of(job)
        own = job.class.tenq_tenant_of(job)
        return own if own

        @tenant.respond_to?(:call) ? @tenant.call(job)&.to_s : @tenant&.to_s
      end

      # A retry that goes to another queue or priority is a new job: made
      # once, whatever happens to the attempt that asked for it.
      def retry_key(run, job)
        return {} unless run&.job_id == job.job_id

        { idempotency_key: "activejob-retry-of-#{run.task.id}" }
      end
    end
  end
end
