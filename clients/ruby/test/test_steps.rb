# SPDX-License-Identifier: Apache-2.0
# frozen_string_literal: true

require_relative "test_helper"
require "open3"

# Durable steps against a real server (docs/SEMANTICS.md, "Durable steps"):
# a step's block runs once over retries and over a worker that vanished
# after step 2; a durable sleep, a wait for an event and a child job park
# the job and it resumes as the same attempt; a timeout and a child's death
# raise their errors; a child over a quota raises QuotaExceededError in the
# handler; Parked passes a bare rescue; a step sent again after a lost
# answer; events kept, answered and sent once; a stale lease's step
# refused; the test modes; the README's example.
class TestSteps < TenqTest::Case
  def test_a_step_runs_once_and_a_retry_gets_it_back
    c = client
    ran = Hash.new(0)
    runs = []
    w = worker(client: c) do |r|
      r.register("S.four") do |task|
        runs << task.attempt
        a = task.step("a") { ran["a"] += 1; { "rows" => 3 } } # rubocop:disable Style/Semicolon
        b = task.step("b") { ran["b"] += 1; [1, 2] } # rubocop:disable Style/Semicolon
        raise Tenq::Retry.new("after b", retry_in: 0) if runs.size == 1

        cc = task.step("c") { ran["c"] += 1; "done" } # rubocop:disable Style/Semicolon
        { "a" => a, "b" => b, "c" => cc, "stored" => task.steps.map(&:name) }
      end
    end
    h = c.submit(type: "S.four")
    out = nil
    running(w) { out = h.wait(timeout: 30) }
    assert_equal({ "a" => { "rows" => 3 }, "b" => [1, 2], "c" => "done", "stored" => %w[a b c] }, out)
    assert_equal({ "a" => 1, "b" => 1, "c" => 1 }, ran)
    assert_equal [1, 2], runs
    assert_equal [["a", "step", 1, { "rows" => 3 }], ["b", "step", 1, [1, 2]], ["c", "step", 2, "done"]],
                 c.steps(h.id).map { |s| [s.name, s.kind, s.attempt, s.result] }
    assert_equal [["failed", %w[a b]], ["succeeded", %w[c]]], c.attempts(h.id).map { |a| [a.outcome, a.steps] }
  end

  def test_a_sleep_an_event_a_child_and_a_timeout_park_the_job_as_one_attempt
    c = client
    runs = []
    w = worker(client: c) do |r|
      r.register("S.parent") do |task|
        runs << task.attempt
        task.sleep_for(0.3)
        paid = task.wait_for_event("paid-#{task.id}")
        kid = task.run_child("S.kid", { "for" => task.id })
        late = begin
          task.wait_for_event("never", timeout: 0.2, name: "late")
        rescue Tenq::EventTimeoutError => e
          "#{e.key} #{e.step_name}"
        end
        { "paid" => paid, "kid" => kid, "late" => late }
      end
      r.register("S.kid") { |task| { "got" => task.args } }
    end
    h = c.submit(type: "S.parent")
    out = nil
    running(w) do
      eventually(what: "the wait for the event") { c.job(h.id).waiting_reason == "event" }
      j = c.job(h.id)
      assert_equal ["waiting", "paid-#{h.id}"], [j.state, j.waiting["event"]]
      ev = c.send_event("paid-#{h.id}", { "amount" => 5 })
      assert_equal [1, [h.id], false, "acme"], [ev.delivered, ev.jobs, ev.kept?, ev.tenant]
      out = h.wait(timeout: 30)
      assert_equal 4, w.counts[:parked]
      assert_equal 0, w.counts[:lost]
    end
    assert_equal({ "paid" => { "amount" => 5 }, "kid" => { "got" => { "for" => h.id } }, "late" => "never late" },
                 out)
    assert_equal [1, 1, 1, 1, 1], runs
    assert_equal 1, c.job(h.id).attempts
    steps = c.steps(h.id)
    assert_equal %w[sleep event child event], steps.map(&:kind)
    assert_equal "succeeded", steps[2].child_state
    assert_equal "timed out", steps[3].error
    assert_equal %w[suspended suspended suspended suspended succeeded], c.attempts(h.id).map(&:outcome)
  end

  def test_a_child_that_dies_and_one_over_a_quota_raise_in_the_handler
    admin = client
    admin.request("PUT", "/v1/tenants/steps-quota", { "max_queued" => 1 })
    q = client(tenant: "steps-quota")
    seen = []
    w = worker(client: q) do |r|
      r.register("S.quota") do |task|
        task.run_child("S.any")
      rescue Tenq::QuotaExceededError => e
        seen << "quota #{e.field}"
        raise Tenq::NoRetry, "no room for a child"
      end
    end
    h = q.submit(type: "S.quota")
    running(w) { assert_raises(Tenq::JobFailed) { h.wait(timeout: 30) } }
    assert_equal ["quota max_queued"], seen

    c = client
    w = worker(client: c) do |r|
      r.register("S.parent2") do |task|
        task.run_child("S.doomed", max_attempts: 1)
        "no error"
      rescue Tenq::ChildFailedError => e
        { "state" => e.state, "error" => e.error, "child" => e.child }
      end
      r.register("S.doomed") { raise "disk full" }
    end
    p = c.submit(type: "S.parent2")
    out = nil
    running(w) { out = p.wait(timeout: 30) }
    assert_equal "dead", out["state"]
    assert_match(/disk full/, out["error"])
    assert_equal p.id, c.job(out["child"]).awaited_by
  end

  def test_parked_passes_a_bare_rescue
    c = client
    caught = []
    w = worker(client: c) do |r|
      r.register("S.careless") do |task|
        task.wait_for_event("k-#{task.id}")
      rescue => e # rubocop:disable Style/RescueStandardError -- what a handler often does
        caught << e
        "swallowed"
      end
    end
    h = c.submit(type: "S.careless")
    out = nil
    running(w) do
      eventually(what: "the wait") { c.job(h.id).state == "waiting" }
      c.send_event("k-#{h.id}", "ok")
      out = h.wait(timeout: 30)
    end
    assert_equal "ok", out
    assert_empty caught
  end

  def test_a_step_sent_again_after_a_lost_answer_is_stored_once
    c = client
    # every step request goes twice: the first answer is lost
    c.singleton_class.prepend(Module.new do
      def store_step(id, body)
        super
        super
      end
    end)
    c.send_event("twice-key", { "early" => true })
    ran = []
    w = worker(client: c) do |r|
      r.register("S.twice") do |task|
        a = task.step("a") { ran << 1; ran.size } # rubocop:disable Style/Semicolon
        { "a" => a, "ev" => task.wait_for_event("twice-key") }
      end
    end
    h = c.submit(type: "S.twice")
    out = nil
    running(w) { out = h.wait(timeout: 30) }
    assert_equal({ "a" => 1, "ev" => { "early" => true } }, out)
    assert_equal [1], ran
    assert_equal [["a", 1], ["event#1", { "early" => true }]], c.steps(h.id).map { |s| [s.name, s.result] }
  end

  def test_events_are_kept_for_a_later_wait_and_sent_once
    c = client
    ev = c.send_event("early-key", [1])
    assert_equal [0, true, "acme", "early-key"], [ev.delivered, ev.kept?, ev.tenant, ev.key]
    assert_kind_of Integer, ev.expires_at
    w = worker(client: c) { |r| r.register("S.early") { |task| task.wait_for_event("early-key") } }
    h = c.submit(type: "S.early")
    out = nil
    running(w) { out = h.wait(timeout: 30) }
    assert_equal [1], out
    assert_equal ["succeeded"], c.attempts(h.id).map(&:outcome) # never parked
    e = assert_raises(Tenq::InvalidError) { c.send_event("") }
    assert_equal "key", e.field
  end

  def test_a_worker_killed_after_step_two_resumes_at_step_three
    c = client
    c.request("PUT", "/v1/queues/#{@queue}", { "lease_ms" => 500, "backoff" => "fixed", "backoff_base_ms" => 10 })
    h = c.submit(type: "S.four")
    leased = c.lease(queues: [@queue], max: 1)["jobs"].first
    [1, 2].each do |i|
      c.store_step(h.id, { "token" => leased["token"], "name" => "step-#{i}", "result" => { "n" => i } })
    end
    # (the worker is gone without a word: its lease runs out)
    ran = []
    w = worker(client: c) do |r|
      r.register("S.four") do |task|
        (1..4).map { |i| task.step("step-#{i}") { ran << "step-#{i}"; { "n" => i } } } # rubocop:disable Style/Semicolon
      end
    end
    out = nil
    running(w) { out = h.wait(timeout: 30) }
    assert_equal [{ "n" => 1 }, { "n" => 2 }, { "n" => 3 }, { "n" => 4 }], out
    assert_equal %w[step-3 step-4], ran
  end

  def test_a_stale_lease_step_is_refused
    c = client
    h = c.submit(type: "S.stale")
    l1 = c.lease(queues: [@queue], max: 1)["jobs"].first
    c.fail(h.id, l1["token"], error: "again", retry_in: 0)
    e = assert_raises(Tenq::ConflictError) { c.store_step(h.id, { "token" => l1["token"], "name" => "late" }) }
    assert_equal "token", e.field
    assert_empty c.steps(h.id)
  end

  def test_inline_steps_just_run
    seen = []
    Tenq.handle("T.inline") do |task|
      seen << task.step("a") { 5 }
      t0 = mono
      task.sleep_for(0.02)
      seen << (mono - t0 >= 0.015)
      [-> { task.wait_for_event("k") }, -> { task.run_child("T.x") }].each do |call|
        call.call
      rescue Tenq::InvalidError => e
        seen << e.field
      end
      seen << task.parked? << task.steps.size
      "ok"
    end
    offline = Tenq::Client.new(servers: ["http://127.0.0.1:1"], failover_budget: 0, queue: "inline")
    Tenq::Testing.inline! { assert_equal "ok", offline.submit(type: "T.inline").wait }
    assert_equal [5, true, "event", "job", false, 0], seen
    assert_kind_of Exception, Tenq::Parked.new("sleep", "s", "scheduled")
    refute_kind_of StandardError, Tenq::Parked.new("sleep", "s", "scheduled")
  end

  def test_the_readme_durable_example_runs_as_written
    text = File.read(File.expand_path("../README.md", __dir__))
    code = text[/<!-- durable\.rb -->\n```ruby\n(.*?)^```/m, 1] or flunk "no durable.rb in the README"
    shown = text[/durable\.rb.*?^It prints:\n\n```\n(.*?)^```/m, 1] or flunk "no output shown"
    fresh = own_server
    out, status = Open3.capture2e({ "TENQ_SERVER" => fresh.url }, "ruby", "-I", File.expand_path("../lib", __dir__),
                                  "-e", code)
    assert status.success?, out
    assert_equal shown, out
  end
end
