# SPDX-License-Identifier: Apache-2.0
# frozen_string_literal: true

require_relative "test_helper"
require_relative "support/gem_home"
require "json"

# The ActiveJob adapter and the Railtie in a Rails application generated
# here by Debian's rails 6.1 (`rails new`, its Gemfile with the gem added,
# `bundle install --local`): config/tenq.yml and queue_adapter = :tenq;
# jobs enqueued from a controller (through the application's Rack stack)
# and from `rails runner`; `bundle exec tenq-worker` runs them (its queues
# from tenq.yml), with retry_on, discard_on, enqueue_at, tenants from an
# argument and from a block, then stops on SIGTERM.
class TestRails < TenqTest::Case
  NEW_APP = "rails new app --api --skip-bundle --skip-git --skip-active-record --skip-active-storage " \
            "--skip-action-mailer --skip-action-mailbox --skip-action-text --skip-action-cable " \
            "--skip-sprockets --skip-javascript --skip-webpack-install --skip-spring --skip-listen " \
            "--skip-bootsnap --skip-test --skip-system-test --skip-turbolinks --skip-jbuilder --quiet"

  # app/jobs, a file a constant (Zeitwerk's rule)
  JOBS = {
    "performed.rb" => <<~'RUBY',
      # one line of JSON a run, for the test to read
      module Performed
        def self.record(job, *what)
          File.open(Rails.root.join("tmp", "performed.log"), "a") do |f|
            f.puts(JSON.generate([job.class.name, job.executions, job.tenq_job&.attempt, *what]))
          end
        end
      end
    RUBY
    "application_job.rb" => <<~'RUBY',
      class ApplicationJob < ActiveJob::Base
        queue_as "QUEUE"
      end
    RUBY
    "report_job.rb" => <<~'RUBY',
      class ReportJob < ApplicationJob
        tenq_tenant argument: :account
        queue_with_priority 5

        def perform(id, account:)
          Performed.record(self, id, account)
        end
      end
    RUBY
    "flaky_error.rb" => "class FlakyError < StandardError; end\n",
    "flaky_job.rb" => <<~'RUBY',
      class FlakyJob < ApplicationJob
        retry_on FlakyError, wait: 1, attempts: 3

        def perform(name)
          Performed.record(self, name)
          raise FlakyError, "not yet" if executions < 3
        end
      end
    RUBY
    "doomed_job.rb" => <<~'RUBY',
      class DoomedJob < ApplicationJob
        retry_on FlakyError, wait: 1, attempts: 2

        def perform
          Performed.record(self)
          raise FlakyError, "never"
        end
      end
    RUBY
    "gone_error.rb" => "class GoneError < StandardError; end\n",
    "gone_job.rb" => <<~'RUBY',
      class GoneJob < ApplicationJob
        discard_on GoneError

        def perform
          Performed.record(self)
          raise GoneError, "the record went away"
        end
      end
    RUBY
    "unhandled_job.rb" => <<~'RUBY',
      class UnhandledJob < ApplicationJob
        tenq_options max_attempts: 2

        def perform
          Performed.record(self)
          raise ArgumentError, "bad input"
        end
      end
    RUBY
    "later_job.rb" => <<~'RUBY',
      class LaterJob < ApplicationJob
        tenq_tenant { |job| "t-#{job.arguments.first}" }

        def perform(who)
          Performed.record(self, who, Time.now.to_f)
        end
      end
    RUBY
    "moved_job.rb" => <<~'RUBY',
      class MovedJob < ApplicationJob
        retry_on FlakyError, wait: 60, attempts: 2, queue: "QUEUE-slow"

        def perform
          Performed.record(self)
          raise FlakyError, "elsewhere"
        end
      end
    RUBY
    "own_adapter_job.rb" => <<~'RUBY'
      class OwnAdapterJob < ApplicationJob
        self.queue_adapter = ActiveJob::QueueAdapters::TenqAdapter.new(tenant: ->(job) { "own-#{job.arguments.first}" })

        def perform(who)
          Performed.record(self, who)
        end
      end
    RUBY
  }.freeze

  CONTROLLER = <<~RUBY
    class ReportsController < ApplicationController
      def create
        job = ReportJob.perform_later(params.require(:id).to_i, account: params.require(:account))
        render json: { job_id: job.job_id, tenq_id: job.provider_job_id }, status: :accepted
      end
    end
  RUBY

  ENQUEUE = <<~RUBY
    require "rack/mock"
    request = Rack::MockRequest.env_for("/reports", method: "POST", params: { id: 7, account: "globex" },
                                        "HTTP_HOST" => "localhost")
    status, _headers, body = Rails.application.call(request)
    text = +""
    body.each { |part| text << part }
    raise "POST /reports: \#{status} \#{text}" unless status == 202

    later = LaterJob.set(wait: 3.seconds).perform_later("zed")
    ids = { "report" => JSON.parse(text)["tenq_id"], "flaky" => FlakyJob.perform_later("f").provider_job_id,
            "doomed" => DoomedJob.perform_later.provider_job_id, "gone" => GoneJob.perform_later.provider_job_id,
            "unhandled" => UnhandledJob.perform_later.provider_job_id, "later" => later.provider_job_id,
            "later_at" => later.scheduled_at, "moved" => MovedJob.perform_later.provider_job_id,
            "own" => OwnAdapterJob.perform_later("x").provider_job_id }
    bulk = [ReportJob.new(1, account: "a1"), ReportJob.new(2, account: "a2")]
    ids["bulk_count"] = Tenq::ActiveJob.perform_all_later(bulk)
    ids["bulk"] = bulk.map(&:provider_job_id)
    puts JSON.generate(ids)
  RUBY

  def setup
    super
    @gems = TenqTest::GemHome.new(server.url)
    @env = { "TENQ_SERVER" => server.url, "RUBYLIB" => nil, "RUBYOPT" => nil, "BUNDLE_GEMFILE" => nil,
             "BUNDLE_USER_HOME" => File.join(@gems.dir, "bundle-home"), "MT_NO_PLUGINS" => nil,
             "RAILS_ENV" => "development" }
  end

  def teardown
    @gems&.cleanup
    super
  end

  def sh(cmd, dir)
    out, status = Open3.capture2e(@env, "sh", "-c", cmd, chdir: dir)
    assert status.success?, "#{cmd} failed (#{status}): #{out}"
    out
  end

  def write(dir, path, text)
    FileUtils.mkdir_p(File.dirname(File.join(dir, path)))
    File.write(File.join(dir, path), text)
  end

  # `rails new`, then what the README says to add.
  def make_app
    sh(NEW_APP, @gems.dir)
    app = File.join(@gems.dir, "app")
    File.write(File.join(app, "Gemfile"), "\ngem \"tenq\", path: #{@gems.src.inspect}\n", mode: "a")
    sh("bundle install --local --quiet", app)
    rb = File.join(app, "config", "application.rb")
    File.write(rb, File.read(rb).sub(/(class Application < Rails::Application\n)/,
                                     "\\1    config.active_job.queue_adapter = :tenq\n"))
    write(app, "config/tenq.yml", <<~YAML)
      default: &default
        servers: <%= ENV.fetch("TENQ_SERVER") %>
        tenant: acme
        queues: [#{@queue}]
        concurrency: 5
      development:
        <<: *default
    YAML
    JOBS.each { |file, text| write(app, "app/jobs/#{file}", text.sub("QUEUE", @queue)) }
    write(app, "app/controllers/reports_controller.rb", CONTROLLER)
    write(app, "config/routes.rb", "Rails.application.routes.draw { post \"/reports\", to: \"reports#create\" }\n")
    write(app, "script/enqueue.rb", ENQUEUE)
    app
  end

  def performed(app)
    path = File.join(app, "tmp", "performed.log")
    File.exist?(path) ? File.readlines(path).map { |l| JSON.parse(l) } : []
  end

  def test_active_job_in_a_generated_rails_app
    c = client
    c.set_queue(@queue, backoff: "fixed", backoff_base_ms: 200)
    app = make_app
    ids = JSON.parse(sh("bundle exec rails runner script/enqueue.rb", app).lines.last)
    check_enqueued(c, ids)

    log = File.join(@gems.dir, "worker.log")
    pid = Process.spawn(@env, "bundle exec tenq-worker", chdir: app, out: log, err: log, pgroup: true)
    begin
      check_performed(c, ids, app)
      Process.kill("TERM", pid)
      _, status = Process.wait2(pid)
      pid = nil
      assert status.success?, "tenq-worker's exit after SIGTERM: #{status}: #{File.read(log)}"
      assert_match(/5 runner\(s\).*queue\(s\) #{@queue}/, File.read(log), "its queues and concurrency from tenq.yml")
    ensure
      if pid
        Process.kill("KILL", -pid)
        Process.wait(pid)
      end
    end
  end

  # What perform_later and set(wait:) made, before any worker runs.
  def check_enqueued(client, ids)
    report = client.job(ids["report"])
    assert_equal ["ReportJob", @queue, "globex", -5, "ready"],
                 [report.type, report.queue, report.tenant, report.priority, report.state],
                 "from the controller: the tenant from an argument, ActiveJob's priority 5 as tenq's -5"
    assert_equal ["ReportJob", [7, { "account" => "globex", "_aj_ruby2_keywords" => ["account"] }]],
                 report.args.values_at("job_class", "arguments")
    assert_equal "acme", client.job(ids["flaky"]).tenant, "tenq.yml's tenant"
    later = client.job(ids["later"])
    assert_equal "t-zed", later.tenant, "the tenant from a block"
    assert_in_delta ids["later_at"] * 1000, later.run_at, 2, "enqueue_at: the job's run_at"
    # (no worker runs yet: a job for 3 s from now is scheduled, however slow the machine)
    assert_includes %w[scheduled ready], later.state
    assert_equal "own-x", client.job(ids["own"]).tenant, "the tenant from the adapter's block"
    assert_equal 2, ids["bulk_count"]
    assert_equal [%w[ReportJob a1], %w[ReportJob a2]], ids["bulk"].map { |id|
                                                         client.job(id).then do |j|
                                                           [j.type, j.tenant]
                                                         end
                                                       },
                 "perform_all_later: one submit_many"
  end

  def check_performed(client, ids, app)
    report = client.wait(ids["report"], timeout: 60)
    assert_equal "succeeded", report.state
    flaky = client.wait(ids["flaky"], timeout: 60)
    assert_equal %w[succeeded], [flaky.state]
    assert_equal [1, 2, 3], client.attempts(ids["flaky"]).map(&:attempt), "retry_on: one tenq job, three attempts"
    doomed = client.wait(ids["doomed"], timeout: 60)
    assert_equal ["dead", 2], [doomed.state, doomed.attempts]
    assert_match(/retry_on gave up after 2 attempt\(s\): FlakyError: never/, doomed.error)
    gone = client.wait(ids["gone"], timeout: 60)
    assert_equal ["succeeded", 1, { "discarded" => "GoneError: the record went away" }],
                 [gone.state, gone.attempts, gone.result]
    unhandled = client.wait(ids["unhandled"], timeout: 60)
    assert_equal ["dead", 2, "ArgumentError: bad input"], [unhandled.state, unhandled.attempts, unhandled.error],
                 "an exception no retry_on takes: tenq's retries, up to tenq_options max_attempts"
    later = client.wait(ids["later"], timeout: 60)
    assert_equal "succeeded", later.state
    moved = client.wait(ids["moved"], timeout: 60)
    assert_equal ["succeeded", 1], [moved.state, moved.attempts], "a retry to another queue ends this job"
    elsewhere = client.list(queue: "#{@queue}-slow").jobs
    assert_equal [["MovedJob", "scheduled", moved.args["job_id"]]],
                 elsewhere.map { |j| [j.type, j.state, j.args["job_id"]] }, "and is a new job there"
    assert_equal %w[succeeded succeeded succeeded], (ids["bulk"] + [ids["own"]]).map { |id|
                                                      client.wait(id, timeout: 60).state
                                                    }
    runs = performed(app)
    assert_equal [["ReportJob", 1, 1, 1, "a1"], ["ReportJob", 1, 1, 2, "a2"], ["ReportJob", 1, 1, 7, "globex"]],
                 runs.select { |r| r[0] == "ReportJob" }.sort_by { |r| r[3] }
    assert_equal [[1, 1], [2, 2], [3, 3]], runs.select { |r| r[0] == "FlakyJob" }.map { |r| r[1, 2] },
                 "ActiveJob's executions are tenq's attempts"
    assert_equal 2, runs.count { |r| r[0] == "DoomedJob" }
    ran_at = runs.find { |r| r[0] == "LaterJob" }.last
    assert_operator ran_at, :>=, ids["later_at"] - 0.05, "not before its time"
  end
end
