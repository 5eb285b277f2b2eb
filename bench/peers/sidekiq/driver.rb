#!/usr/bin/env ruby
# SPDX-License-Identifier: Apache-2.0
# The Sidekiq 6 driver of the peer benchmark (bench/peers/README.md has the
# contract). Enqueues with Sidekiq::Client.push_bulk (1,000 jobs a call),
# single jobs with Sidekiq::Client.push, and runs the jobs in a separate
# `sidekiq -c CONCURRENCY` process whose BlankJob does nothing.
#
#   ruby driver.rb --workload W1 --url redis://127.0.0.1:PORT/0 [--concurrency 5] [sizes]
require "json"
require "optparse"
require "tmpdir"
require "sidekiq"
require "sidekiq/api"

Redis.silence_deprecations = true if Redis.respond_to?(:silence_deprecations=)

opts = {
  "concurrency" => 5, "jobs" => 100_000, "interval-ms" => 5, "flood" => 50_000, "probe" => 200,
  "keys" => 1000, "per-key" => 20, "burst" => 5, "backlog" => 10_000, "measure" => 20_000,
  "system" => "sidekiq", "timeout" => 1800,
}
OptionParser.new do |o|
  %w[workload url system].each { |k| o.on("--#{k} V", String) { |v| opts[k] = v } }
  %w[concurrency jobs interval-ms flood probe keys per-key burst backlog measure timeout].each do |k|
    o.on("--#{k} N", Integer) { |v| opts[k] = v }
  end
end.parse!(ARGV)
W = opts.fetch("workload")
URL = opts.fetch("url")
CONC = opts["concurrency"]
HERE = __dir__
BULK = 1000

Sidekiq.configure_client { |c| c.redis = { url: URL, size: 2 } }
Sidekiq.logger.level = Logger::WARN

def now_ms = Process.clock_gettime(Process::CLOCK_REALTIME, :float_millisecond)
def mono = Process.clock_gettime(Process::CLOCK_MONOTONIC)

def push_bulk(args_list)
  args_list.each_slice(BULK) do |slice|
    Sidekiq::Client.push_bulk("class" => "BlankJob", "queue" => "bench", "args" => slice)
  end
end

def push_one(args)
  Sidekiq::Client.push("class" => "BlankJob", "queue" => "bench", "args" => args)
end

def pct(sorted, p)
  return 0.0 if sorted.empty?
  r = (p / 100.0 * sorted.size).ceil.clamp(1, sorted.size)
  sorted[r - 1]
end

# Runs `sidekiq` until TARGET jobs are done; yields once the process is up.
def with_sidekiq(target, timeout)
  dir = Dir.mktmpdir("sqbench")
  out = File.join(dir, "result.json")
  env = { "REDIS_URL" => URL, "BENCH_TARGET" => target.to_s, "BENCH_OUT" => out }
  log = File.open(File.join(dir, "sidekiq.log"), "w")
  pid = Process.spawn(env, "sidekiq", "-r", File.join(HERE, "worker.rb"), "-c", CONC.to_s,
                      "-q", "bench", "-t", "5", out: log, err: log, pgroup: false)
  begin
    deadline = mono + 60
    until Sidekiq::ProcessSet.new.size >= 1
      raise "sidekiq did not start (#{File.read(log.path)[-2000..]})" if mono > deadline || Process.waitpid(pid, Process::WNOHANG)
      sleep 0.05
    end
    yield if block_given?
    deadline = mono + timeout
    until File.exist?(out)
      if Process.waitpid(pid, Process::WNOHANG)
        pid = nil
        raise "sidekiq exited early: #{File.read(log.path)[-2000..]}"
      end
      raise "timed out waiting for #{target} jobs" if mono > deadline
      sleep 0.01
    end
    JSON.parse(File.read(out))
  ensure
    if pid
      Process.kill("TERM", pid) rescue nil
      Process.wait(pid) rescue nil
    end
    log.close
    FileUtils.rm_rf(dir)
  end
end

def head(w) = { "system" => $opts_system, "workload" => w, "concurrency" => CONC,
                "driver_note" => "Sidekiq::Client.push_bulk (#{BULK} jobs a call); one `sidekiq -c #{CONC}` process, " \
                                 "blank BlankJob, times taken by a server middleware" }
$opts_system = opts["system"]

result =
  case W
  when "W1"
    n = opts["jobs"]
    t0 = mono
    push_bulk(Array.new(n) { [] })
    t1 = mono
    raise "queue size #{Sidekiq::Queue.new('bench').size} != #{n}" if Sidekiq::Queue.new("bench").size != n
    r = with_sidekiq(n, opts["timeout"])
    drain_s = (r["last_end_ms"] - r["first_start_ms"]) / 1000.0
    head("W1").merge("jobs" => n, "enqueue_jobs_per_s" => n / (t1 - t0), "drain_jobs_per_s" => n / drain_s,
                     "ms_per_job" => drain_s * 1000 / n,
                     "enqueue_note" => "push_bulk, #{BULK} jobs a call",
                     "drain_note" => "first job start to last job end, in the sidekiq process")
  when "W2"
    n = opts["jobs"]
    r = with_sidekiq(n, opts["timeout"]) do
      sleep 0.5 # the processors are fetching (BRPOP) by now
      t0 = mono
      n.times do |i|
        d = t0 + i * opts["interval-ms"] / 1000.0 - mono
        sleep d if d > 0
        push_one([now_ms])
      end
    end
    lat = r["records"].map { |sub, st, _en| st - sub }.sort
    head("W2").merge("jobs" => lat.size, "interval_ms" => opts["interval-ms"], "p50_ms" => pct(lat, 50),
                     "p90_ms" => pct(lat, 90), "p99_ms" => pct(lat, 99), "max_ms" => lat.last)
  when "W3"
    a = opts["flood"]
    b = opts["probe"]
    t0 = nil
    r = with_sidekiq(a + b, opts["timeout"]) do
      sleep 0.5
      t0 = now_ms
      push_bulk(Array.new(a) { ["A"] })
      b.times { push_one([now_ms]) }
    end
    lat = r["records"].map { |sub, st, _en| st - sub }.sort
    head("W3").merge("tenant_slots" => "not supported", "a_jobs" => a, "b_jobs" => lat.size,
                     "b_wait_p50_ms" => pct(lat, 50), "b_wait_p99_ms" => pct(lat, 99), "b_wait_max_ms" => lat.last,
                     "total_jobs_per_s" => (a + b) / ((r["last_end_ms"] - t0) / 1000.0),
                     "note" => "one shared FIFO queue")
  when "W4"
    keys = opts["keys"]
    per = opts["per-key"]
    burst = [opts["burst"], per].min
    args = []
    (per / burst.to_f).ceil.times do |round|
      keys.times do |k|
        burst.times do |j|
          q = round * burst + j
          args << [k, q] if q < per
        end
      end
    end
    push_bulk(args)
    r = with_sidekiq(args.size, opts["timeout"])
    by = {}
    r["records"].each { |k, q, st, en| by[[k, q]] = [st, en] }
    raise "#{args.size - by.size} W4 jobs missing" if by.size != args.size
    viol = 0
    keys.times do |k|
      (1...per).each do |q|
        st, = by[[k, q]]
        pst, pen = by[[k, q - 1]]
        viol += 1 if st < pen || st < pst
      end
    end
    secs = (r["last_end_ms"] - r["first_start_ms"]) / 1000.0
    head("W4").merge("ordered" => false, "ordering" => "not supported (run unordered)", "keys" => keys,
                     "per_key" => per, "jobs" => args.size, "jobs_per_s" => args.size / secs,
                     "order_violations" => viol)
  when "W5"
    bl = opts["backlog"]
    m = [opts["measure"], bl].min
    t0 = mono
    left = bl
    while left > 0 # no big Ruby array for millions of jobs
      k = [left, 100_000].min
      push_bulk(Array.new(k) { [] })
      left -= k
    end
    t1 = mono
    r = with_sidekiq(m, opts["timeout"])
    head("W5").merge("backlog" => bl, "measured_jobs" => m, "fill_jobs_per_s" => bl / (t1 - t0),
                     "drain_jobs_per_s" => m / ((r["last_end_ms"] - r["first_start_ms"]) / 1000.0))
  when "MEM"
    n = opts["jobs"]
    t0 = mono
    left = n
    while left > 0
      k = [left, 100_000].min
      push_bulk(Array.new(k) { [] })
      left -= k
    end
    t1 = mono
    raise "queue size mismatch" if Sidekiq::Queue.new("bench").size != n
    head("MEM").merge("jobs" => n, "enqueue_jobs_per_s" => n / (t1 - t0))
  else
    raise "unknown workload #{W}"
  end

puts JSON.generate(result)
