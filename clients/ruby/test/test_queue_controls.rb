# SPDX-License-Identifier: Apache-2.0
# frozen_string_literal: true

require_relative "test_helper"

# Pauses, server-side timeouts and rate limits through the library, against
# a real server: a paused queue (or tenant) leases nothing to the worker
# until resumed; a job past its timeout_ms is failed by the server and the
# worker stops its handler (:lost) and reports nothing; a rate set with
# set_queue spaces the worker's starts.
class TestQueueControls < TenqTest::Case
  # COUNTS is kept by hand: every count the server sends (the totals of GET
  # /v1/stats) must be one of its readers (+waiting+ was not).
  def test_settings_info_reads_every_count_the_server_sends
    c = client
    parent = c.submit(type: "P.job")
    c.submit(type: "C.job", depends_on: [parent])
    totals = c.request("GET", "/v1/stats")["totals"]
    assert_empty totals.keys.map(&:to_sym) - Tenq::SettingsInfo::COUNTS
    assert_equal 1, c.queue(@queue).waiting
    assert_operator c.tenant("acme").waiting, :>=, 1
  end

  def test_a_paused_queue_leases_nothing_until_resumed
    c = client
    c.set_queue(@queue) # a pause takes a queue that exists
    info = c.pause_queue(@queue)
    assert_kind_of Tenq::QueueInfo, info
    assert_equal @queue, info.name
    assert info.paused?
    assert_empty info.paused_tenants
    ran = Queue.new
    w = worker(concurrency: 3) { |r| r.register("P.job") { |t| (ran << t.id) && t.args } }
    handles = c.submit_many(Array.new(3) { |i| { type: "P.job", args: i } })
    running(w) do
      sleep 1.5
      assert_equal 0, ran.size, "nothing ran while paused"
      job = c.job(handles[0].id)
      assert_equal "ready", job.state
      assert_equal "queue_paused", job.waiting_reason
      assert_equal 3, c.queue(@queue).held
      refute_predicate c.resume_queue(@queue), :paused?
      assert_equal [0, 1, 2], handles.map { |h| h.wait(timeout: 30) }
    end
    assert_equal 3, w.counts[:succeeded]
  end

  def test_a_paused_tenant_waits_while_others_run
    c = client
    c.set_queue(@queue)
    info = c.pause_queue(@queue, tenant: "acme")
    refute_predicate info, :paused?
    assert_equal ["acme"], info.paused_tenants
    w = worker { |r| r.register("P.job", &:args) }
    mine = c.submit(type: "P.job", args: "acme")
    other = c.submit(type: "P.job", args: "other", tenant: "other")
    running(w) do
      assert_equal "other", other.wait(timeout: 30)
      sleep 0.3
      job = c.job(mine.id)
      assert_equal "ready", job.state
      assert_equal "tenant_paused", job.waiting_reason
      assert_empty c.resume_queue(@queue, tenant: "acme").paused_tenants
      assert_equal "acme", mine.wait(timeout: 30)
    end
  end

  def test_a_job_past_its_timeout_ms_is_failed_by_the_server_and_its_handler_stopped
    c = client
    c.set_queue(@queue, lease_ms: 1500, max_attempts: 1) # heartbeats every 0.5 s
    reasons = []
    seen = nil
    w = worker do |r|
      r.register("Stuck.run") do |task|
        seen = task.timeout_ms
        sleep 30
      rescue Tenq::Stopped => e
        reasons << e.reason
        raise
      end
    end
    h = c.submit(type: "Stuck.run", timeout_ms: 700)
    assert_equal 700, c.job(h.id).timeout_ms
    t0 = mono
    running(w) do
      eventually(timeout: 10, what: "the handler stopped") { !reasons.empty? }
      assert_operator mono - t0, :<, 5, "stopped at a heartbeat soon after 0.7 s"
      sleep 0.6 # a report, had one been sent, would be in by now
      assert_equal 1, w.counts[:lost]
      assert_equal 0, w.counts[:succeeded] + w.counts[:failed] + w.counts[:refused]
    end
    assert_equal [:lost], reasons
    assert_equal 700, seen
    job = c.job(h.id)
    assert_equal "dead", job.state
    assert_match(/\Atimed out:/, job.error)
  end

  def test_the_queue_timeout_and_the_test_modes_records
    c = client
    info = c.set_queue(@queue, lease_ms: 1500, timeout_ms: 900, max_attempts: 1)
    assert_equal 900, info.timeout_ms
    w = worker { |r| r.register("Nap.run") { sleep 30 } }
    h = c.submit(type: "Nap.run")
    assert_nil c.job(h.id).timeout_ms # the queue's, not its own
    running(w) do
      assert_equal "dead", c.wait(h.id, timeout: 20).state
      eventually(timeout: 10, what: "the lost lease") { w.counts[:lost] == 1 }
    end
    assert_match(/\Atimed out:/, c.job(h.id).error)
    Tenq::Testing.fake! do
      Tenq::Testing.clear
      fh = c.submit(type: "Nap.run", timeout_ms: 1234)
      assert_equal 1234, Tenq::Testing.jobs.first["timeout_ms"]
      assert_equal 1234, fh.job.timeout_ms
    end
    err = assert_raises(Tenq::InvalidError) { c.submit(type: "Nap.run", timeout_ms: "soon") }
    assert_equal "timeout_ms", err.field
  end

  def test_a_queue_rate_gives_a_burst_then_one_start_each_period_over_rate
    c = client
    info = c.set_queue(@queue, rate: 2, rate_period_ms: 1000)
    assert_equal [2, 1000, nil], [info.rate, info.rate_period_ms, info.rate_burst]
    starts = Queue.new
    w = worker(concurrency: 6) { |r| r.register("R.job") { (starts << mono) && nil } }
    handles = c.submit_many(Array.new(6) { |i| { type: "R.job", args: i } })
    running(w) do
      eventually(what: "the burst") { starts.size >= 2 }
      q = c.queue(@queue)
      assert_operator q.held, :>=, 1
      assert_operator q.rate_limited_until.to_i, :>, 0
      held = c.job(handles.last.id)
      assert_equal "queue_rate", held.waiting_reason
      assert_operator held.waiting["until"], :>, 0
      handles.each { |h| h.wait(timeout: 30) }
    end
    times = Array.new(starts.size) { starts.pop }.sort
    rel = times.map { |t| t - times[0] }
    assert_operator rel[1], :<, 0.3, rel.inspect
    (2..5).each { |k| assert_operator rel[k], :>=, ((k - 1) * 0.5) - 0.15, rel.inspect }
    assert_operator rel[5], :<, 4, rel.inspect
  end

  def test_a_tenant_rate_set_with_set_tenant_holds_its_jobs_apart
    c = client
    name = "rated-#{@queue}"
    info = c.set_tenant(name, rate: 1, rate_period_ms: 800, rate_burst: 1)
    assert_kind_of Tenq::TenantInfo, info
    assert_equal [1, 800, 1], [info.rate, info.rate_period_ms, info.rate_burst]
    assert_equal 1, c.tenant(name).rate
    starts = Queue.new
    w = worker(concurrency: 3) { |r| r.register("R.t") { (starts << mono) && nil } }
    handles = Array.new(3) { |i| c.submit(type: "R.t", args: i, tenant: name) }
    running(w) do
      eventually(what: "the first start") { starts.size >= 1 }
      assert_equal "tenant_rate", c.job(handles[2].id).waiting_reason
      handles.each { |h| h.wait(timeout: 30) }
    end
    times = Array.new(starts.size) { starts.pop }.sort
    assert_operator times[1] - times[0], :>=, 0.7, times.inspect
    assert_operator times[2] - times[1], :>=, 0.7, times.inspect
    assert_nil c.set_tenant(name, rate: nil).rate
  end
end
