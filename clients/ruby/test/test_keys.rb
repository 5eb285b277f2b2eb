# SPDX-License-Identifier: Apache-2.0
# frozen_string_literal: true

require_relative "test_helper"

# Keyed limits, debounce and expiry through the library, against a real
# server: concurrency and rate keys sent and read back, a held job's
# reason, the keys at their limit, key settings, a debounced submit, an
# expired job's wait, and the refusals naming their field.
class TestKeys < TenqTest::Case
  def test_a_concurrency_key_holds_the_second_job
    c = client
    k = "acct:#{@queue}"
    a = c.submit(type: "K.job", args: 1, concurrency_keys: [{ key: k, limit: 1 }])
    b = c.submit(type: "K.job", args: 2, concurrency_keys: [k])
    other = c.submit(type: "K.job", args: 3, concurrency_keys: ["#{k}:2"])
    assert_equal [{ "key" => k, "limit" => 1 }], c.job(a.id).concurrency_keys
    got = c.lease(queues: [@queue], max: 10)["jobs"]
    assert_equal [a.id, other.id].sort, got.map { |j| j["id"] }.sort
    held = c.job(b.id)
    assert_equal "concurrency_key", held.waiting_reason
    assert_equal [k, a.id], held.waiting.values_at("key", "held_by")
    assert(c.keys(at_limit: true)["keys"].any? { |x| x["key"] == k && x["at_limit"] })
    one = c.keys(key: k)["keys"]
    assert_equal [[k, 1, 1, 1, [a.id], [b.id]]],
                 one.map { |x| x.values_at("key", "active", "held", "limit", "holders", "jobs") }
    first = got.find { |j| j["id"] == a.id }
    c.ack(a.id, first["token"])
    assert_equal [b.id], c.lease(queues: [@queue], max: 10)["jobs"].map { |j| j["id"] }
  end

  def test_key_settings_round_trip
    c = client
    prefix = "rbacct-#{@queue}:"
    s = c.set_key_setting("acme", "#{prefix}*", concurrency: 2, rate: 10)
    assert_equal ["#{prefix}*", 2, 10], s.values_at("key", "concurrency", "rate")
    assert(c.key_settings(tenant: "acme").any? { |r| r["key"] == "#{prefix}*" })
    3.times { |i| c.submit(type: "K.set", args: i, concurrency_keys: ["#{prefix}7"]) }
    assert_equal 2, c.lease(queues: [@queue], max: 10)["jobs"].size
    info = c.keys(key: "#{prefix}7")["keys"].first
    assert_equal [2, "#{prefix}*", true], info.values_at("limit", "setting", "at_limit")
    c.delete_key_setting("acme", "#{prefix}*")
    refute(c.key_settings.any? { |r| r["key"] == "#{prefix}*" })
    assert_raises(Tenq::NotFoundError) { c.delete_key_setting("acme", "#{prefix}*") }
    e = assert_raises(Tenq::InvalidError) { c.set_key_setting("acme", "#{prefix}*", concurrency: 0) }
    assert_equal "concurrency", e.field
  end

  def test_a_rate_key_cost
    c = client
    spec = { "key" => "api-#{@queue}", "cost" => 3, "rate" => 4, "rate_period_ms" => 60_000, "rate_burst" => 4 }
    h = c.submit(type: "K.rate", rate_keys: [spec])
    assert_equal [spec], c.job(h.id).rate_keys
    # the key's rate begins used up at the server's start: 3 units of 4 a minute are not there yet
    assert_empty c.lease(queues: [@queue], max: 1)["jobs"]
    assert_equal "rate_key", c.job(h.id).waiting_reason
    e = assert_raises(Tenq::InvalidError) { c.submit(type: "K.rate", rate_keys: [{ key: "x", cost: 5, rate: 4 }]) }
    assert_equal "rate_keys[0].cost", e.field
  end

  def test_bad_keys_and_timings_are_refused_naming_the_field
    c = client
    [
      [{ concurrency_keys: [{ key: "k", limit: 0 }] }, "concurrency_keys[0].limit"],
      [{ concurrency_keys: ["x" * 257] }, "concurrency_keys[0].key"],
      [{ concurrency_keys: %w[a b c d e] }, "concurrency_keys"],
      [{ debounce_ms: 100 }, "debounce_ms"],
      [{ expire_at: 1, start_within_ms: 5 }, "start_within_ms"],
      [{ concurrency_keys: [{ key: "k", colour: 1 }] }, "concurrency_keys[0].colour"],
      [{ rate_keys: "k" }, "rate_keys"]
    ].each do |options, field|
      e = assert_raises(Tenq::InvalidError, options.inspect) { c.submit(type: "K.bad", **options) }
      assert_equal field, e.field, options.inspect
    end
  end

  def test_priority_aging_settings
    c = client
    info = c.set_queue(@queue, aging_ms: 100, aging_cap: 5)
    assert_equal [100, 5], [info.aging_ms, info.aging_cap]
    low = c.submit(type: "K.age", priority: 0)
    sleep 1.0 # low ranks 5 (the cap) by now
    high = c.submit(type: "K.age", priority: 4)
    assert_equal [low.id, high.id], c.lease(queues: [@queue], max: 2)["jobs"].map { |j| j["id"] }
    e = assert_raises(Tenq::InvalidError) { c.set_queue(@queue, aging_cap: 40_000) }
    assert_equal "aging_cap", e.field
  end

  def test_a_debounced_submit_replaces_the_pending_job
    c = client
    first = c.submit(type: "K.deb", args: { "v" => 1 }, key: "doc", debounce_ms: 60_000, debounce_max_ms: 120_000)
    assert first.created?
    refute first.debounced?
    second = c.submit(type: "K.deb", args: { "v" => 2 }, key: "doc", debounce_ms: 60_000)
    assert second.debounced?
    refute second.created?
    assert_equal first.id, second.id
    job = c.job(first.id)
    assert_equal [{ "v" => 2 }, "scheduled", true], [job.args, job.state, job.debounced?]
    assert_operator job.run_at, :>, (Time.now.to_f * 1000) + 50_000
    assert_operator job.debounce_until, :>=, job.run_at
  end

  def test_an_expired_job_raises_job_expired
    c = client
    h = c.submit(type: "K.exp", run_at: Time.now + 60, start_within_ms: 200)
    e = assert_raises(Tenq::JobExpired) { h.wait(timeout: 20) }
    assert_equal "expired", e.job.state
    assert_equal "job_expired", e.code
    assert_equal 1, c.queue(@queue).expired_total
    later = Time.now + 600
    (made,) = c.submit_many([{ type: "K.exp", expire_at: later }])
    assert_equal (later.to_r * 1000).round, c.job(made.id).expire_at
  end
end
