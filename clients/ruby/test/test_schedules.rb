# SPDX-License-Identifier: Apache-2.0
# frozen_string_literal: true

require_relative "test_helper"
require "open3"

# Schedules (periodic jobs) and attempt history through the library, against
# a real server: a schedule of "@every 1s" submits jobs; it is read, listed,
# paused, replaced and deleted; a bad cron expression or zone raises
# InvalidError naming the field and creates nothing; a job that failed twice
# and then succeeded lists its three attempts.
class TestSchedules < TenqTest::Case
  def test_a_schedule_of_every_second_submits_jobs_and_is_read_listed_paused_and_deleted
    c = client
    name = "s-#{@queue}"
    s = c.put_schedule(name, cron: "@every 1s", type: "S.tick", args: { "n" => 1 }, missed: "once", priority: 3,
                             max_attempts: 2, timeout_ms: 200_000, key: "lane-s")
    assert_kind_of Tenq::Schedule, s
    assert_equal [name, "@every 1s", "UTC", "once", false], [s.name, s.cron, s.timezone, s.missed, s.paused?]
    j = s.job
    assert_kind_of Tenq::ScheduleJob, j
    assert_equal ["acme", @queue, "S.tick", { "n" => 1 }, 3, 2, 200_000, "lane-s"],
                 [j.tenant, j.queue, j.type, j.args, j.priority, j.max_attempts, j.timeout_ms, j.key]
    assert_equal 5, s.next_runs.size
    assert_equal s.next_runs.first, s.next_tick
    assert_equal [1000] * 4, s.next_runs.each_cons(2).map { |a, b| b - a }

    job = eventually(what: "a job of the schedule", timeout: 10) { c.list(queue: @queue).jobs.first }
    assert_equal ["S.tick", { "n" => 1 }, 3, "lane-s"], [job.type, job.args, job.priority, job.key]
    assert_match(/\Acron:#{Regexp.escape(name)}:\d+\z/, job.idempotency_key)
    got = c.schedule(name)
    refute_nil got.last_tick
    refute_nil got.last_job

    mine = c.schedules(tenant: "acme", runs: 3).select { |x| x.name == name }
    assert_equal 1, mine.size
    assert_equal 3, mine.first.next_runs.size

    paused = c.pause_schedule(name)
    assert_predicate paused, :paused?
    assert_nil paused.next_tick
    refute_predicate c.resume_schedule(name), :paused?

    again = c.put_schedule(name, cron: "0 3 * * *", type: "S.tick", timezone: "Europe/Berlin", paused: true)
    assert_equal ["0 3 * * *", "Europe/Berlin", true, 0],
                 [again.cron, again.timezone, again.paused?, again.job.priority]
    assert_equal s.created_at, again.created_at

    assert c.delete_schedule(name)
    assert_raises(Tenq::NotFoundError) { c.schedule(name) }
    assert_raises(Tenq::NotFoundError) { c.delete_schedule(name) }
    assert(c.schedules.none? { |x| x.name == name })
  end

  def test_a_bad_cron_expression_or_zone_raises_the_field_and_creates_nothing
    c = client
    name = "bad-#{@queue}"
    err = assert_raises(Tenq::InvalidError) { c.put_schedule(name, cron: "61 * * * *", type: "S") }
    assert_equal ["cron", 400], [err.field, err.status]
    err = assert_raises(Tenq::InvalidError) do
      c.put_schedule(name, cron: "@every 1s", type: "S", timezone: "Mars/Olympus_Mons")
    end
    assert_equal "timezone", err.field
    err = assert_raises(Tenq::InvalidError) { c.put_schedule(name, cron: "@every 1s", type: "S", timeout_ms: 5) }
    assert_equal "job.timeout_ms", err.field
    assert_raises(Tenq::NotFoundError) { c.schedule(name) }
    assert(c.schedules.none? { |x| x.name == name })
    # one that exists stays as it was
    c.put_schedule(name, cron: "0 3 * * *", type: "S", paused: true)
    err = assert_raises(Tenq::InvalidError) { c.put_schedule(name, cron: "not cron", type: "Other") }
    assert_equal "cron", err.field
    kept = c.schedule(name)
    assert_equal ["0 3 * * *", "S", true], [kept.cron, kept.job.type, kept.paused?]
    c.delete_schedule(name)
    assert_empty c.list(queue: @queue).jobs
  end

  def test_a_job_failed_twice_then_succeeded_lists_its_attempts
    c = client
    calls = 0
    w = worker do |r|
      r.register("A.flaky") do
        calls += 1
        raise Tenq::Retry.new("boom #{calls}", retry_in: 0.01) if calls < 3

        "ok"
      end
    end
    h = c.submit(type: "A.flaky")
    assert_empty c.attempts(h.id)
    running(w) { assert_equal "ok", h.wait(timeout: 30) }
    att = c.attempts(h.id)
    assert(att.all?(Tenq::Attempt))
    assert_equal [1, 2, 3], att.map(&:attempt)
    assert_equal %w[failed failed succeeded], att.map(&:outcome)
    assert_match(/boom 1/, att[0].error)
    assert_match(/boom 2/, att[1].error)
    assert_nil att[2].error
    assert_equal "succeeded", att[2].job_state
    assert(att.all? { |a| a.finished_at && a.worker })
    assert_raises(Tenq::NotFoundError) { c.attempts(h.id + 1_000_000) }
  end

  def test_the_readmes_example_runs_as_written
    text = File.read(File.expand_path("../README.md", __dir__))
    code = text[/<!-- schedules\.rb -->\n```ruby\n(.*?)^```/m, 1] or flunk "no schedules.rb in the README"
    shown = text[/^It prints:\n\n```\n(.*?)^```/m, 1] or flunk "no output shown"
    fresh = own_server
    out, status = Open3.capture2e({ "TENQ_SERVER" => fresh.url }, "ruby", "-I", File.expand_path("../lib", __dir__),
                                  "-e", code)
    assert status.success?, out
    assert_equal shown, out
  end
end
