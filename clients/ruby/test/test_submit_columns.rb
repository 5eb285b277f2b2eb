# SPDX-License-Identifier: Apache-2.0
# frozen_string_literal: true

require_relative "test_helper"

# Client#submit_many asks for its batches' answers as columns (POST /v1/jobs
# "columns": true), through a recording proxy in front of a real server, and
# falls back to lists of objects for a server that does not know them.
class TestSubmitColumns < TenqTest::Case
  def submit_bodies(proxy)
    proxy.exchanges.select { |e| e.request_line.start_with?("POST /v1/jobs ") }.map { |e| JSON.parse(e.body) }
  end

  def mixed_jobs
    [{ type: "Cols.a" }, { type: "Cols.b", queue: "bad queue" }, { type: "Cols.c", unique_key: "u" },
     { type: "Cols.c", unique_key: "u" }, { type: "Cols.d", run_at: Time.now + 3600 }]
  end

  def summary(handles)
    handles.map { |h| [h.ok?, h.created?, h.duplicate?, h.submitted.state, h.error&.field] }
  end

  def test_batches_are_answered_as_columns_into_the_same_handles
    p = proxy(server)
    handles = client(servers: [p.url]).submit_many(mixed_jobs)
    assert_equal [true], submit_bodies(p).map { |b| b["columns"] }, "asked for columns"
    assert_equal [[true, true, false, "ready", nil], [false, false, false, nil, "queue"],
                  [true, true, false, "ready", nil], [true, false, true, "ready", nil],
                  [true, true, false, "scheduled", nil]], summary(handles)
    assert_instance_of Tenq::InvalidError, handles[1].error
    assert_nil handles[1].id
    assert_equal handles[2].id, handles[3].id, "the duplicate answers its twin's id"
    assert_operator handles[4].id, :>, handles[2].id
    assert_equal "Cols.a", handles[0].job["type"]
    assert_equal 3, client.list(queue: @queue).jobs.size
  end

  def test_a_server_that_does_not_know_columns_is_asked_without_them
    p = proxy(server)
    p.refuse_field("columns")
    c = client(servers: [p.url])
    # two batches: the first refused once and sent again as lists, the second
    # (made while the first was out) made again as lists before it is sent
    many = c.submit_many(Array.new(Tenq::Client::BATCH_MAX + 1) { { type: "Cols.many" } })
    assert_equal Tenq::Client::BATCH_MAX + 1, many.count(&:created?)
    assert_equal [true, nil, nil], submit_bodies(p).map { |b| b["columns"] }
    handles = c.submit_many(mixed_jobs)
    assert_equal [[true, true, false, "ready", nil], [false, false, false, nil, "queue"],
                  [true, true, false, "ready", nil], [true, false, true, "ready", nil],
                  [true, true, false, "scheduled", nil]], summary(handles)
    assert_equal [true, nil, nil, nil], submit_bodies(p).map { |b| b["columns"] }, "not asked again"
    q = c.transport.call("GET", "/v1/queues/#{@queue}", nil)
    assert_equal [Tenq::Client::BATCH_MAX + 1 + 2, 1], [q["ready"], q["scheduled"]], "every job made once"
  end

  def test_an_answer_that_does_not_hold_every_job_is_a_protocol_error
    good = { "id" => [1, 2], "state" => %w[ready ready], "duplicate" => [false, false], "merged" => [false, false] }
    assert_equal [1, 2], Tenq::SubmitResult.all_from_columns(good, 2).map(&:id)
    [good.merge("id" => [1]), good.merge("state" => "ready"), [], good.merge("id" => [1, "2"])].each do |bad|
      assert_raises(Tenq::ProtocolError) { Tenq::SubmitResult.all_from_columns(bad, 2) }
    end
  end
end
