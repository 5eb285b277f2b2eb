# SPDX-License-Identifier: Apache-2.0
# frozen_string_literal: true

require_relative "test_helper"
require "minitest/mock"

# Tenq::Tx without a database: what it sends through any connection with
# exec_params, and how it reads the answers.
class TestTxStatements < Minitest::Test
  # A connection that records the statements and answers rows as given.
  class FakeConnection
    attr_reader :calls

    def initialize(*answers)
      @answers = answers
      @calls = []
    end

    def exec_params(sql, params)
      @calls << [sql, params]
      @answers.shift
    end
  end

  def test_submit_sends_every_field_as_text_with_the_functions_defaults
    conn = FakeConnection.new([["11"]])
    id = Tenq::Tx.submit(conn, tenant: "acme", queue: "mail", type: "Mail.send", args: { "to" => "a@x" },
                               run_at: Time.utc(2030, 1, 1), score: 2.5, unique: true)
    assert_equal 11, id
    sql, params = conn.calls.first
    assert_match(/\ASELECT tenq\.submit\(\$1::text, /, sql)
    assert_equal ["acme", "mail", "Mail.send", '{"to":"a@x"}', nil, nil, "t", nil, "2030-01-01T00:00:00.000Z", "0",
                  nil, "2.5", nil, nil], params
    conn = FakeConnection.new([["13"]])
    Tenq::Tx.submit(conn, tenant: "a", queue: "q", type: "T", timeout_ms: 120_000)
    assert_equal "120000", conn.calls.first[1].last, "a job's own timeout_ms goes as $14"
  end

  def test_submit_many_sends_one_json_array_and_reads_the_ids_in_any_shape
    conn = FakeConnection.new([["{11,13}"]], [{ "submit_many" => [15, 17] }])
    jobs = [{ tenant: "acme", queue: "q", type: "A" }, { "tenant" => "acme", "queue" => "q", "type" => "B",
                                                         "run_at" => 1_893_456_000_000 }]
    assert_equal [11, 13], Tenq::Tx.submit_many(conn, jobs)
    assert_equal [15, 17], Tenq::Tx.submit_many(conn, jobs)
    sent = JSON.parse(conn.calls.first[1].first)
    assert_equal [{ "tenant" => "acme", "queue" => "q", "type" => "A" },
                  { "tenant" => "acme", "queue" => "q", "type" => "B", "run_at" => "2030-01-01T00:00:00.000Z" }], sent
    assert_equal [], Tenq::Tx.submit_many(conn, [])
    assert_equal 2, conn.calls.size, "an empty list sends nothing"
  end

  def test_bad_fields_raise_before_anything_is_sent
    conn = FakeConnection.new
    err = assert_raises(Tenq::InvalidError) { Tenq::Tx.submit(conn, queue: "q", type: "T") }
    assert_equal "tenant", err.field
    assert_raises(Tenq::InvalidError) { Tenq::Tx.submit(conn, tenant: "a", queue: "q", type: "T", args: [Time.now]) }
    err = assert_raises(Tenq::InvalidError) do
      Tenq::Tx.submit_many(conn, [{ tenant: "a", queue: "q", type: "T" }, { tenant: "a", type: "T" }])
    end
    assert_match(/jobs\[1\]\.queue is required/, err.message)
    assert_raises(ArgumentError) { Tenq::Tx.complete(conn, 5) }
    assert_raises(Tenq::InvalidError) { Tenq::Tx.fail(conn, 5, token: 9, error: "x", retry_in: -1) }
    assert_empty conn.calls
  end

  def test_complete_and_fail_take_a_task_a_lease_hash_or_an_id_and_token
    conn = FakeConnection.new
    task = Tenq::Task.new({ "id" => 7, "token" => 70 })
    Tenq::Tx.complete(conn, task, result: { "rows" => 3 })
    Tenq::Tx.complete(conn, { "id" => 8, "token" => 80 })
    Tenq::Tx.fail(conn, 9, token: 90, error: ArgumentError.new("no stock"), retry_in: 1.5)
    assert_equal [["7", "70", '{"rows":3}'], ["8", "80", nil], ["9", "90", "ArgumentError: no stock", "1500"]],
                 conn.calls.map(&:last)
    assert_equal [true, { "rows" => 3 }], [task.settled.ok, task.settled.result], "the worker acks the same"
  end

  def test_the_test_modes_keep_the_jobs_here_and_send_nothing
    conn = FakeConnection.new
    Tenq::Testing.fake! do
      Tenq::Testing.clear
      first = Tenq::Tx.submit(conn, tenant: "acme", queue: "q", type: "Ship.it", args: [7])
      more = Tenq::Tx.submit_many(conn, [{ tenant: "acme", queue: "q", type: "Ship.it", args: [8] }])
      assert_equal [first, *more], Tenq::Testing.jobs(type: "Ship.it").map { |j| j["id"] }
      registry = Tenq::Registry.new.register("Ship.it") do |task|
        Tenq::Tx.complete(conn, task, result: "shipped #{task.args[0]}")
        "the handler's own return value"
      end
      assert_equal 2, Tenq::Testing.drain(registry: registry, middleware: nil)
      assert_equal ["shipped 7", "shipped 8"], Tenq::Testing.jobs(type: "Ship.it").map { |j| j["result"] }
    end
    assert_empty conn.calls
  end
end

# Jobs submitted, completed and failed in an application's own PostgreSQL
# transaction (tenq.submit, tenq.submit_many, tenq.complete, tenq.fail),
# against a real server on a fresh database of the PostgreSQL that
# tests/with-pg.sh starts, through ruby-pg.
class TestTx < TenqTest::Case # rubocop:disable Metrics/ClassLength -- one server and its helpers for every case
  TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"

  def setup
    super
    need_postgres(pg_gem: true)
    @conns = []
    db.exec("CREATE TABLE IF NOT EXISTS biz (id serial PRIMARY KEY, queue text, note text, job bigint)")
  end

  def teardown
    @conns&.each(&:close)
    super
  end

  # One server on a fresh database for the class, leading.
  def server
    TenqTest::SHARED[self.class] ||= begin
      s = TenqTest::Server.new(store: TenqTest::Postgres.new_database)
      eventually(what: "a leader") { s.get("/healthz")[1]["role"] == "leader" }
      s
    end
  end

  # A connection of the application to the server's database.
  def connect
    conn = PG.connect(server.store)
    conn.set_notice_processor { |_| nil }
    @conns << conn
    conn
  end

  def db
    @db ||= connect
  end

  def rows(sql = "SELECT count(*) FROM biz WHERE queue = $1", params = [@queue])
    db.exec_params(sql, params).getvalue(0, 0).to_i
  end

  def exactly_once(**settings)
    client.request(:put, "/v1/queues/#{@queue}", { "delivery" => "exactly-once" }.merge(settings))
  end

  def lease(wait: 0, max: 10)
    client.lease(queues: [@queue], max: max, wait: wait)["jobs"]
  end

  # The job once the leader has taken it in.
  def taken_in(id)
    eventually(what: "job #{id} taken in") do
      client.job(id)
    rescue Tenq::NotFoundError
      nil
    end
  end

  def leased
    client.submit(type: "Order.ship")
    eventually(what: "a lease") { lease(wait: 1).first }
  end

  # --- submit ----------------------------------------------------------------

  def test_a_committed_submit_is_leased_with_its_fields
    conn = connect
    id = nil
    conn.transaction do
      conn.exec_params("INSERT INTO biz (queue, note) VALUES ($1, 'order 7')", [@queue])
      id = Tenq::Tx.submit(conn, tenant: "acme", queue: @queue, type: "Mail.send", args: { "order" => 7 },
                                 key: "order-7", priority: 3, traceparent: TRACEPARENT)
    end
    assert_equal 1, id % 2, "the ids of transactions are odd"
    job = eventually(what: "the job leased") { lease(wait: 1).first }
    assert_equal [id, "Mail.send", { "order" => 7 }, "order-7", 3, TRACEPARENT],
                 job.values_at("id", "type", "args", "key", "priority", "traceparent")
    assert_equal 1, rows
  end

  def test_send_event_wakes_the_waiting_job_if_and_only_if_it_commits
    c = client
    w = worker(client: c) { |r| r.register("Order.wait") { |task| task.wait_for_event("paid-#{task.id}") } }
    h = c.submit(type: "Order.wait")
    out = nil
    running(w) do
      eventually(what: "the wait") { c.job(h.id).waiting_reason == "event" }
      conn = connect
      assert_raises(RuntimeError) do
        conn.transaction do
          Tenq::Tx.send_event(conn, tenant: "acme", key: "paid-#{h.id}", payload: { "rolled" => "back" })
          raise "the application changed its mind"
        end
      end
      n = nil
      conn.transaction do
        n = Tenq::Tx.send_event(conn, tenant: "acme", key: "paid-#{h.id}", payload: { "amount" => 5 })
      end
      assert_kind_of Integer, n
      out = h.wait(timeout: 30)
    end
    assert_equal({ "amount" => 5 }, out)
    e = assert_raises(Tenq::InvalidError) do
      Tenq::Tx.send_event(connect, tenant: "acme", key: "k", payload: { "big" => "x" * 1_100_000 })
    end
    assert_equal "payload", e.field
    assert_raises(Tenq::InvalidError) { Tenq::Tx.send_event(connect, tenant: "", key: "k") }
  end

  def test_a_rolled_back_submit_never_appears
    conn = connect
    id = nil
    assert_raises(RuntimeError) do
      conn.transaction do
        conn.exec_params("INSERT INTO biz (queue, note) VALUES ($1, 'gone')", [@queue])
        id = Tenq::Tx.submit(conn, tenant: "acme", queue: @queue, type: "Mail.send")
        raise "the application changed its mind"
      end
    end
    assert_kind_of Integer, id
    sleep 0.5 # the leader would have taken a committed row in by now
    assert_empty lease
    assert_raises(Tenq::NotFoundError) { client.job(id) }
    assert_equal 0, rows
    assert_equal 0, rows("SELECT count(*) FROM tenq.inbox", [])
  end

  # The leader takes a committed job in a few milliseconds after the commit:
  # a wait that starts at once must wait for it, not answer "not found".
  def test_wait_right_after_the_commit_waits_for_the_job
    c = client
    conn = connect
    w = worker(client: c) { |r| r.register("Tx.now") { |t| t.args["n"] * 2 } }
    running(w) do
      20.times do |n|
        id = conn.transaction do
          Tenq::Tx.submit(conn, tenant: "acme", queue: @queue, type: "Tx.now", args: { "n" => n })
        end
        info = c.wait(id, timeout: 30)
        assert_equal ["succeeded", n * 2], [info.state, info.result], "job #{n}"
      end
    end
  end

  def test_wait_for_a_rolled_back_submit_is_not_found_after_the_take_in_window
    conn = connect
    id = nil
    conn.exec("BEGIN")
    id = Tenq::Tx.submit(conn, tenant: "acme", queue: @queue, type: "Mail.send")
    conn.exec("ROLLBACK")
    t0 = mono
    assert_raises(Tenq::NotFoundError) { client.wait(id, timeout: 30) }
    waited = mono - t0
    assert_operator waited, :>=, Tenq::Client::TX_TAKE_IN, "it looked again for the take-in window"
    assert_operator waited, :<, 20, "and not for the whole timeout"
    even = client.submit(type: "Mail.send").id + 1_000_000
    t0 = mono
    assert_raises(Tenq::NotFoundError) { client.wait(even, timeout: 30) }
    assert_operator mono - t0, :<, Tenq::Client::TX_TAKE_IN, "an id the server makes is not asked again"
  end

  def test_submit_many_gives_the_ids_in_order_and_every_field_arrives
    conn = connect
    base = { tenant: "acme", queue: @queue }
    ids = conn.transaction do
      Tenq::Tx.submit_many(conn, [
                             base.merge(type: "A", args: { "n" => 1 }, priority: 5),
                             base.merge(type: "B", key: "lane-1", traceparent: TRACEPARENT, max_attempts: 3),
                             base.merge(type: "C", run_at: Time.utc(2030, 1, 1)),
                             { "tenant" => "acme", "queue" => @queue, "type" => "D", "unique_key" => "u-1" }
                           ])
    end
    assert_equal 4, ids.size
    assert_equal ids.sort, ids
    assert(ids.all?(&:odd?))
    a, b, c, d = ids.map { |id| taken_in(id) }
    assert_equal ["A", { "n" => 1 }, 5], [a.type, a.args, a.priority]
    assert_equal ["B", "lane-1", 3, TRACEPARENT], [b.type, b.key, b.max_attempts, b["traceparent"]]
    assert_equal ["scheduled", 1_893_456_000_000], [c.state, c.run_at]
    assert_equal %w[D u-1], [d.type, d["unique_key"]]
    assert_equal %w[A B D], lease(wait: 1).map { |j| j["type"] }
  end

  def test_what_the_database_refuses_is_an_invalid_error_and_rolls_the_transaction_back
    conn = connect
    err = assert_raises(Tenq::InvalidError) do
      conn.transaction do
        conn.exec_params("INSERT INTO biz (queue, note) VALUES ($1, 'x')", [@queue])
        Tenq::Tx.submit(conn, tenant: "bad tenant", queue: @queue, type: "T")
      end
    end
    assert_match(/\Atenq\.submit: tenant/, err.message)
    assert_kind_of PG::Error, err.cause
    err = assert_raises(Tenq::InvalidError) do
      Tenq::Tx.submit_many(conn, [{ tenant: "acme", queue: @queue, type: "T" },
                                  { tenant: "acme", queue: @queue, type: "T", max_attempts: 0 }])
    end
    assert_match(/\Atenq\.submit_many: job 1: max_attempts/, err.message)
    assert_equal "max_attempts", err.field
    # a job's own timeout below a third of its queue's lease (300000 ms), as the server refuses it
    err = assert_raises(Tenq::InvalidError) do
      Tenq::Tx.submit(conn, tenant: "acme", queue: @queue, type: "T", timeout_ms: 60_000)
    end
    assert_match(/\Atenq\.submit: timeout_ms must be from a third of the queue's lease/, err.message)
    assert_equal "timeout_ms", err.field
    err = assert_raises(Tenq::InvalidError) do
      Tenq::Tx.submit_many(conn, [{ tenant: "acme", queue: @queue, type: "T", timeout_ms: 5 }])
    end
    assert_equal "timeout_ms", err.field
    assert_equal 0, rows
    assert_empty lease(wait: 0.3)
  end

  def test_keys_debounce_and_expiry_go_through_the_transaction
    conn = connect
    k = "acct-#{@queue}"
    later = Time.at(Time.now.to_i + 3600)
    a = b = c = nil
    conn.transaction do
      a = Tenq::Tx.submit(conn, tenant: "acme", queue: @queue, type: "K", concurrency_keys: [{ key: k, limit: 1 }],
                                rate_keys: ["r-#{@queue}"], expire_at: later)
      b, c = Tenq::Tx.submit_many(conn, [
                                    { tenant: "acme", queue: @queue, type: "K", concurrency_keys: [k],
                                      start_within_ms: 3_600_000 },
                                    { tenant: "acme", queue: @queue, type: "D", key: "doc", debounce_ms: 60_000 }
                                  ])
    end
    job = taken_in(a)
    assert_equal [[{ "key" => k, "limit" => 1 }], [{ "key" => "r-#{@queue}", "cost" => 1 }], later.to_i * 1000],
                 [job.concurrency_keys, job.rate_keys, job.expire_at]
    refute_nil taken_in(b).expire_at
    assert_equal ["scheduled", true], [taken_in(c).state, taken_in(c).debounced?]
    assert_equal [a], lease.map { |j| j["id"] }, "b waits for the key, c for its quiet period"
    assert_equal "concurrency_key", client.job(b).waiting_reason
    err = assert_raises(Tenq::InvalidError) do
      Tenq::Tx.submit(conn, tenant: "acme", queue: @queue, type: "K", concurrency_keys: [{ key: k, limit: 0 }])
    end
    assert_match(/\Atenq\.submit: concurrency_keys\[0\]\.limit must be/, err.message)
    assert_equal "concurrency_keys", err.field
  end

  # SQLSTATE TQ429 (the inbox's quota trigger) is the client's own
  # QuotaExceededError, naming the limit, the database's error its cause;
  # the transaction is aborted and nothing of it stays.
  def test_a_submit_over_a_quota_raises_quota_exceeded_and_rolls_the_transaction_back
    tenant = "t-#{@queue}"
    c = client(tenant: tenant)
    assert_equal 2, c.set_tenant(tenant, max_queued: 2).max_queued
    assert_equal 40, c.set_queue(@queue, max_queued_bytes: 40).max_queued_bytes
    conn = connect
    err = assert_raises(Tenq::QuotaExceededError) do
      conn.transaction do
        conn.exec_params("INSERT INTO biz (queue, note) VALUES ($1, 'over')", [@queue])
        Tenq::Tx.submit_many(conn, Array.new(3) { |i| { tenant: tenant, queue: @queue, type: "T", args: [i] } })
      end
    end
    assert_kind_of Tenq::RateLimitedError, err
    assert_equal ["quota_exceeded", 429, "max_queued"], [err.code, err.status, err.field]
    assert_match(/\Atenq\.submit: quota_exceeded: tenant #{tenant} /, err.message)
    assert_kind_of PG::Error, err.cause
    assert_equal "TQ429", err.cause.result.error_field(PG::PG_DIAG_SQLSTATE)
    err = assert_raises(Tenq::QuotaExceededError) do
      conn.transaction do
        Tenq::Tx.submit(conn, tenant: tenant, queue: @queue, type: "T", args: { "pad" => "x" * 40 })
      end
    end
    assert_equal "max_queued_bytes", err.field
    assert_match(/queue #{@queue} /, err.message)
    assert_equal 0, rows
    assert_equal 0, rows("SELECT count(*) FROM tenq.inbox", [])
    # within the quotas: made
    ids = conn.transaction do
      Tenq::Tx.submit_many(conn, Array.new(2) { |i| { tenant: tenant, queue: @queue, type: "T", args: [i] } })
    end
    assert_equal [[0], [1]], ids.map { |id| taken_in(id).args }
    q = c.queue(@queue)
    assert_equal [2, 2], [q.submitted_total, q.queued]
  end

  def test_a_jobs_own_timeout_ms_goes_through_the_transaction_and_the_server_times_the_attempt_out
    client.set_queue(@queue, lease_ms: 1500) # heartbeats every 0.5 s
    conn = connect
    id, other = conn.transaction do
      [Tenq::Tx.submit(conn, tenant: "acme", queue: @queue, type: "Stuck", max_attempts: 1, timeout_ms: 700),
       Tenq::Tx.submit_many(conn, [{ tenant: "acme", queue: @queue, type: "Later", timeout_ms: 900 }]).first]
    end
    assert_equal 700, taken_in(id).timeout_ms
    assert_equal 900, taken_in(other).timeout_ms
    stopped = Queue.new
    w = worker(types: ["Stuck"]) do |r|
      r.register("Stuck") do
        sleep 30
      rescue Tenq::Stopped => e
        stopped << e.reason
        raise
      end
    end
    running(w) do
      eventually(what: "the job timed out", timeout: 15) { client.job(id).state == "dead" }
      eventually(what: "the handler stopped", timeout: 10) { !stopped.empty? }
      assert_equal :lost, stopped.pop
    end
    assert_equal ["timed_out"], client.attempts(id).map(&:outcome)
  end

  # The README's example, run as written (its connections from DATABASE_URL).
  def test_the_readme_example_runs
    readme = File.read(File.expand_path("../README.md", __dir__))
    code = readme[/^### In your database transaction\n.*?^```ruby\n(.*?)^```/m, 1] or flunk "no example"
    db.exec("CREATE TABLE IF NOT EXISTS orders (id int PRIMARY KEY, total int, shipped boolean DEFAULT false)")
    previous = ENV.fetch("DATABASE_URL", nil)
    ENV["DATABASE_URL"] = server.store
    registry = Tenq::Registry.new
    Tenq.stub(:handle, ->(type, &block) { registry.register(type, &block) }) do
      eval(code, binding, "README.md") # rubocop:disable Security/Eval
    end
    ship = client(queue: "shipping")
    ship.request(:put, "/v1/queues/shipping", { "delivery" => "exactly-once" })
    h = ship.submit(type: "Order.ship", args: { "order" => 7 })
    w = Tenq::Worker.new(queues: ["shipping"], client: ship, registry: registry,
                         middleware: Tenq::Middleware::Chain.new, logger: quiet_logger, poll: 1)
    running(w) { assert_equal({ "shipped" => true }, h.wait(timeout: 30)) }
    assert_equal [%w[7 120 t]], db.exec("SELECT id, total, shipped FROM orders").values
    assert_equal [["Mail.receipt", { "order" => 7 }]], client.list(queue: "mail").jobs.map { |j| [j.type, j.args] }
    assert_equal [["Stock.take", [7]]], client.list(queue: "stock").jobs.map { |j| [j.type, j.args] }
  ensure
    ENV["DATABASE_URL"] = previous
  end

  # --- complete and fail --------------------------------------------------------

  def test_a_handler_completes_its_job_with_the_applications_writes
    exactly_once(lease_ms: 1500)
    conn = connect
    runs = []
    idle_cpu = []
    log = StringIO.new
    w = worker(concurrency: 1, log: log) do |r|
      r.register("Order.ship") do |task|
        runs << task.attempt
        conn.transaction do
          conn.exec_params("INSERT INTO biz (queue, note, job) VALUES ($1, 'shipped', $2)", [@queue, task.id])
          Tenq::Tx.complete(conn, task, result: { "rows" => 3 })
        end
        cpu = Process.clock_gettime(Process::CLOCK_PROCESS_CPUTIME_ID)
        sleep 1.2 # past a heartbeat: the job is over, the handler is not stopped for it
        idle_cpu << (Process.clock_gettime(Process::CLOCK_PROCESS_CPUTIME_ID) - cpu)
        "the return value of a handler that completed its job itself"
      end
    end
    h = client.submit(type: "Order.ship")
    running(w) do
      assert_equal({ "rows" => 3 }, h.wait(timeout: 30))
      eventually(what: "the worker's ack") { w.counts[:succeeded] == 1 }
      sleep 1.6 # a lease of 1.5 s would have run out: the job is not delivered again
    end
    assert_equal [1], runs
    assert_operator idle_cpu.first, :<, 0.3, "CPU seconds while the handler slept: no busy loop over a quiet job"
    assert_equal({ succeeded: 1 }, w.counts.reject { |_, n| n.zero? })
    assert_equal 1, rows("SELECT count(*) FROM biz WHERE job = $1", [h.id])
    job = client.job(h.id)
    assert_equal ["succeeded", 1], [job.state, job.attempts]
    assert_empty lease(wait: 0.3)
    refute_match(/refused|lease lost|WARN|ERROR/, log.string)
  end

  # From Tx.complete on, the worker sends no start or heartbeat for the job:
  # the application's transaction holds the job's row until it commits, and
  # the server's write of that row would wait for it (and every write with
  # it), then find the job completed.
  def test_a_transaction_held_open_after_complete_does_not_hold_the_server_up
    exactly_once(lease_ms: 2400) # a heartbeat every 0.8 s
    conn = connect
    began = Queue.new
    w = worker(concurrency: 1) do |r|
      r.register("Order.ship") do |task|
        conn.transaction do
          Tenq::Tx.complete(conn, task, result: "shipped")
          began << true
          sleep 1.5 # past the start (10 ms) and a heartbeat (0.8 s)
        end
      end
    end
    h = client.submit(type: "Order.ship")
    other = client(queue: "#{@queue}-other")
    running(w) do
      began.pop
      sleep 0.3
      t0 = mono
      other.submit(type: "Unrelated.job")
      assert_operator mono - t0, :<, 0.5, "a submit while the transaction is open"
      assert_equal "shipped", h.wait(timeout: 30)
      eventually(what: "the worker's ack") { w.counts[:succeeded] == 1 }
    end
    refute_match(/commit failed|reloading/, server.log)
  end

  def test_a_stale_token_raises_and_the_applications_writes_roll_back
    exactly_once(lease_ms: 60_000)
    job = leased
    conn = connect
    err = assert_raises(Tenq::LeaseError) do
      conn.transaction do
        conn.exec_params("INSERT INTO biz (queue, note) VALUES ($1, 'x')", [@queue])
        Tenq::Tx.complete(conn, job["id"], token: job["token"] - 1)
      end
    end
    assert_match(/is not leased under token/, err.message)
    assert_kind_of Tenq::ConflictError, err
    assert_kind_of PG::Error, err.cause
    assert_equal 0, rows
    assert_equal "leased", client.job(job["id"]).state

    Tenq::Tx.complete(connect, job, result: "done") # the lease's Hash, outside a transaction block
    assert_raises(Tenq::LeaseError) { Tenq::Tx.complete(connect, job) }
    eventually(what: "the completion taken in") { client.job(job["id"]).state == "succeeded" }
    assert_equal "done", client.job(job["id"]).result
    # the worker's own ack of that lease afterwards: answered as applied
    assert_equal({}, client.ack(job["id"], job["token"]).reject { |k, _| %w[id state].include?(k) })
  end

  def test_only_an_exactly_once_queues_jobs_complete_in_a_transaction
    job = leased
    sleep 0.4 # a lease on such a queue is written 200 ms late
    err = assert_raises(Tenq::LeaseError) { Tenq::Tx.complete(connect, job) }
    assert_match(/exactly-once/, err.message)
  end

  def test_a_failure_in_a_transaction_retries_the_job
    exactly_once(lease_ms: 60_000, backoff: "fixed", backoff_base_ms: 0)
    job = leased
    conn = connect
    conn.transaction { Tenq::Tx.fail(conn, job, error: "no stock", retry_in: 0) }
    again = eventually(what: "the retry") { lease(wait: 1).first }
    assert_equal [job["id"], 1], again.values_at("id", "attempt")
    assert_equal "no stock", client.job(job["id"]).error
  end

  def test_a_handler_fails_in_its_transaction_then_completes_on_the_retry
    exactly_once(lease_ms: 60_000, backoff: "fixed", backoff_base_ms: 0)
    conn = connect
    log = StringIO.new
    w = worker(concurrency: 1, log: log) do |r|
      r.register("Order.ship") do |task|
        conn.transaction do
          conn.exec_params("INSERT INTO biz (queue, note, job) VALUES ($1, $2, $3)",
                           [@queue, "attempt #{task.attempt}", task.id])
          if task.attempt == 1
            Tenq::Tx.fail(conn, task, error: "no stock", retry_in: 0)
          else
            Tenq::Tx.complete(conn, task, result: "shipped")
          end
        end
        nil
      end
    end
    h = client.submit(type: "Order.ship")
    running(w) do
      assert_equal "shipped", h.wait(timeout: 30)
      eventually(what: "both outcomes counted") { w.counts.values.sum == 2 }
    end
    assert_equal({ failed: 1, succeeded: 1 }, w.counts.reject { |_, n| n.zero? }.sort.to_h)
    assert_equal 2, rows
    assert_equal [2, "no stock"], [client.job(h.id).attempts, client.job(h.id).error]
    refute_match(/refused|lease lost|WARN|ERROR/, log.string)
  end
end
