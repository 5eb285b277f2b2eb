# SPDX-License-Identifier: Apache-2.0
# frozen_string_literal: true

require_relative "test_helper"
require "timeout"

class TestWorker < TenqTest::Case
  def set_queue(**settings)
    client.request(:put, "/v1/queues/#{@queue}", settings)
  end

  def test_jobs_run_concurrently_and_results_come_back
    c = client
    lock = Mutex.new
    now_running = 0
    most = 0
    w = worker(concurrency: 5) do |r|
      r.register("Slow.run") do |task|
        lock.synchronize { most = [most, now_running += 1].max }
        sleep 0.6
        lock.synchronize { now_running -= 1 }
        { "n" => task.args[0] * 10 }
      end
    end
    handles = c.submit_many(Array.new(5) { |i| { type: "Slow.run", args: [i] } })
    t0 = nil
    running(w) do
      t0 = mono
      assert_equal (0..4).map { |i| { "n" => i * 10 } }, handles.map { |h| h.wait(timeout: 30) }
    end
    assert_equal 5, most, "five handlers ran at once"
    assert_operator mono - t0, :<, 2.9, "five jobs of 0.6 s took less than five times 0.6 s"
    assert_equal 5, w.counts[:succeeded]
  end

  def test_failures_retry_down_to_the_morgue
    c = client
    set_queue(backoff: "fixed", backoff_base_ms: 50)
    attempts = []
    w = worker { |r| r.register("Fails.always") { |t| attempts << t.attempt && raise(ArgumentError, "boom") } }
    h = c.submit(type: "Fails.always", max_attempts: 3)
    running(w) do
      err = assert_raises(Tenq::JobFailed) { h.wait(timeout: 30) }
      assert_equal "dead", err.job.state
    end
    assert_equal [1, 2, 3], attempts, "attempt counts from 1, as the job's attempts"
    job = c.job(h.id)
    assert_equal 3, job.attempts
    assert_equal "ArgumentError: boom", job.error
    assert_equal [h.id], c.morgue(queue: @queue).jobs.map(&:id)
    assert_equal 3, w.counts[:failed]
  end

  def test_a_handlers_attempt_is_the_jobs_attempts_and_its_history
    c = client
    set_queue(backoff: "fixed", backoff_base_ms: 50)
    seen = []
    w = worker do |r|
      r.register("Twice.run") do |t|
        seen << [t.attempt, c.job(t.id).attempts]
        raise "first" if t.attempt == 1

        t.attempt
      end
    end
    h = c.submit(type: "Twice.run")
    running(w) { assert_equal 2, h.wait(timeout: 30) }
    assert_equal [[1, 1], [2, 2]], seen, "the first run is attempt 1, as the job's attempts say"
    assert_equal [1, 2], c.attempts(h.id).map(&:attempt)
  end

  def test_retry_with_a_delay_and_no_retry
    c = client
    seen = []
    w = worker do |r|
      r.register("Retry.once") do |t|
        seen << [t.attempt, mono]
        raise Tenq::Retry.new("not yet", retry_in: 0.4) if t.attempt == 1

        "second time"
      end
      r.register("Give.up") { raise Tenq::NoRetry, "hopeless" }
      r.register("Returns.retry") { |t| t.attempt == 1 ? Tenq::Retry.new("later", retry_in: 0.1) : t.attempt }
      r.register("Bad.result") { Time.now }
    end
    h1 = c.submit(type: "Retry.once")
    h2 = c.submit(type: "Give.up", max_attempts: 10)
    h3 = c.submit(type: "Returns.retry")
    h4 = c.submit(type: "Bad.result", max_attempts: 1)
    running(w) do
      assert_equal "second time", h1.wait(timeout: 30)
      assert_raises(Tenq::JobFailed) { h2.wait(timeout: 30) }
      assert_equal 2, h3.wait(timeout: 30)
      bad = assert_raises(Tenq::JobFailed) { h4.wait(timeout: 30) }
      assert_match(/\Ainvalid result: result is a Time/, bad.job.error)
    end
    assert_equal [1, 2], seen.map(&:first)
    assert_operator seen[1][1] - seen[0][1], :>=, 0.35
    assert_equal "Tenq::Retry: not yet", c.job(h1.id).error
    dead = c.job(h2.id)
    assert_equal ["dead", 1, "Tenq::NoRetry: hopeless"], [dead.state, dead.attempts, dead.error]
  end

  def test_an_exception_never_kills_the_worker_and_an_unknown_type_fails
    c = client
    w = worker(concurrency: 1) do |r|
      r.register("Crash.now") { raise NoMethodError, "undefined method `x' for nil" }
      r.register("Fine.then") { 1 }
    end
    bad = c.submit(type: "Crash.now", max_attempts: 1)
    unknown = c.submit(type: "Nobody.handles", max_attempts: 1)
    good = c.submit(type: "Fine.then")
    running(w) { assert_equal 1, good.wait(timeout: 30) }
    assert_equal "NoMethodError: undefined method `x' for nil", c.wait(bad.id, timeout: 10).error
    info = c.wait(unknown.id, timeout: 10)
    assert_equal "dead", info.state
    assert_match(/no handler for type Nobody.handles/, info.error)
  end

  def test_progress_is_recorded_and_cancel_is_noticed
    c = client
    progress_seen = Queue.new
    stopped = nil
    w = worker(concurrency: 1) do |r|
      r.register("Long.run") do |task|
        i = 0
        until task.cancelled?
          task.progress({ "step" => i += 1 })
          progress_seen << i
          sleep 0.05
        end
        stopped = i
        task.check!
      end
    end
    h = c.submit(type: "Long.run")
    running(w) do
      eventually(what: "progress on the running job") { c.job(h.id).then { |j| j.progress && j.state == "running" } }
      c.cancel(h.id)
      info = c.wait(h.id, timeout: 20)
      assert_equal "cancelled", info.state
    end
    refute_nil stopped, "the handler saw the cancellation"
    assert_operator progress_seen.size, :>=, 2
  end

  def test_a_cancelled_handler_that_does_not_look_is_stopped
    c = client
    set_queue(lease_ms: 1500) # heartbeats every 0.5 s
    ensured = false
    w = worker(cancel_grace: 0.3) do |r|
      r.register("Deaf.run") do
        sleep 60
      ensure
        ensured = true
      end
    end
    h = c.submit(type: "Deaf.run")
    running(w) do
      eventually(what: "the job running") { c.job(h.id).state == "running" }
      t0 = mono
      c.cancel(h.id)
      assert_equal "cancelled", c.wait(h.id, timeout: 20).state
      assert_operator mono - t0, :<, 10
    end
    assert ensured, "the handler's ensure ran"
  end

  def test_a_job_past_its_timeout_fails_timeout
    c = client
    w = worker(timeout: 0.5) do |r|
      r.register("Forever.run") { sleep 60 }
      r.register("Own.timeout", timeout: 0.2) { sleep 60 }
    end
    h1 = c.submit(type: "Forever.run", max_attempts: 1)
    h2 = c.submit(type: "Own.timeout", max_attempts: 1)
    t0 = mono
    running(w) do
      [h1, h2].each { |h| assert_equal %w[dead timeout], c.wait(h.id, timeout: 20).to_h.values_at("state", "error") }
    end
    assert_operator mono - t0, :<, 10
  end

  def test_heartbeats_keep_a_short_lease
    c = client
    set_queue(lease_ms: 1000)
    w = worker do |r|
      r.register("Longer.than.lease") do
        sleep 2.2
        "done"
      end
    end
    h = c.submit(type: "Longer.than.lease", max_attempts: 1)
    running(w) { assert_equal "done", h.wait(timeout: 30) }
    assert_equal 1, c.job(h.id).attempts, "the lease never expired"
  end

  # The server's wall clock an hour off this machine's: heartbeats are spaced
  # by the time the server says the lease has left, neither 20 minutes apart
  # (the lease would lapse and the job run again) nor as fast as they can (35
  # requests and more).
  [3600, -3600].each do |offset|
    define_method("test_heartbeats_by_the_time_left_with_the_server_#{offset.positive? ? 'ahead' : 'behind'}") do
      off = own_server(env: TenqTest::Server.clock_off(offset))
      c = client(servers: [off.url])
      c.request(:put, "/v1/queues/#{@queue}", { lease_ms: 3000 }) # heartbeats every second
      w = worker(client: c) do |r|
        r.register("Longer.than.lease") do
          sleep 3.5
          "done"
        end
      end
      before = off.requests_served
      h = c.submit(type: "Longer.than.lease", max_attempts: 1)
      running(w) { assert_equal "done", h.wait(timeout: 30) }
      served = off.requests_served - before
      assert_equal 1, c.job(h.id).attempts, "the lease never expired"
      assert_operator served, :<, 20
    end
  end

  def test_middleware_runs_in_order_around_each_job_and_reports_errors
    c = client
    order = []
    reported = []
    outer = Class.new do
      define_method(:initialize) { |log| @log = log }
      define_method(:call) do |task, &blk|
        @log << [:outer_in, task.type]
        r = blk.call
        @log << [:outer_out, r]
        r
      end
    end
    chain = Tenq::Middleware::Chain.new
    chain.add(outer, order)
    chain.add(Tenq::Middleware::ErrorReporter.new { |e, task| reported << [e.class, task.id] })
    chain.add(lambda do |task, &blk|
      order << [:inner, task.id.class]
      blk.call
    end)
    w = worker(middleware: chain, concurrency: 1) do |r|
      r.register("Mw.ok") { "r" }
      r.register("Mw.bad") { raise KeyError, "nope" }
    end
    ok = c.submit(type: "Mw.ok")
    bad = c.submit(type: "Mw.bad", max_attempts: 1)
    running(w) do
      assert_equal "r", ok.wait(timeout: 30)
      assert_raises(Tenq::JobFailed) { bad.wait(timeout: 30) }
    end
    assert_equal [[:outer_in, "Mw.ok"], [:inner, Integer], [:outer_out, "r"], [:outer_in, "Mw.bad"], [:inner, Integer]],
                 order
    assert_equal [[KeyError, bad.id]], reported
  end

  def test_the_logging_middleware
    c = client
    io = StringIO.new
    chain = Tenq::Middleware::Chain.new.add(Tenq::Middleware::Logging, Logger.new(io))
    w = worker(middleware: chain) { |r| r.register("Log.me") { 1 } }
    h = c.submit(type: "Log.me")
    running(w) { h.wait(timeout: 30) }
    assert_match(/job #{h.id} Log.me: done in/, io.string)
  end

  def test_outcomes_wait_for_a_server_that_is_away
    s = own_server
    c = client(servers: [s.url])
    release = Queue.new
    w = worker(client: c, concurrency: 2) { |r| r.register("Survive.run") { release.pop } }
    h = c.submit(type: "Survive.run")
    running(w) do
      eventually(what: "the job leased") { %w[leased running].include?(c.job(h.id).state) }
      sleep 0.4 # the lease is stored (--lease-write-delay)
      s.kill
      release << "go"
      sleep 1.0 # the outcome waits; leases and outcomes are retried with backoff
      s.start
      info = c.wait(h.id, timeout: 30)
      assert_equal "succeeded", info.state
      assert_equal "go", info.result
    end
    assert_equal 1, w.counts[:succeeded]
  end

  def test_prefetch_leases_ahead
    c = client
    ran = Queue.new
    w = worker(concurrency: 2, prefetch: 20) { |r| r.register("Many.run") { |t| ran << t.id && nil } }
    handles = c.submit_many(Array.new(200) { { type: "Many.run" } })
    running(w) { eventually(what: "200 jobs") { w.counts[:succeeded] == 200 } }
    assert_equal 200, ran.size
    assert handles.all? { |h| c.job(h.id).succeeded? } if handles.size < 20
  end

  def test_automatic_prefetch_leases_nothing_ahead_of_long_jobs
    c = client
    w = worker(concurrency: 1) do |r|
      r.register("Long.one") do
        sleep 0.3
        "done"
      end
    end
    handles = c.submit_many(Array.new(3) { { type: "Long.one" } })
    running(w) do
      eventually(what: "the first job running") { c.job(handles[0].id).state == "running" }
      assert_equal %w[ready ready], handles[1..].map { |h| c.job(h.id).state }
      handles[0].wait(timeout: 30)
      eventually(what: "the second job running") { c.job(handles[1].id).state == "running" }
      assert_equal "ready", c.job(handles[2].id).state, "a 0.3 s job is too long to lease ahead of"
      handles[2].wait(timeout: 30)
    end
  end

  def test_a_refused_worker_raises
    s = own_server(env: { "TENQ_ADMIN_TOKEN" => "admin-secret-0123456789" })
    c = client(servers: [s.url], token: "not-the-token")
    w = worker(client: c)
    assert_raises(Tenq::UnauthenticatedError) { Timeout.timeout(30) { w.run(signals: []) } }
  end
end
