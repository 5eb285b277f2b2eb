# SPDX-License-Identifier: Apache-2.0
# frozen_string_literal: true

# The library in this repository (clients/ruby/lib), or the installed gem
# with TENQ_GEM_INSTALLED=1.
$LOAD_PATH.unshift(File.expand_path("../../../../clients/ruby/lib", __dir__)) unless ENV["TENQ_GEM_INSTALLED"]
require "tenq/active_job"
require_relative "activejob_blank"

# W1 through ActiveJob on tenq: perform_later (or perform_all_later), then
# a Tenq::Worker running the jobs through ActiveJob::Base.execute.
class ActiveJobTenq
  def initialize(opts)
    @system = opts["system"]
    @jobs = opts["jobs"]
    @concurrency = opts["concurrency"]
    @bulk = @system.end_with?("-bulk")
    @queue = "bench"
    Tenq.configure(servers: [opts["url"]], tenant: "bench")
    ActiveJob::Base.queue_adapter = :tenq
  end

  def run
    enqueue_s = enqueue
    drain_s = drain
    check!
    { "system" => @system, "workload" => "W1", "concurrency" => @concurrency, "jobs" => @jobs,
      "enqueue_jobs_per_s" => (@jobs / enqueue_s).round(1), "drain_jobs_per_s" => (@jobs / drain_s).round(1),
      "ms_per_job" => (drain_s * 1000 / @jobs).round(4),
      "driver_note" => "Ruby #{RUBY_VERSION}, ActiveJob #{ActiveJob.version}, the tenq gem #{Tenq::VERSION}: " \
                       "queue_adapter :tenq; Tenq::Worker(concurrency: #{@concurrency})",
      "enqueue_note" => if @bulk
                          "Tenq::ActiveJob.perform_all_later of #{@jobs} jobs (submit_many)"
                        else
                          "perform_later, one job a call"
                        end,
      "drain_note" => "from the worker's start to the last outcome acknowledged" }
  end

  private

  def mono = Process.clock_gettime(Process::CLOCK_MONOTONIC)

  def enqueue
    t0 = mono
    if @bulk
      made = Tenq::ActiveJob.perform_all_later(Array.new(@jobs) { BlankJob.new })
      raise "#{@jobs - made} of #{@jobs} jobs were not made" unless made == @jobs
    else
      @jobs.times { BlankJob.perform_later || raise("perform_later failed") }
    end
    t1 = mono
    ready = Tenq.client.request(:get, "/v1/queues/#{@queue}")["ready"].to_i
    raise "the queue holds #{ready} ready jobs, not #{@jobs}" unless ready == @jobs

    t1 - t0
  end

  def drain
    worker = Tenq::Worker.new(queues: [@queue], concurrency: @concurrency, registry: Tenq::Registry.new,
                              middleware: Tenq::Middleware::Chain.new, logger: Logger.new(nil), poll: 1)
    t0 = mono
    thread = Thread.new { worker.run(signals: []) }
    elapsed = nil
    until elapsed
      raise "the worker ended early" unless thread.alive?

      elapsed = mono - t0 if worker.counts.values.sum >= @jobs
      sleep 0.0005 unless elapsed
    end
    worker.stop
    thread.join
    @counts = worker.counts
    elapsed
  end

  def check!
    raise "BlankJob ran #{BlankJob.ran} times for #{@jobs} jobs" unless BlankJob.ran == @jobs
    raise "worker counts #{@counts}" unless @counts[:succeeded] == @jobs

    q = Tenq.client.request(:get, "/v1/queues/#{@queue}")
    left = %w[ready scheduled blocked leased running dead].sum { |k| q[k].to_i }
    raise "the queue still holds #{left} unfinished jobs: #{q}" unless left.zero?
  end
end
