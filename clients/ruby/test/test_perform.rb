# SPDX-License-Identifier: Apache-2.0
# frozen_string_literal: true

require_relative "test_helper"

# A Sidekiq-style job class: include Tenq::Job, define perform.
class HardJob
  include Tenq::Job
  tenq_options tenant: "acme"

  def perform(name, count, tag: nil)
    { name: name, count: count, tag: tag, attempt: tenq_job&.attempt }
  end
end

class NoPerform
  include Tenq::Job

  def execute; end
end

# perform_async, perform_in, perform_at, set and perform_inline against a
# real server and worker; results with the same keys whichever way a job
# ran (string keys, JSON's).
class TestPerform < TenqTest::Case
  def setup
    super
    HardJob.tenq_options(queue: @queue)
  end

  def test_perform_async_is_a_job_the_worker_runs_with_string_keys_as_inline
    c = client
    h = HardJob.set(client: c).perform_async("bob", 5, tag: "x")
    job = c.job(h.id)
    assert_equal ["HardJob.perform", ["bob", 5, { "tag" => "x" }], @queue, "acme"],
                 [job.type, job.args, job.queue, job.tenant]
    expected = { "name" => "bob", "count" => 5, "tag" => "x", "attempt" => 1 }
    running(worker(client: c)) { assert_equal expected, h.wait(timeout: 30) }
    assert_equal expected.merge("attempt" => nil), HardJob.perform_inline("bob", 5, tag: "x"),
                 "perform_inline gives what the job gave: string keys"
    assert_equal expected.merge("attempt" => nil), HardJob.new.inline.perform("bob", 5, tag: "x")
    assert_equal({ name: "bob", count: 5, tag: "x", attempt: nil }, HardJob.new.perform("bob", 5, tag: "x"),
                 "a plain call is a plain Ruby call")
  end

  def test_perform_in_and_perform_at_schedule_the_job
    c = client
    t0 = Time.now
    h1 = HardJob.set(client: c).perform_in(3600, "later", 1)
    h2 = HardJob.set(client: c, priority: 4).perform_at(t0 + 7200, "at", 2)
    h3 = HardJob.set(client: c).perform_at((t0 + 60).to_f, "epoch", 3)
    j1, j2, j3 = [h1, h2, h3].map { |h| c.job(h.id) }
    assert_equal %w[scheduled scheduled scheduled], [j1.state, j2.state, j3.state]
    assert_in_delta (t0.to_f + 3600) * 1000, j1.run_at, 5000
    assert_in_delta (t0.to_f + 7200) * 1000, j2.run_at, 1000
    assert_in_delta (t0.to_f + 60) * 1000, j3.run_at, 1000
    assert_equal 4, j2.priority
    assert_raises(Tenq::InvalidError) { HardJob.perform_in("soon", 1, 2) }
    assert_raises(ArgumentError) { HardJob.set(colour: "red") }
    assert_raises(NoMethodError) { NoPerform.perform_async }
  end

  def test_the_default_client_and_the_class_options
    Tenq.client = client
    h = HardJob.perform_async("dflt", 1)
    assert_equal [@queue, "acme"], Tenq.client.job(h.id).then { |j| [j.queue, j.tenant] }
  ensure
    Tenq.client = nil
  end

  def test_the_test_modes_give_the_same_keys_as_a_server
    expected = { "name" => "t", "count" => 2, "tag" => nil, "attempt" => 1 }
    Tenq::Testing.inline! do
      assert_equal expected, HardJob.perform_async("t", 2).wait
    end
    Tenq::Testing.fake! do
      h = HardJob.perform_async("t", 2)
      Tenq::Testing.drain
      assert_equal expected, h.wait
    end
  end
end
