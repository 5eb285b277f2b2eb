# SPDX-License-Identifier: Apache-2.0
# frozen_string_literal: true

require_relative "test_helper"

class TestClient < TenqTest::Case
  def test_submit_get_and_every_field
    c = client
    run_at = Time.now + 3600
    h = c.submit(type: "Report.build", args: { "report_id" => 42, "tags" => ["a"] }, key: "report:42", priority: 7,
                 run_at: run_at, max_attempts: 3, unique_key: "u-1", idempotency_key: "idem-1")
    assert h.created?
    assert_kind_of Integer, h.id
    j = c.job(h.id)
    assert_equal ["acme", @queue, "Report.build", "report:42", 7, 3, "u-1", "idem-1"],
                 [j.tenant, j.queue, j.type, j.key, j.priority, j.max_attempts, j.unique_key, j.idempotency_key]
    assert_equal({ "report_id" => 42, "tags" => ["a"] }, j.args)
    assert_equal (run_at.to_r * 1000).round, j.run_at
    assert_equal "scheduled", j.state
    # unique_key: a second submit answers the same job, marked duplicate
    d = c.submit(type: "Report.build", unique_key: "u-1")
    assert d.duplicate?
    assert_equal h.id, d.id
  end

  def test_submit_many_splits_past_ten_thousand_and_reports_each_refusal
    c = client
    jobs = Array.new(10_003) { |i| { type: "Bulk.run", args: [i] } }
    handles = c.submit_many(jobs)
    assert_equal 10_003, handles.size
    assert handles.all?(&:created?)
    assert_equal handles.map(&:id).sort, handles.map(&:id), "ids grow in submission order"
    assert_equal [10_002], c.job(handles.last.id).args
    # a job the server refuses fails alone, at its index
    out = c.submit_many([{ type: "Ok.one" }, { type: "Bad.one", priority: 99_999 }, { type: "Ok.two" }])
    assert_equal [true, false, true], out.map(&:ok?)
    assert_kind_of Tenq::InvalidError, out[1].error
    assert_equal "priority", out[1].error.field
    assert_raises(Tenq::InvalidError) { out[1].wait(timeout: 1) }
  end

  def test_wait_gives_the_finished_job_and_loops_past_short_waits
    c = client
    h = c.submit(type: "Wait.me")
    t0 = mono
    info = c.wait(h.id, timeout: 0.5)
    assert_equal "ready", info.state
    assert_operator mono - t0, :>=, 0.45
    e = assert_raises(Tenq::WaitTimeout) { h.wait(timeout: 0.2) }
    assert_equal "ready", e.job.state
    Thread.new do
      sleep 0.3
      lease = c.lease(queues: [@queue], max: 1, wait: 5)
      job = lease["jobs"].first
      c.ack(job["id"], job["token"], result: { "ok" => true })
    end
    assert_equal({ "ok" => true }, h.wait(timeout: 20))
    assert c.job(h.id).succeeded?
  end

  def test_cancel_and_the_conflict_after_it
    c = client
    h = c.submit(type: "Cancel.me")
    info = h.cancel
    assert_equal "cancelled", info.state
    e = assert_raises(Tenq::ConflictError) { c.cancel(h.id) }
    assert_equal 409, e.status
    assert_equal "conflict", e.code
    err = assert_raises(Tenq::JobFailed) { h.wait(timeout: 5) }
    assert_equal "cancelled", err.job.state
  end

  def test_cancel_of_a_leased_job_marks_it
    c = client
    h = c.submit(type: "Cancel.leased")
    job = c.lease(queues: [@queue], max: 1)["jobs"].first
    info = c.cancel(h.id)
    assert info.cancel_requested?
    assert_equal true, c.heartbeat(job["id"], job["token"])["cancel"]
  end

  def test_list_pages_through_every_job
    c = client
    ids = c.submit_many(Array.new(7) { |i| { type: "List.#{i.even? ? 'even' : 'odd'}" } }).map(&:id)
    page = c.list(queue: @queue, limit: 3)
    assert_equal ids.reverse.first(3), page.jobs.map(&:id)
    refute_nil page.next
    assert_equal ids.reverse, c.each_job(queue: @queue, limit: 3).map(&:id)
    assert_equal 4, c.list(queue: @queue, type: "List.even").jobs.size
  end

  def test_typed_errors_carry_status_code_field_and_message
    c = client
    e = assert_raises(Tenq::NotFoundError) { c.job(987_654_321) }
    assert_equal [404, "not_found"], [e.status, e.code]
    e = assert_raises(Tenq::InvalidError) { c.submit(type: "has space") }
    assert_equal [400, "invalid", "type"], [e.status, e.code, e.field]
    assert_match(/type/, e.message)
    e = assert_raises(Tenq::InvalidError) { c.submit(type: "T.x", priority: 1_000_000) }
    assert_equal "priority", e.field
  end

  def test_bad_input_is_refused_before_anything_is_sent
    c = client
    e = assert_raises(Tenq::InvalidError) { c.submit(type: "T.x", args: { "at" => Time.now }) }
    assert_equal "args", e.field
    assert_nil e.status
    assert_raises(Tenq::InvalidError) { c.submit(type: "T.x", args: [Float::NAN]) }
    assert_raises(Tenq::InvalidError) { c.submit(type: "T.x", args: { 1 => 2 }) }
    e = assert_raises(Tenq::InvalidError) { c.submit_many([{ type: "T.ok" }, { type: "T.x", args: Object.new }]) }
    assert_match(/jobs\[1\]\.args/, e.message)
    assert_raises(Tenq::InvalidError) { c.submit(type: "T.x", no_such_field: 1) }
    assert_raises(Tenq::InvalidError) { c.submit(type: "T.x", traceparent: "00-abc") }
    assert_empty c.list(queue: @queue).jobs, "nothing was made"
  end

  def test_a_wrong_token_is_unauthenticated
    s = own_server(env: { "TENQ_ADMIN_TOKEN" => "right-secret-0123456789" })
    e = assert_raises(Tenq::UnauthenticatedError) do
      client(servers: [s.url], token: "wrong").submit(type: "T.x")
    end
    assert_equal [401, "unauthenticated"], [e.status, e.code]
    good = client(servers: [s.url], token: "right-secret-0123456789")
    assert good.submit(type: "T.x").created?
  end

  def test_token_and_servers_from_the_environment
    s = own_server(env: { "TENQ_ADMIN_TOKEN" => "env-secret-0123456789" })
    old = ENV.to_h.slice("TENQ_SERVER", "TENQ_TOKEN")
    ENV["TENQ_SERVER"] = "http://127.0.0.1:1, #{s.url}"
    ENV["TENQ_TOKEN"] = "env-secret-0123456789"
    c = Tenq::Client.new(tenant: "acme", queue: @queue)
    @clients << c
    assert_equal ["http://127.0.0.1:1", s.url], c.servers
    assert c.submit(type: "T.env").created?
    assert_equal s.url, c.servers.first, "the server that answered goes first"
  ensure
    %w[TENQ_SERVER TENQ_TOKEN].each { |k| old.key?(k) ? ENV[k] = old[k] : ENV.delete(k) }
  end

  def test_a_server_that_is_down_raises_the_connect_error_after_the_budget
    s = own_server
    url = s.url
    s.kill
    c = client(servers: [url], failover_budget: 1.0)
    t0 = mono
    e = assert_raises(Tenq::ConnectionError) { c.submit(type: "T.down") }
    assert_operator mono - t0, :>=, 0.9
    assert_operator mono - t0, :<, 8
    assert_kind_of Tenq::UnavailableError, e
    assert_match(/connection refused/, e.message)
    s.start # on the same port, the same store: nothing was made
    assert_empty client(servers: [url]).list.jobs
  end

  def test_a_submit_retried_after_no_answer_makes_one_job
    s = own_server
    c = client(servers: [s.url], request_timeout: 0.5, failover_budget: 30)
    s.pause # the server takes the request but answers nothing
    submit = Thread.new { c.submit(type: "Idem.once", args: [1]) }
    eventually(what: "a retry") { c.transport.resent >= 1 }
    s.kill # the server dies with the request; it comes back on the same store
    s.start
    h = submit.value
    jobs = client(servers: [s.url]).list(queue: @queue).jobs
    assert_equal [h.id], jobs.map(&:id), "one job, whatever the attempts did"
  end

  def test_a_submit_answered_late_and_retried_is_replayed
    s = own_server
    c = client(servers: [s.url], request_timeout: 0.5, failover_budget: 30)
    s.pause
    submit = Thread.new { c.submit(type: "Idem.late") }
    eventually(what: "a retry") { c.transport.resent >= 1 }
    s.resume # the first attempt (its connection gone) and the retries all land
    h = submit.value
    assert_operator c.transport.resent, :>=, 1
    jobs = client(servers: [s.url]).list(queue: @queue).jobs
    assert_equal [h.id], jobs.map(&:id)
  end

  def test_the_morgue_and_requeue
    c = client
    h = c.submit(type: "Dead.soon", max_attempts: 1)
    job = c.lease(queues: [@queue], max: 1)["jobs"].first
    assert_equal "dead", c.fail(job["id"], job["token"], error: "boom")["state"]
    page = c.morgue(queue: @queue)
    assert_equal [h.id], page.jobs.map(&:id)
    assert_equal "boom", page.jobs.first.error
    assert_equal "ready", c.requeue(h.id)["state"]
  end

  def test_an_ack_or_fail_sent_again_is_answered_as_done
    c = client
    a, b = c.submit_many([{ type: "Twice.ack" }, { type: "Twice.fail", max_attempts: 1 }]).map(&:id)
    jobs = c.lease(queues: [@queue], max: 2)["jobs"].to_h { |j| [j["id"], j["token"]] }
    2.times { assert_equal "succeeded", c.ack(a, jobs[a], result: 1)["state"] }
    2.times { assert_equal "dead", c.fail(b, jobs[b], error: "boom")["state"] }
    again = c.outcomes([{ "id" => a, "token" => jobs[a], "ok" => true, "result" => 1 }])
    assert_nil again[0]["error"]
    assert_raises(Tenq::ConflictError) { c.fail(a, jobs[a], error: "not what it had") }
  end

  def test_health
    c = client
    h = c.health
    assert_equal "ok", h["status"]
    assert_equal "leader", h["role"]
  end
end
