# SPDX-License-Identifier: Apache-2.0
# frozen_string_literal: true

require "fileutils"
require "json"
require "tmpdir"
require "sidekiq"
require "sidekiq/api"

Redis.silence_deprecations = true if Redis.respond_to?(:silence_deprecations=)

# W1 on Sidekiq 6 (Debian ruby-sidekiq) over Redis: Sidekiq::Client.push_bulk
# 1,000 jobs a call (as bench/peers/sidekiq/driver.rb does), then one
# `sidekiq -c C` process runs the blank jobs; a server middleware in it
# (sidekiq_worker.rb) counts them and times the first start to the last end.
class SidekiqW1
  BULK = 1000
  WORKER = File.expand_path("sidekiq_worker.rb", __dir__)

  def initialize(opts)
    @jobs = opts[:jobs]
    @concurrency = opts[:concurrency]
    @url = opts[:redis]
    @queue = opts[:queue] || "w1"
    Sidekiq.configure_client { |c| c.redis = { url: @url, size: 2 } }
    Sidekiq.logger.level = Logger::WARN
  end

  def run
    t0 = mono
    Array.new(@jobs) { [] }.each_slice(BULK) do |slice|
      Sidekiq::Client.push_bulk("class" => "BlankJob", "queue" => @queue, "args" => slice)
    end
    enqueue_s = mono - t0
    size = Sidekiq::Queue.new(@queue).size
    raise "the queue holds #{size} jobs, not #{@jobs}" unless size == @jobs

    r = drain
    raise "#{r['count']} of #{@jobs} jobs ran" unless r["count"] == @jobs
    raise "#{Sidekiq::Queue.new(@queue).size} jobs left in the queue" unless Sidekiq::Queue.new(@queue).size.zero?

    { "system" => "sidekiq", "jobs" => @jobs, "enqueue_per_s" => (@jobs / enqueue_s).round,
      "drain_per_s" => (@jobs / r["seconds"]).round }
  end

  private

  def mono = Process.clock_gettime(Process::CLOCK_MONOTONIC)

  def drain
    dir = Dir.mktmpdir("sidekiq-w1-")
    out = File.join(dir, "result.json")
    log = File.join(dir, "sidekiq.log")
    env = { "REDIS_URL" => @url, "BENCH_TARGET" => @jobs.to_s, "BENCH_OUT" => out }
    pid = Process.spawn(env, "sidekiq", "-r", WORKER, "-c", @concurrency.to_s, "-q", @queue, "-t", "5",
                        out: log, err: log)
    wait_for(out, pid, log)
    JSON.parse(File.read(out))
  ensure
    stop(pid)
    FileUtils.rm_rf(dir) if dir
  end

  def wait_for(out, pid, log)
    deadline = mono + 1800
    until File.exist?(out)
      raise "sidekiq exited early: #{File.read(log)[-2000..]}" if Process.waitpid(pid, Process::WNOHANG)
      raise "timed out waiting for #{@jobs} jobs" if mono > deadline

      sleep 0.01
    end
  end

  def stop(pid)
    return unless pid

    Process.kill("TERM", pid)
    Process.wait(pid)
  rescue Errno::ESRCH, Errno::ECHILD
    nil
  end
end
