# SPDX-License-Identifier: Apache-2.0
# frozen_string_literal: true

# The library in this repository (clients/ruby/lib), or the installed gem
# with TENQ_GEM_INSTALLED=1.
$LOAD_PATH.unshift(File.expand_path("../../../../clients/ruby/lib", __dir__)) unless ENV["TENQ_GEM_INSTALLED"]
require "tenq"
require "logger"

# W1 on tenq through the gem: Client#submit_many, then a Tenq::Worker.
class TenqW1
  def initialize(opts)
    @system = opts["system"]
    @jobs = opts["jobs"]
    @concurrency = opts["concurrency"]
    @prefetch = opts.fetch("prefetch", :auto)
    @queue = "w1-#{Process.pid}"
    @client = Tenq::Client.new(servers: [opts["url"]], tenant: "bench", queue: @queue)
  end

  def run
    enqueue_s = enqueue
    drain_s = drain
    check!
    { "system" => @system, "workload" => "W1", "concurrency" => @concurrency, "jobs" => @jobs,
      "enqueue_jobs_per_s" => (@jobs / enqueue_s).round(1), "drain_jobs_per_s" => (@jobs / drain_s).round(1),
      "ms_per_job" => (drain_s * 1000 / @jobs).round(4),
      "driver_note" => "Ruby #{RUBY_VERSION}, the tenq gem #{Tenq::VERSION}: Client#submit_many; " \
                       "Tenq::Worker(concurrency: #{@concurrency}, prefetch: #{@prefetch.inspect})",
      "enqueue_note" => "submit_many of #{@jobs} job hashes (#{Tenq::Client::BATCH_MAX} a request), " \
                        "until every answer is read",
      "drain_note" => "from the worker's start to the last outcome acknowledged" }
  end

  private

  def mono = Process.clock_gettime(Process::CLOCK_MONOTONIC)

  def enqueue
    t0 = mono
    handles = @client.submit_many(Array.new(@jobs) { { type: "Blank.run" } })
    t1 = mono
    bad = handles.count { |h| !h.ok? || !h.created? }
    raise "#{bad} of #{@jobs} jobs were not made" unless bad.zero? && handles.size == @jobs

    ready = @client.request(:get, "/v1/queues/#{@queue}")["ready"].to_i
    raise "the queue holds #{ready} ready jobs, not #{@jobs}" unless ready == @jobs

    t1 - t0
  end

  def drain
    ran = 0
    lock = Mutex.new
    registry = Tenq::Registry.new.register("Blank.run") { lock.synchronize { ran += 1 } && nil }
    worker = Tenq::Worker.new(queues: [@queue], client: @client, concurrency: @concurrency, prefetch: @prefetch,
                              registry: registry, middleware: Tenq::Middleware::Chain.new, logger: Logger.new(nil),
                              poll: 1)
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
    @ran = ran
    @counts = worker.counts
    elapsed
  end

  def check!
    raise "handlers ran #{@ran} times for #{@jobs} jobs" unless @ran == @jobs
    raise "worker counts #{@counts}" unless @counts[:succeeded] == @jobs

    q = @client.request(:get, "/v1/queues/#{@queue}")
    left = %w[ready scheduled blocked leased running dead].sum { |k| q[k].to_i }
    raise "the queue still holds #{left} unfinished jobs: #{q}" unless left.zero?
  end
end
