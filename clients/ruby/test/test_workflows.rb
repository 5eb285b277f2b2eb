# SPDX-License-Identifier: Apache-2.0
# frozen_string_literal: true

require_relative "test_helper"
require "open3"

# Workflows against a real server: dependencies (a chain, index references,
# a parent's death with each policy, a bad parent) and batches (callbacks
# fired once when the library's worker drains one, fan-out from a running
# job, a closed batch); the test modes with depends_on; the README example.
class TestWorkflows < TenqTest::Case
  def lease_one(cli)
    jobs = cli.lease(queues: [@queue], max: 1)["jobs"]
    assert_equal 1, jobs.size
    jobs.first
  end

  def test_a_chain_runs_the_child_after_its_parent_and_the_child_reads_the_result
    c = client
    a = c.submit(type: "W.a")
    b = c.submit(type: "W.b", depends_on: [a], on_parent_failure: :cancel)
    assert_equal "waiting", b.submitted.state
    jb = c.job(b.id)
    assert_equal [[a.id], "cancel", "parents"], [jb.parents, jb.on_parent_failure, jb.waiting_reason]
    assert_equal [a.id], jb.waiting["parents"]
    ja = c.job(a.id)
    assert_equal [[b.id], 1], [ja.children, ja.children_count]
    la = lease_one(c)
    assert_equal a.id, la["id"]
    assert_empty c.lease(queues: [@queue], max: 1)["jobs"]
    c.ack(a.id, la["token"], result: { "rows" => 42 })
    lb = lease_one(c)
    assert_equal [b.id, [a.id]], [lb["id"], lb["parents"]]
    ps = c.parents(b.id)
    assert_equal [[a.id, "succeeded", { "rows" => 42 }]], ps.parents.map { |p| [p.id, p.state, p.result] }
    assert_equal [b.id], c.parents(a.id).children.map(&:id)
    c.ack(b.id, lb["token"])
  end

  def test_the_worker_runs_a_chain_and_the_child_reads_its_parents_from_its_task
    c = client
    seen = []
    w = worker(client: c) do |r|
      r.register("W.first") { { "rows" => 7 } }
      r.register("W.second") do |task|
        seen << task.parents
        task.parent_results.results.first["rows"] * 2
      end
    end
    a = c.submit(type: "W.first")
    b = c.submit(type: "W.second", depends_on: [a.id])
    running(w) { assert_equal 14, b.wait(timeout: 30) }
    assert_equal [[a.id]], seen
  end

  def test_a_many_submit_names_earlier_jobs_by_index_also_across_requests
    c = client
    out = c.submit_many([{ type: "W.root" }, { type: "W.leaf", depends_on: [Tenq.index(0)] },
                         { type: "W.join", depends_on: [Tenq.index(0), { index: 1 }] },
                         { type: "W.bad", depends_on: [Tenq.index(9)] }])
    root, leaf, join = out
    assert(out[0, 3].all?(&:ok?))
    assert_kind_of Tenq::InvalidError, out[3].error
    assert_equal "depends_on", out[3].error.field
    assert_equal [root.id], c.job(leaf.id).parents
    assert_equal [root.id, leaf.id], c.job(join.id).parents
    big = Array.new(Tenq::Client::BATCH_MAX + 1) { { type: "W.n" } }
    big << { type: "W.last", depends_on: [Tenq.index(0), Tenq.index(Tenq::Client::BATCH_MAX)] }
    hs = c.submit_many(big)
    assert_equal [hs[0].id, hs[Tenq::Client::BATCH_MAX].id], c.job(hs.last.id).parents
  end

  def test_a_parent_that_dies_cancels_its_child_with_policy_cancel
    c = client
    a = c.submit(type: "W.doomed", max_attempts: 1)
    b = c.submit(type: "W.child", depends_on: [a])
    c.fail(a.id, lease_one(c)["token"], error: "boom")
    assert_equal "dead", c.job(a.id).state
    jb = c.job(b.id)
    assert_equal "cancelled", jb.state
    assert_match(/parent/, jb.error)
  end

  def test_a_parent_that_dies_lets_its_child_run_with_policy_run
    c = client
    a = c.submit(type: "W.doomed", max_attempts: 1)
    b = c.submit(type: "W.child", depends_on: [a], on_parent_failure: :run)
    c.fail(a.id, lease_one(c)["token"], error: "boom")
    lb = lease_one(c)
    assert_equal b.id, lb["id"]
    assert_equal "dead", c.parents(b.id).parents.first.state
    c.ack(b.id, lb["token"])
  end

  def test_a_parent_that_is_not_there_raises_the_field_and_makes_nothing
    c = client
    err = assert_raises(Tenq::NotFoundError) { c.submit(type: "W.orphan", depends_on: [987_654_321]) }
    assert_equal "depends_on", err.field
    err = assert_raises(Tenq::NotFoundError) do
      c.create_batch([{ type: "W.x" }, { type: "W.y", depends_on: [987_654_321] }])
    end
    assert_equal "jobs[1].depends_on", err.field
    assert_empty c.list(queue: @queue).jobs
  end

  def test_a_batch_drained_by_the_worker_fires_on_complete_and_on_success_once
    c = client
    fired = Queue.new
    w = worker(client: c) do |r|
      r.register("B.item") { |task| task.args["i"] }
      r.register("B.cb") { |task| fired << "#{task.batch_callback}:#{task.batch}" }
    end
    created = c.create_batch((0..4).map { |i| { type: "B.item", args: { "i" => i } } },
                             on_complete: { type: "B.cb", args: { "user" => 7 } }, on_success: { type: "B.cb" },
                             on_death: { type: "B.dead" })
    assert_equal 5, created.jobs.size
    assert_equal created.id, created.jobs.first.job.batch
    st = c.batch(created.id)
    assert_equal ["open", 5, 5], [st.status, st.total, st.pending]
    running(w) { eventually(what: "both callbacks") { fired.size == 2 } }
    st = c.get_batch(created.id)
    assert_predicate st, :closed?
    assert_equal [5, 1], [st.counts["succeeded"], st.progress]
    got = Array.new(2) { fired.pop }.sort
    assert_equal ["on_complete:#{created.id}", "on_success:#{created.id}"], got
    assert_nil st.callback_job(:on_death)
    assert_equal "on_complete", c.job(st.callback_job(:on_complete)).batch_callback
    assert_includes c.batches(limit: 1000).batches.map(&:id), created.id
  end

  def test_a_running_job_fans_out_into_its_batch_and_a_closed_batch_refuses_more
    c = client
    w = worker(client: c) do |r|
      r.register("F.fan") { |task| task.add_to_batch((0..2).map { |i| { type: "F.part", args: { "i" => i } } }).size }
      r.register("F.part", &:batch)
      r.register("F.done") { nil }
    end
    created = c.create_batch([{ type: "F.fan" }], on_success: { type: "F.done" })
    running(w) { eventually(what: "the batch closed") { c.batch(created.id).closed? } }
    st = c.batch(created.id)
    assert_equal [4, 4], [st.total, st.counts["succeeded"]]
    refute_nil st.callback_job("on_success")
    err = assert_raises(Tenq::BatchClosedError) { c.add_to_batch(created.id, [{ type: "F.late" }]) }
    assert_kind_of Tenq::ConflictError, err
    assert_equal "batch_closed", err.code
    assert_raises(Tenq::NotFoundError) { c.add_to_batch(987_654_321, [{ type: "F.late" }]) }
  end

  def test_the_test_modes_take_depends_on
    reg = Tenq.handlers
    reg.register("WT.a") { 3 } unless reg.lookup("WT.a")
    reg.register("WT.b") { |task| task.parent_results.results.first + 1 } unless reg.lookup("WT.b")
    reg.register("WT.die") { raise "boom" } unless reg.lookup("WT.die")
    c = Tenq::Client.new(servers: "http://127.0.0.1:1", queue: "q")
    Tenq::Testing.inline! do
      a = c.submit(type: "WT.a")
      assert_equal 4, c.submit(type: "WT.b", depends_on: [a]).wait
      d = c.submit(type: "WT.die")
      assert_equal "cancelled", c.submit(type: "WT.b", depends_on: [d]).job.state
      out = c.submit_many([{ type: "WT.a" }, { type: "WT.b", depends_on: [Tenq.index(0)] }])
      assert_equal 4, out[1].wait
      assert_raises(Tenq::NotFoundError) { c.submit(type: "WT.b", depends_on: [999_999]) }
      created = c.create_batch([{ type: "WT.a" }])
      assert_equal created.id, created.jobs.first.job.batch
    end
    Tenq::Testing.fake! do
      Tenq::Testing.clear
      a = c.submit(type: "WT.a")
      b = c.submit(type: "WT.b", depends_on: [a.id])
      assert_equal "waiting", b.job.state
      assert_equal 2, Tenq::Testing.drain
      assert_equal 4, b.wait
    end
  end

  def test_the_readme_workflows_example_runs_as_written
    text = File.read(File.expand_path("../README.md", __dir__))
    code = text[/<!-- workflows\.rb -->\n```ruby\n(.*?)^```/m, 1] or flunk "no workflows.rb in the README"
    shown = text[/workflows\.rb.*?^It prints:\n\n```\n(.*?)^```/m, 1] or flunk "no output shown"
    fresh = own_server
    out, status = Open3.capture2e({ "TENQ_SERVER" => fresh.url }, "ruby", "-I", File.expand_path("../lib", __dir__),
                                  "-e", code)
    assert status.success?, out
    assert_equal shown, out
  end
end
