# SPDX-License-Identifier: Apache-2.0
# frozen_string_literal: true

require "fileutils"
require "sidekiq"
require "sidekiq/api"
require "tmpdir"
require_relative "activejob_blank"

Redis.silence_deprecations = true if Redis.respond_to?(:silence_deprecations=)

# W1 through ActiveJob on Sidekiq 6.4 (ActiveJob 6.1's own :sidekiq adapter):
# perform_later into Redis, then one `sidekiq -c C` process
# (activejob_sidekiq_worker.rb) whose server middleware takes the first
# start and the last end, as bench/peers/sidekiq/ does.
class ActiveJobSidekiq
  def initialize(opts)
    @jobs = opts["jobs"]
    @concurrency = opts["concurrency"]
    @url = opts["url"]
    @timeout = opts["timeout"]
    Sidekiq.configure_client { |c| c.redis = { url: @url, size: 2 } }
    Sidekiq.logger.level = Logger::WARN
    ActiveJob::Base.queue_adapter = :sidekiq
  end

  def run
    t0 = mono
    @jobs.times { BlankJob.perform_later || raise("perform_later failed") }
    enqueue_s = mono - t0
    size = Sidekiq::Queue.new("bench").size
    raise "queue size #{size} != #{@jobs}" unless size == @jobs

    r = drain
    drain_s = (r["last_end_ms"] - r["first_start_ms"]) / 1000.0
    { "system" => "sidekiq-activejob", "workload" => "W1", "concurrency" => @concurrency, "jobs" => @jobs,
      "enqueue_jobs_per_s" => (@jobs / enqueue_s).round(1), "drain_jobs_per_s" => (@jobs / drain_s).round(1),
      "ms_per_job" => (drain_s * 1000 / @jobs).round(4),
      "driver_note" => "Ruby #{RUBY_VERSION}, ActiveJob #{ActiveJob.version}, Sidekiq #{Sidekiq::VERSION}: " \
                       "queue_adapter :sidekiq; one `sidekiq -c #{@concurrency}` process",
      "enqueue_note" => "perform_later, one job a call (Sidekiq::Client.push)",
      "drain_note" => "first job start to last job end, in the sidekiq process" }
  end

  private

  def mono = Process.clock_gettime(Process::CLOCK_MONOTONIC)

  def drain
    dir = Dir.mktmpdir("sqajbench")
    out = File.join(dir, "result.json")
    log = File.join(dir, "sidekiq.log")
    env = { "REDIS_URL" => @url, "BENCH_TARGET" => @jobs.to_s, "BENCH_OUT" => out }
    pid = Process.spawn(env, "sidekiq", "-r", File.join(__dir__, "activejob_sidekiq_worker.rb"),
                        "-c", @concurrency.to_s, "-q", "bench", "-t", "5", out: log, err: log)
    begin
      deadline = mono + @timeout
      until File.exist?(out)
        if Process.waitpid(pid, Process::WNOHANG)
          pid = nil
          raise "sidekiq exited early: #{File.read(log)[-2000..]}"
        end
        raise "timed out waiting for #{@jobs} jobs" if mono > deadline

        sleep 0.01
      end
      JSON.parse(File.read(out))
    ensure
      if pid
        Process.kill("TERM", pid)
        Process.wait(pid)
      end
      FileUtils.rm_rf(dir)
    end
  end
end
