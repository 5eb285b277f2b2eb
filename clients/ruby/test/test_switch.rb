# SPDX-License-Identifier: Apache-2.0
# frozen_string_literal: true

require_relative "test_helper"

class DataReport
  include Tenq::Job
  tenq_options tenant: "acme"
  tenq_options :slow_one, priority: 5

  def execute(report_id, format: "pdf")
    tenq_job&.progress({ "report" => report_id })
    { "report_id" => report_id, "format" => format, "inline" => tenq_job.nil? }
  end

  def slow_one
    tenq_job.attempt
  end

  def add(left, right)
    left + right
  end

  private

  def secret
    "never a job"
  end
end

module Reports
  class Monthly
    include Tenq::Job
    tenq_options tenant: "acme"

    def total(rows)
      rows.sum { |r| r["amount"] }
    end
  end
end

class TestSwitch < TenqTest::Case
  def setup
    super
    DataReport.tenq_options(queue: @queue)
    Reports::Monthly.tenq_options(queue: @queue)
  end

  def test_the_same_method_runs_inline
    assert_equal({ "report_id" => 7, "format" => "csv", "inline" => true }, DataReport.new.execute(7, format: "csv"))
    assert_equal 5, DataReport.new.add(2, 3)
  end

  def test_async_submits_a_job_the_worker_routes_back_to_the_method
    c = client
    h = DataReport.new.async(client: c).execute(42, format: "csv")
    job = c.job(h.id)
    assert_equal ["DataReport.execute", [42, { "format" => "csv" }], "acme", @queue],
                 [job.type, job.args, job.tenant, job.queue]
    h2 = DataReport.new.async(client: c).add(2, 3)
    h3 = Reports::Monthly.new.async(client: c).total([{ "amount" => 4 }, { "amount" => 6 }])
    assert_equal "Reports::Monthly.total", c.job(h3.id).type
    running(worker(client: c)) do
      assert_equal({ "format" => "csv", "inline" => false, "report_id" => 42 }, h.wait(timeout: 30))
      assert_equal 5, h2.wait(timeout: 30)
      assert_equal 10, h3.wait(timeout: 30)
    end
  end

  def test_the_default_client_and_per_method_and_per_call_options
    Tenq.client = client
    h = DataReport.new.async.slow_one
    assert_equal 5, Tenq.client.job(h.id).priority
    h2 = DataReport.new.async(priority: -3, key: "k1", timeout_ms: 600_000).slow_one
    j = Tenq.client.job(h2.id)
    assert_equal [-3, "k1", 600_000], [j.priority, j.key, j.timeout_ms]
  ensure
    Tenq.client = nil
  end

  def test_args_that_are_not_json_are_refused_before_anything_is_sent
    c = client
    e = assert_raises(Tenq::InvalidError) { DataReport.new.async(client: c).add(Time.now, 1) }
    assert_equal "args", e.field
    assert_raises(Tenq::InvalidError) { DataReport.new.async(client: c).add(:sym, 1) }
    assert_raises(Tenq::InvalidError) { DataReport.new.async(client: c).add(Object.new, 1) }
    assert_empty c.list(queue: @queue).jobs
  end

  def test_only_public_methods_of_the_class_become_jobs
    c = client
    assert_raises(NoMethodError) { DataReport.new.async(client: c).secret }
    assert_raises(NoMethodError) { DataReport.new.async(client: c).to_s }
    assert_raises(NoMethodError) { DataReport.new.async(client: c).nope }
    assert_raises(ArgumentError) { DataReport.new.async(client: c, colour: "red") }
    assert_empty c.list(queue: @queue).jobs
  end

  def test_a_wrong_call_fails_the_job_with_the_error
    c = client
    h = DataReport.new.async(client: c, max_attempts: 1).add(1)
    running(worker(client: c)) do
      err = assert_raises(Tenq::JobFailed) { h.wait(timeout: 30) }
      assert_match(/ArgumentError: wrong number of arguments/, err.job.error)
    end
  end
end
