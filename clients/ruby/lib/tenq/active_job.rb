# SPDX-License-Identifier: Apache-2.0
# frozen_string_literal: true

require "active_job"
require_relative "../tenq"
require_relative "active_job/job_options"
require_relative "active_job/runner"
require_relative "active_job/adapter"

module Tenq
  # ActiveJob on tenq: +config.active_job.queue_adapter = :tenq+ (the
  # Railtie loads this file; outside Rails, +require "tenq/active_job"+).
  #
  # - +perform_later+ submits a job of type "ReportJob" (the class's name)
  #   to the job's queue, with the job's serialized data as its args;
  #   +set(wait:)+ and +set(wait_until:)+ schedule it (run_at); ActiveJob's
  #   priority, lower first, is tenq's negated (+priority: 10+ is tenq's
  #   -10). +job.provider_job_id+ is the tenq job's id.
  # - The tenant: the class's {JobOptions#tenq_tenant} (a name, one of the
  #   job's arguments, or a block), else the adapter's +tenant:+ (a name or
  #   a block), else the default client's (config/tenq.yml's +tenant+).
  # - A worker (+tenq-worker+, or any {Worker}) runs a job whose type names
  #   an ActiveJob class through +ActiveJob::Base.execute+ ({Runner}).
  # - Retries are tenq's: one tenq job from +perform_later+ to the end,
  #   whatever +retry_on+ does ({Runner} says how).
  module ActiveJob
    # +Tenq::ActiveJob.perform_all_later(jobs)+: many jobs in one request a
    # 10,000 (Rails 7.1's +ActiveJob.perform_all_later+, which calls the
    # adapter's +enqueue_all+; no enqueue callbacks run, as there). Jobs of
    # classes on other adapters raise ArgumentError before anything is sent.
    # @param jobs [Array<ActiveJob::Base>] job instances (+ReportJob.new(42)+)
    # @return [Integer] how many were enqueued (a job the server refused has
    #   no provider_job_id)
    def self.perform_all_later(*jobs)
      jobs = jobs.flatten
      by_adapter = jobs.group_by { |j| j.class.queue_adapter }
      others = by_adapter.keys.reject { |a| a.is_a?(::ActiveJob::QueueAdapters::TenqAdapter) }
      raise ArgumentError, "jobs on other adapters: #{others.map { |a| a.class.name }.uniq.join(', ')}" if others.any?

      by_adapter.sum { |adapter, list| adapter.enqueue_all(list) }
    end
  end
end
