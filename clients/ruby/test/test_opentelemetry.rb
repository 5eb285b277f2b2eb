# SPDX-License-Identifier: Apache-2.0
# frozen_string_literal: true

require_relative "test_helper"
require "json"
require "open3"

# The README's OpenTelemetry recipe, run as written in a process of its own
# (it adds middleware to the process's defaults), against a real server and
# worker, with test/support/otel/opentelemetry.rb standing in for the
# opentelemetry-api gem (Debian packages none): the submit's producer span,
# the job's traceparent and the run's consumer span are one trace, the run
# the submit's child.
class TestOpenTelemetry < TenqTest::Case
  ROOT = File.expand_path("..", __dir__)

  def recipe
    text = File.read(File.join(ROOT, "README.md"))
    text[/^<!-- opentelemetry\.rb -->\n```ruby\n(.*?)^```/m, 1] or flunk "no opentelemetry.rb block in the README"
  end

  DRIVER = <<~'RUBY'
    Tenq.configure(servers: [ENV.fetch("TENQ_SERVER")], tenant: "acme", queue: ENV.fetch("QUEUE"))
    worker = Tenq::Worker.new(queues: [ENV.fetch("QUEUE")], poll: 1, logger: Logger.new(nil))
    worker.handle("Traced.run") { OpenTelemetry::Trace.current_span.context.hex_span_id }
    handle = nil
    TENQ_TRACER.in_span("POST /reports", kind: :server) { handle = Tenq.client.submit(type: "Traced.run") }
    thread = Thread.new { worker.run(signals: []) }
    result = handle.wait(timeout: 30)
    worker.stop
    thread.join
    spans = OpenTelemetryStandIn.finished.map do |s|
      { "name" => s.name, "kind" => s.kind.to_s, "trace" => s.context.hex_trace_id, "id" => s.context.hex_span_id,
        "parent" => s.parent_span_id, "attributes" => s.attributes }
    end
    puts JSON.generate("spans" => spans, "result" => result, "traceparent" => Tenq.client.job(handle.id)["traceparent"])
  RUBY

  def test_the_recipe_links_the_run_to_the_submit
    dir = Dir.mktmpdir("tenq-rb-otel-")
    script = File.join(dir, "recipe.rb")
    File.write(script, "#{recipe}\n#{DRIVER}")
    env = { "TENQ_SERVER" => server.url, "QUEUE" => @queue, "RUBYLIB" => nil, "RUBYOPT" => nil }
    otel = File.join(__dir__, "support", "otel")
    out, status = Open3.capture2e(env, "ruby", "-I", File.join(ROOT, "lib"), "-I", otel, script)
    assert status.success?, out
    got = JSON.parse(out.lines.last)
    spans = got["spans"].to_h { |s| [s["kind"], s] }
    request, producer, consumer = spans.values_at("server", "producer", "consumer")
    assert_equal ["#{@queue} publish", "#{@queue} process"], [producer["name"], consumer["name"]]
    assert_equal [request["trace"]] * 3, [request, producer, consumer].map { |s| s["trace"] }, "one trace"
    assert_equal request["id"], producer["parent"], "the submit's span is the request's child"
    assert_equal producer["id"], consumer["parent"], "the run's span is the submit's child"
    assert_equal "00-#{producer['trace']}-#{producer['id']}-01", got["traceparent"], "the job carries the submit's"
    assert_equal consumer["id"], got["result"], "the handler ran inside the run's span"
    assert_equal "tenq", consumer["attributes"]["messaging.system"]
  ensure
    FileUtils.rm_rf(dir) if dir
  end
end
