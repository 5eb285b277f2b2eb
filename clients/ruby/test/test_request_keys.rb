# SPDX-License-Identifier: Apache-2.0
# frozen_string_literal: true

require_relative "test_helper"

# Submits are safe to send again: one Idempotency-Key header a request, made
# before its first attempt and sent with every retry; the server answers a
# key it has seen with the first answer. Seen on the wire through a
# recording proxy in front of a real server.
class TestRequestKeys < TenqTest::Case
  KEY = /\Atq1[0-9a-f]{27}\z/

  def posts(proxy)
    proxy.exchanges.select { |e| e.request_line.start_with?("POST /v1/jobs ") }
  end

  def ready(client)
    client.request(:get, "/v1/queues/#{@queue}")["ready"]
  end

  def test_a_submit_whose_answer_was_lost_is_replayed_after_a_restart
    s = own_server
    px = proxy(s)
    c = client(servers: [px.url], failover_budget: 30)
    px.lose_answers(1) # the server makes the jobs and answers; the answer never arrives
    submit = Thread.new { c.submit_many(Array.new(3) { |i| { type: "Lost.answer", args: [i] } }) }
    @threads << submit
    lost = eventually(what: "the lost answer") { px.exchanges.find(&:lost) }
    s.kill
    s.start # the same port and data directory
    px.release # the client's connection breaks; its retry goes to the restarted server
    handles = submit.value
    first = JSON.parse(lost.answer)["columns"]["id"]
    assert_equal first, handles.map(&:id), "the retry is answered the lost answer"
    sent = posts(px)
    assert_equal 2, sent.size
    assert_match KEY, sent[0].headers["idempotency-key"]
    assert_equal [sent[0].headers["idempotency-key"]] * 2, sent.map { |e| e.headers["idempotency-key"] }
    assert_equal sent[0].body, sent[1].body
    assert_equal "true", sent[1].answer_headers["idempotent-replayed"]
    assert_equal first.sort, client(servers: [s.url]).list(queue: @queue).jobs.map(&:id).sort, "made once"
  end

  def test_each_request_has_a_key_of_its_own_and_is_replayed_under_it
    px = proxy(server)
    c = client(servers: [px.url])
    one = c.submit(type: "Rk.one")
    many = c.submit_many(Array.new(10_001) { { type: "Rk.many" } })
    two = c.submit(type: "Rk.one")
    refute_equal one.id, two.id, "another submit call is another request"
    sent = posts(px)
    assert_equal 4, sent.size, "a request, the batch split in two, a request"
    keys = sent.map { |e| e.headers["idempotency-key"] }
    keys.each { |k| assert_match KEY, k }
    assert_equal [keys[0][14, 8]] * 4, keys.map { |k| k[14, 8] }, "one client, one random part"
    n = keys[0][22, 8].to_i(16)
    assert_equal [n, n + 1, n + 2, n + 3], keys.map { |k| k[22, 8].to_i(16) }
    assert_equal 10_003, ready(c)

    # sent again as it was, under its key: the first answer, nothing made
    again = c.request(:post, "/v1/jobs", sent[0].body, headers: { "Idempotency-Key" => keys[0] })
    assert_equal JSON.parse(sent[0].answer), again
    assert_equal one.id, again["id"]
    assert_equal "true", px.exchanges.last.answer_headers["idempotent-replayed"]
    tail = c.request(:post, "/v1/jobs", sent[2].body, headers: { "Idempotency-Key" => keys[2] })
    assert_equal [many.last.id], tail["columns"]["id"]
    assert_equal 10_003, ready(c)

    # the same key with another body: the typed conflict, naming the header
    e = assert_raises(Tenq::ConflictError) do
      c.request(:post, "/v1/jobs", { "tenant" => "acme", "queue" => @queue, "type" => "Rk.other" },
                headers: { "Idempotency-Key" => keys[0] })
    end
    assert_equal [409, "conflict", "Idempotency-Key"], [e.status, e.code, e.field]
    assert_equal 10_003, ready(c)
  end

  # The next batch is sent once the last is answered (its jobs made), not
  # before: the jobs are made in order, and a batch that fails leaves those
  # before it made and those after it unsent.
  def test_a_bulk_submit_sends_its_batches_one_after_the_other
    px = proxy(server)
    c = client(servers: [px.url])
    handles = c.submit_many(Array.new(25_000) { |i| { type: "Order.run", args: [i] } })
    ids = handles.map(&:id)
    assert_equal 25_000, ids.size
    assert_equal ids.sort, ids, "ids grow in submission order, across the batches"
    sent = posts(px)
    assert_equal [10_000, 10_000, 5_000], sent.map { |e| JSON.parse(e.body)["jobs"].size }
    sent.each_cons(2) do |a, b|
      assert_operator b.received_at, :>, a.answered_at, "a batch is sent after the one before it is answered"
    end
    assert_equal 3, sent.map { |e| e.headers["idempotency-key"] }.uniq.size

    # the second batch is refused whole (too large): the first stands, the third is never sent
    c2 = client(servers: [own_server(args: ["--max-batch-bytes", "2MiB"]).url])
    big = "x" * 300
    jobs = Array.new(25_000) { |i| { type: "Order.run", args: i.between?(10_000, 19_999) ? [big] : [i] } }
    assert_raises(Tenq::TooLargeError) { c2.submit_many(jobs) }
    assert_equal 10_000, ready(c2), "the first batch made, the third not sent"
  end

  def test_no_job_key_unless_the_caller_gives_one_and_the_callers_own_dedups
    px = proxy(server)
    c = client(servers: [px.url])
    plain = [c.submit(type: "Own.none"), *c.submit_many([{ type: "Own.none" }, { type: "Own.none" }])]
    plain.each { |h| assert_nil c.job(h.id)["idempotency_key"], "job #{h.id}" }
    bodies = posts(px).map { |e| JSON.parse(e.body) }
    assert_equal 2, bodies.size
    refute_includes bodies[0], "idempotency_key"
    bodies[1]["jobs"].each { |j| refute_includes j, "idempotency_key" }

    mine = c.submit(type: "Own.key", idempotency_key: "mine-1")
    assert mine.created?
    assert_equal "mine-1", c.job(mine.id).idempotency_key
    again = c.submit(type: "Own.key", idempotency_key: "mine-1")
    assert again.replayed?, "another request, the same job key: the job's replay"
    assert_equal mine.id, again.id
    batch = c.submit_many([{ type: "Own.key", idempotency_key: "mine-1" },
                           { type: "Own.key", idempotency_key: "mine-2" }])
    assert_equal [true, false], batch.map(&:replayed?)
    assert_equal mine.id, batch[0].id
    assert_equal 5, ready(c)
  end
end
