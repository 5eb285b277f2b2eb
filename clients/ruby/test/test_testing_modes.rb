# SPDX-License-Identifier: Apache-2.0
# frozen_string_literal: true

require_relative "test_helper"

class Mailer
  include Tenq::Job
  tenq_options tenant: "acme", queue: "mail"

  SENT = [] # rubocop:disable Style/MutableConstant -- the test reads it

  def deliver(to, subject)
    SENT << [to, subject]
    Mailer.new.async.receipt(to) if subject == "chain"
    "sent to #{to}"
  end

  def receipt(to)
    SENT << [to, "receipt"]
    nil
  end

  def explode
    raise IOError, "smtp down"
  end
end

# The test modes need no server: the default client points nowhere.
class TestTestingModes < Minitest::Test
  def setup
    Mailer::SENT.clear
    Tenq::Testing.clear
    Tenq.client = Tenq::Client.new(servers: ["http://127.0.0.1:1"], failover_budget: 0)
  end

  def teardown
    Tenq::Testing.disable!
    Tenq.client = nil
  end

  def test_inline_runs_the_handler_at_submit_time
    Tenq::Testing.inline! do
      h = Mailer.new.async.deliver("a@x", "hi")
      assert_equal [["a@x", "hi"]], Mailer::SENT
      assert_equal "sent to a@x", h.wait
      assert_equal "succeeded", h.job.state
      e = assert_raises(Tenq::JobFailed) { Mailer.new.async.explode.wait }
      assert_equal "IOError: smtp down", e.job.error
    end
    refute Tenq::Testing.active?, "the mode ends with the block"
  end

  def test_inline_runs_registered_handlers_and_worker_middleware
    seen = []
    Tenq.handle("Inline.echo", &:args)
    mw = ->(task, &run) { seen << task.type && run.call }
    Tenq.worker_middleware.add(mw)
    Tenq::Testing.inline! do
      h = Tenq.client.submit(type: "Inline.echo", queue: "q", args: { "x" => 1 })
      assert_equal({ "x" => 1 }, h.wait)
    end
    assert_equal ["Inline.echo"], seen
  ensure
    Tenq.worker_middleware.remove(mw)
  end

  def test_fake_records_and_drains
    Tenq::Testing.fake! do
      Mailer.new.async.deliver("b@x", "chain")
      Tenq.client.submit_many([{ type: "Mailer.deliver", queue: "mail", args: ["c@x", "bulk"] }])
      assert_empty Mailer::SENT, "nothing ran yet"
      jobs = Tenq::Testing.jobs(type: "Mailer.deliver")
      assert_equal [["b@x", "chain"], ["c@x", "bulk"]], jobs.map { |j| j["args"] }
      assert_equal %w[acme mail], jobs.first.values_at("tenant", "queue")
      assert jobs.none? { |j| j.key?("idempotency_key") }, "no key the caller did not give"
      assert_equal 3, Tenq::Testing.drain, "the receipt the first job submitted ran too"
      assert_equal [["b@x", "chain"], ["c@x", "bulk"], ["b@x", "receipt"]], Mailer::SENT, "oldest first"
      assert_equal 0, Tenq::Testing.drain
      Tenq::Testing.clear
      assert_empty Tenq::Testing.jobs
    end
  end

  def test_modes_nest_and_come_back
    Tenq::Testing.fake!
    Tenq::Testing.inline! do
      assert Tenq::Testing.inline?
      Mailer.new.async.deliver("d@x", "in")
    end
    assert Tenq::Testing.fake?
    Mailer.new.async.deliver("e@x", "out")
    assert_equal [["d@x", "in"]], Mailer::SENT
    assert_equal 1, Tenq::Testing.jobs(type: "Mailer.deliver").count { |j| j["state"] == "ready" }
    Tenq::Testing.disable!
    assert_raises(Tenq::ConnectionError) { Mailer.new.async.deliver("f@x", "real") }
  end

  def test_fake_cancel_and_bad_args
    Tenq::Testing.fake! do
      h = Mailer.new.async.deliver("g@x", "x")
      assert_equal "cancelled", h.cancel.state
      assert_raises(Tenq::ConflictError) { h.cancel }
      assert_raises(Tenq::InvalidError) { Mailer.new.async.deliver(Time.now, "x") }
      assert_equal 0, Tenq::Testing.drain
    end
  end
end
