# SPDX-License-Identifier: Apache-2.0
# frozen_string_literal: true

require_relative "test_helper"

# Quotas and backpressure against real servers (docs/SEMANTICS.md, "Quotas
# and backpressure"): a submit over a tenant's or a queue's max_queued /
# max_queued_bytes raises QuotaExceededError naming the limit and makes
# nothing; a server at its memory budget raises OverloadedError; submits
# wait for room, sending the same request (the same Idempotency-Key) after
# the Retry-After, and make each job once; past the client's
# backpressure_budget they raise. (Tx's TQ429: test_tx.rb.)
class TestQuotas < TenqTest::Case
  def tenant
    "t-#{@queue}"
  end

  # After +after+ seconds, leases and acks +count+ jobs of +queue+; their ids.
  def drain(client, queue, count, after: 0)
    sleep after
    done = []
    while done.size < count
      jobs = client.lease(queues: [queue], max: [1000, count - done.size].min, wait: 1)["jobs"]
      client.outcomes(jobs.map { |j| { "id" => j["id"], "token" => j["token"], "ok" => true } }) unless jobs.empty?
      done.concat(jobs.map { |j| j["id"] })
    end
    done
  end

  # Runs drain in a thread.
  def draining(*args, **opts)
    t = Thread.new { drain(*args, **opts) }
    @threads << t
    t
  end

  def keys(proxy)
    proxy.exchanges.map { |e| e.headers["idempotency-key"] }.compact
  end

  def args_of(client, queue)
    client.list(queue: queue, limit: 1000).jobs.map(&:args)
  end

  def test_a_submit_over_a_quota_raises_naming_the_limit_and_makes_nothing
    c = client(tenant: tenant, backpressure_budget: 0)
    assert_equal 2, c.set_tenant(tenant, max_queued: 2).max_queued
    t0 = mono
    err = assert_raises(Tenq::QuotaExceededError) do
      c.submit_many(Array.new(3) { |i| { type: "Q.t", args: { "i" => i } } })
    end
    assert_operator mono - t0, :<, 1.0, "a budget of 0: no wait"
    assert_kind_of Tenq::RateLimitedError, err
    assert_equal [429, "quota_exceeded", "max_queued", 1.0], [err.status, err.code, err.field, err.retry_after]
    assert_includes err.message, "tenant #{tenant}"
    info = c.tenant(tenant)
    assert_equal [0, 0], [info.queued, info.submitted_total], "nothing of the batch"
    assert_raises(Tenq::QuotaExceededError) { c.create_batch(Array.new(3) { |i| { type: "Q.t", args: [i] } }) }
    assert_equal 0, c.tenant(tenant).submitted_total
    assert_equal 2, c.submit_many(Array.new(2) { |i| { type: "Q.t", args: { "i" => i } } }).count(&:created?)
    err = assert_raises(Tenq::QuotaExceededError) { c.submit(type: "Q.t", args: { "i" => 2 }) }
    assert_equal "max_queued", err.field
    info = c.tenant(tenant)
    assert_equal [2, 2], [info.queued, info.submitted_total]

    # a queue's bytes of args
    other = "#{@queue}-bytes"
    q = c.set_queue(other, max_queued_bytes: 100)
    assert_equal [100, 0], [q.max_queued_bytes, q.queued_bytes]
    err = assert_raises(Tenq::QuotaExceededError) do
      c.submit(type: "Q.t", queue: other, tenant: "t-other", args: { "pad" => "x" * 200 })
    end
    assert_equal "max_queued_bytes", err.field
    assert_includes err.message, "queue #{other}"
    assert_equal 0, c.queue(other).queued
    assert c.submit(type: "Q.t", queue: other, tenant: "t-other", args: { "pad" => "y" }).created?
    q = c.queue(other)
    assert_equal [1, '{"pad":"y"}'.bytesize], [q.queued, q.queued_bytes]
    # nil clears a quota
    assert_nil c.set_tenant(tenant, max_queued: nil).max_queued
    assert c.submit(type: "Q.t", args: { "i" => 2 }).created?
  end

  def test_a_bulk_submit_waits_for_room_and_makes_each_job_once
    admin = client(tenant: tenant)
    admin.set_tenant(tenant, max_queued: 3)
    admin.submit_many(Array.new(3) { |i| { type: "Q.w", args: { "first" => i } } })
    px = proxy(server)
    c = client(servers: [px.url], tenant: tenant) # the default budget: 60 s
    assert_in_delta 60.0, c.backpressure_budget
    acker = draining(admin, @queue, 3, after: 1.0)
    t0 = mono
    handles = c.submit_many(Array.new(3) { |i| { type: "Q.w", args: { "i" => i } } })
    took = mono - t0
    assert_equal 3, acker.value.size
    assert_equal [true] * 3, handles.map { |h| h.created? && !h.replayed? }
    assert_operator took, :>=, 0.9, "it waited for the room made after 1 s"
    sent = keys(px)
    assert_operator sent.size, :>=, 2, "refused at least once, then sent again"
    assert_equal 1, sent.uniq.size, "the same request, the same key"
    assert_equal [-1, -1, -1, 0, 1, 2], args_of(admin, @queue).map { |a| a.fetch("i", -1) }.sort, "each once"
    info = admin.tenant(tenant)
    assert_equal [3, 6], [info.queued, info.submitted_total]
  end

  def test_a_batch_jobs_added_to_it_and_a_single_submit_wait_too
    admin = client(tenant: tenant)
    admin.set_queue(@queue, max_queued: 2)
    admin.submit(type: "Q.b", args: { "first" => 0 })
    px = proxy(server)
    c = client(servers: [px.url], tenant: tenant, backpressure_budget: 30)
    acker = draining(admin, @queue, 1, after: 1.0)
    batch = c.create_batch(Array.new(2) { |i| { type: "Q.b", args: { "i" => i } } })
    acker.join
    assert_equal [true, true], batch.jobs.map(&:created?)
    # the batch's jobs hold the room: jobs added to it wait (one of them
    # done, the batch stays open)
    acker = draining(admin, @queue, 1, after: 1.0)
    added = c.add_to_batch(batch.id, [{ type: "Q.b", args: { "i" => 2 } }])
    acker.join
    assert added.first.created?
    acker = draining(admin, @queue, 1, after: 1.0)
    assert c.submit(type: "Q.b", args: { "i" => 3 }).created?
    acker.join
    sent = keys(px)
    assert_operator sent.size, :>=, 6, "three calls, each refused then let in"
    assert_equal 3, sent.uniq.size, "each under a key of its own"
    assert_equal sent.sort, sent
    assert_equal [-1, 0, 1, 2, 3], args_of(admin, @queue).map { |a| a.fetch("i", -1) }.sort
  end

  def test_past_the_budget_the_refusal_is_raised_and_nothing_made
    admin = client(tenant: tenant)
    admin.set_tenant(tenant, max_queued_bytes: 20)
    admin.submit(type: "Q.p", args: { "pad" => "z" })
    px = proxy(server)
    c = client(servers: [px.url], tenant: tenant, backpressure_budget: 2.5)
    t0 = mono
    err = assert_raises(Tenq::QuotaExceededError) do
      c.submit_many(Array.new(2) { { type: "Q.p", args: { "pad" => "zz" } } })
    end
    took = mono - t0
    assert_equal ["max_queued_bytes", 1.0], [err.field, err.retry_after]
    # tried at once, after 1 s, after 2 s and at 2.5 s: then raised
    assert_operator took, :>=, 2.4
    assert_operator took, :<, 15
    sent = keys(px)
    assert_operator sent.size, :>=, 3
    assert_equal 1, sent.uniq.size
    info = admin.tenant(tenant)
    assert_equal [1, 1], [info.queued, info.submitted_total]
  end

  def test_a_bad_budget_is_refused
    [-1, "60", nil].each do |bad|
      err = assert_raises(Tenq::InvalidError) { Tenq::Client.new(servers: [server.url], backpressure_budget: bad) }
      assert_equal "backpressure_budget", err.field
    end
    err = assert_raises(Tenq::InvalidError) { Tenq::Settings.new({ backpressure_budget: "60" }) }
    assert_equal "backpressure_budget", err.field
    assert_equal({ backpressure_budget: 5 }, Tenq::Settings.new({ backpressure_budget: 5 }).client_options)
  end

  def test_a_server_at_its_memory_budget_is_waited_out
    s = own_server(args: ["--memory-budget", "4MiB"])
    fill = client(servers: [s.url], tenant: "flood", backpressure_budget: 0)
    made = 0
    err = assert_raises(Tenq::OverloadedError) do
      while made < 200_000
        fill.submit_many(Array.new(1000) { |i| { type: "O.f", args: { "n" => made + i } } })
        made += 1000
      end
    end
    assert_kind_of Tenq::RateLimitedError, err
    assert_equal [429, "overloaded", 1.0], [err.status, err.code, err.retry_after]
    assert_includes err.message, "memory budget"
    assert_operator made, :>=, 1000
    assert_operator made, :<, 200_000
    assert_equal made, fill.tenant("flood").queued, "nothing of the refused batch"

    c = client(servers: [s.url], tenant: "flood")
    t0 = mono
    sender = Thread.new { [c.submit_many(Array.new(1000) { |i| { type: "O.w", args: { "w" => i } } }), mono - t0] }
    @threads << sender
    sleep 1.0
    assert sender.alive?, "still refused: waiting"
    drain(fill, @queue, made)
    handles, took = sender.value
    assert_equal 1000, handles.count(&:created?)
    assert_operator took, :>=, 1.0
    info = fill.tenant("flood")
    assert_equal [1000, made + 1000], [info.queued, info.submitted_total]
  end
end
