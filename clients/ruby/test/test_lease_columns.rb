# SPDX-License-Identifier: Apache-2.0
# frozen_string_literal: true

require_relative "test_helper"

# The worker leases its jobs as columns (POST /v1/lease "columns": true)
# through a recording proxy in front of a real server, and falls back to
# lists of objects for a server that does not know them.
class TestLeaseColumns < TenqTest::Case
  def lease_bodies(proxy)
    proxy.exchanges.select { |e| e.request_line.start_with?("POST /v1/lease ") }.map { |e| JSON.parse(e.body) }
  end

  def test_leases_come_as_columns_and_a_handler_sees_the_job_as_ever
    p = proxy(server)
    c = client(servers: [p.url])
    seen = Queue.new
    w = worker(client: c) { |r| r.register("Cols.run") { |t| seen << [t.id, t.args, t.attempt, t.data] && nil } }
    handles = c.submit_many([{ type: "Cols.run", args: { "n" => 1 } }, { type: "Cols.run", args: [2], key: "k" }])
    running(w) { handles.each { |h| h.wait(timeout: 20) } }
    got = Array.new(2) { seen.pop }.sort_by(&:first)
    assert_equal [[handles[0].id, { "n" => 1 }, 1], [handles[1].id, [2], 1]], got.map { |g| g[0, 3] }
    data = got[1][3]
    assert_instance_of Hash, data
    fields = %w[id token tenant queue type key args attempt]
    assert_equal fields, fields & data.keys
    assert_equal "k", data["key"]
    assert_nil got[0][3]["key"]
    assert lease_bodies(p).all? { |b| b["columns"] == true }, "every lease asked for columns"
    assert_equal 2, w.counts[:succeeded]
  end

  def test_a_server_that_does_not_know_columns_gets_leases_as_lists
    p = proxy(server)
    p.refuse_field("columns")
    c = client(servers: [p.url])
    w = worker(client: c) { |r| r.register("Old.run") { |t| t.args["n"] } }
    handles = c.submit_many(Array.new(3) { |i| { type: "Old.run", args: { "n" => i } } })
    running(w) { assert_equal [0, 1, 2], handles.map { |h| h.wait(timeout: 20) } }
    bodies = lease_bodies(p)
    assert_equal [true], bodies.map { |b| b["columns"] }.compact, "asked once, refused, not again"
    assert_operator bodies.size, :>=, 2
    assert_equal 3, w.counts[:succeeded]
  end

  def test_a_row_reads_and_turns_into_the_hash_a_list_would_have_held
    cols = { "id" => [1, 3], "key" => [nil, "k"], "traceparent" => ["00-x", nil], "args" => [{}, [1]] }
    rows = Tenq::LeaseRow.all(cols)
    assert_equal [1, 3], rows.map { |r| r["id"] }
    assert_nil rows[0]["parents"]
    assert_equal({ "id" => 1, "key" => nil, "traceparent" => "00-x", "args" => {} }, rows[0].to_h)
    assert_equal({ "id" => 3, "key" => "k", "args" => [1] }, rows[1].to_h)
    assert_empty Tenq::LeaseRow.all({})
  end
end
