# SPDX-License-Identifier: Apache-2.0
# frozen_string_literal: true

require_relative "test_helper"

# A stand-in for an application's tracer: a current span per thread, kept as
# its traceparent; a child span keeps the trace id and gets a span id of its
# own.
module FakeTracer
  SPANS = [] # rubocop:disable Style/MutableConstant -- what the hooks saw

  def self.current
    Thread.current[:fake_traceparent]
  end

  def self.in_span(name, parent: current)
    trace_id = Tenq::Traceparent.trace_id(parent) || SecureRandom.hex(16)
    span = "00-#{trace_id}-#{SecureRandom.hex(8)}-01"
    SPANS << [name, parent, span]
    before = current
    Thread.current[:fake_traceparent] = span
    yield
  ensure
    Thread.current[:fake_traceparent] = before
  end
end

class TestTracing < TenqTest::Case
  def setup
    super
    FakeTracer::SPANS.clear
  end

  def tracing_chain
    Tenq::Middleware::Chain.new.add(Tenq::Middleware::Tracing.new do |parent, task, &run|
      FakeTracer.in_span("run #{task.type}", parent: parent, &run)
    end)
  end

  def skip_unless_server_takes_traceparent(client)
    client.submit(type: "Probe.traceparent", traceparent: Tenq::Traceparent.generate)
  rescue Tenq::InvalidError => e
    raise unless e.field == "traceparent"

    warn "\nSKIP #{name}: the server at #{TenqTest::BIN} does not take the traceparent field yet"
    skip "the server at #{TenqTest::BIN} does not take the traceparent field yet"
  end

  def test_submit_wait_and_run_are_one_trace
    c = client(trace: -> { FakeTracer.current })
    skip_unless_server_takes_traceparent(c)
    w = worker(client: c, middleware: tracing_chain) do |r|
      r.register("Traced.run") { FakeTracer.current }
    end
    h = nil
    result = nil
    FakeTracer.in_span("request") do
      h = c.submit(type: "Traced.run")
      running(w) { result = h.wait(timeout: 30) }
    end
    request, run = FakeTracer::SPANS.values_at(0, 1)
    assert_equal request[2], c.job(h.id).traceparent, "the server kept the submitter's traceparent"
    assert_equal ["run Traced.run", request[2]], run.first(2), "the run's span is the request span's child"
    assert_equal run[2], result, "the handler ran inside the run's span"
    assert_equal Tenq::Traceparent.trace_id(request[2]), Tenq::Traceparent.trace_id(result)
  end

  def test_no_current_span_no_traceparent
    c = client(trace: -> { FakeTracer.current })
    skip_unless_server_takes_traceparent(c)
    h = c.submit(type: "Untraced.run")
    assert_nil c.job(h.id).traceparent
    w = worker(client: c, middleware: tracing_chain) { |r| r.register("Untraced.run") { 1 } }
    running(w) { h.wait(timeout: 30) }
    assert_equal [["run Untraced.run", nil]], FakeTracer::SPANS.map { |s| s.first(2) }
  end

  def test_a_bad_traceparent_is_refused_before_anything_is_sent
    c = client(trace: -> { "00-0AF7651916CD43DD8448EB211C80319C-B7AD6B7169203331-01" })
    e = assert_raises(Tenq::InvalidError) { c.submit(type: "T.x") }
    assert_equal "traceparent", e.field
    assert_raises(Tenq::InvalidError) { client.submit(type: "T.x", traceparent: "00-#{'0' * 32}-#{'1' * 16}-01") }
    assert_empty client.list(queue: @queue).jobs
  end

  def test_traces_flow_through_the_inline_mode
    Tenq.worker_middleware.add(chain = tracing_chain.first)
    c = Tenq::Client.new(servers: ["http://127.0.0.1:1"], queue: "q", trace: -> { FakeTracer.current })
    Tenq.handle("Inline.traced") { FakeTracer.current }
    Tenq::Testing.inline! do
      FakeTracer.in_span("request") do
        h = c.submit(type: "Inline.traced")
        parent = FakeTracer::SPANS[0][2]
        assert_equal parent, h.job.traceparent
        assert_equal FakeTracer::SPANS[1][2], h.wait
        assert_equal parent, FakeTracer::SPANS[1][1]
      end
    end
  ensure
    Tenq.worker_middleware.remove(chain)
  end
end
