# SPDX-License-Identifier: Apache-2.0
# frozen_string_literal: true

require_relative "test_helper"

# Several servers: failover on connection errors, and following the leader
# (307 from a standby, a takeover) with two servers on one PostgreSQL.
class TestServers < TenqTest::Case
  def test_a_dead_server_in_the_list_is_passed_over
    dead = own_server
    dead_url = dead.url
    dead.kill
    c = client(servers: [dead_url, server.url])
    assert c.submit(type: "Fail.over").created?
    assert_equal server.url, c.servers.first
    assert c.submit(type: "Fail.over").created?
  end

  # A leader and a standby on one fresh database.
  def pair
    db = TenqTest::Postgres.new_database
    leader = own_server(store: db)
    eventually(what: "a leader") { leader.get("/healthz")[1]["role"] == "leader" }
    standby = own_server(store: db)
    eventually(what: "a standby") { standby.get("/healthz")[1]["role"] == "standby" }
    [leader, standby]
  end

  def test_a_standby_sends_the_client_to_the_leader
    need_postgres
    leader, standby = pair
    c = client(servers: [standby.url])
    h = c.submit(type: "Follow.me")
    assert h.created?
    assert_equal leader.url, c.servers.first, "the leader joined the list and answers first"
    assert_includes c.servers, standby.url
    assert_equal "Follow.me", c.job(h.id).type
    assert_equal [h.id], client(servers: [standby.url]).list(queue: @queue).jobs.map(&:id), "reads follow too"
    code, body = standby.get("/readyz")
    assert_equal [503, "standby"], [code, body["role"]]
  end

  def test_a_submit_whose_answer_was_lost_is_replayed_by_the_next_leader
    need_postgres
    leader, standby = pair
    px = proxy(leader)
    c = client(servers: [px.url, standby.url], request_timeout: 2, failover_budget: 60)
    px.lose_answers(1) # the leader makes the job and answers; the answer never arrives
    submit = Thread.new { c.submit(type: "Lost.leader") }
    @threads << submit
    lost = eventually(what: "the lost answer") { px.exchanges.find(&:lost) }
    leader.kill # before the client knows: its retry finds the standby, then a new leader
    px.release
    h = submit.value
    assert_equal JSON.parse(lost.answer)["id"], h.id, "the new leader answers the retry as the first time"
    assert_equal standby.url, c.servers.first
    assert_equal [h.id], c.list(queue: @queue).jobs.map(&:id), "one job"
  end

  def test_a_takeover_moves_the_client_and_the_worker_to_the_new_leader
    need_postgres
    leader, standby = pair
    c = client(servers: [leader.url, standby.url], failover_budget: 30)
    before = c.submit(type: "Take.over", args: ["before"])
    w = worker(client: c) { |r| r.register("Take.over") { |t| t.args[0] } }
    after = nil
    running(w) do
      assert_equal "before", before.wait(timeout: 30)
      leader.kill
      after = c.submit(type: "Take.over", args: ["after"])
      assert_equal standby.url, c.servers.first
      assert_equal "leader", standby.get("/healthz")[1]["role"]
      assert_equal "after", after.wait(timeout: 60)
    end
    assert_equal [before.id, after.id].sort, c.list(queue: @queue).jobs.map(&:id).sort, "one job each"
  end
end
