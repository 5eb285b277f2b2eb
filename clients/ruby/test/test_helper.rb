# SPDX-License-Identifier: Apache-2.0
# frozen_string_literal: true

$LOAD_PATH.unshift(File.expand_path("../lib", __dir__))
require "logger"
require "stringio"
require "minitest/autorun"
require "tenq"
require_relative "support/server"
require_relative "support/proxy"

module TenqTest
  # The servers a run shares (each test class its own), killed after the run.
  SHARED = {} # rubocop:disable Style/MutableConstant -- filled as test classes run
  Minitest.after_run { SHARED.each_value(&:cleanup) }

  # A test against real servers. Each test gets a queue of its own on the
  # class's shared server; tests that kill or pause a server start their own
  # with {#own_server} (cleaned up after the test).
  class Case < Minitest::Test
    SERIAL = [0] # rubocop:disable Style/MutableConstant -- one counter for every test class

    def setup
      SERIAL[0] += 1
      @queue = "q#{SERIAL[0]}-#{name.gsub(/[^A-Za-z0-9]/, '')[0, 40]}"
      @own = []
      @clients = []
      @proxies = []
      @threads = []
    end

    def teardown
      @threads.each { |t| t.kill if t.alive? }
      @clients.each(&:close)
      @proxies.each(&:close)
      @own.each(&:cleanup)
      Tenq::Testing.disable!
    end

    def server
      SHARED[self.class] ||= Server.new
    end

    def own_server(**opts)
      s = Server.new(**opts)
      @own << s
      s
    end

    # A recording proxy in front of a server (closed after the test).
    def proxy(to)
      p = Proxy.new(to.port)
      @proxies << p
      p
    end

    def client(servers: [server.url], **opts)
      opts = { tenant: "acme", queue: @queue, failover_budget: 10 }.merge(opts)
      c = Tenq::Client.new(servers: servers, **opts)
      @clients << c
      c
    end

    def quiet_logger(io = File.open(File::NULL, "w"))
      Logger.new(io, level: Logger::INFO)
    end

    # A worker on this test's queue with its own registry; the block
    # registers handlers.
    def worker(client: self.client, registry: Tenq::Registry.new, middleware: Tenq::Middleware::Chain.new,
               log: File.open(File::NULL, "w"), **opts)
      yield registry if block_given?
      Tenq::Worker.new(queues: [@queue], client: client, registry: registry, middleware: middleware,
                       logger: quiet_logger(log), **{ poll: 1, grace: 10 }.merge(opts))
    end

    # Runs the worker in a thread during the block, then stops it.
    def running(worker)
      thread = Thread.new { worker.run(signals: []) }
      thread.report_on_exception = false
      @threads << thread
      begin
        yield
      ensure
        worker.stop
        stopped = thread.join(60)
      end
      raise "the worker did not stop within 60 s" unless stopped

      thread.value
    end

    # Waits until the block is true (polling), failing after +timeout+ s.
    def eventually(timeout: 20, what: "condition")
      deadline = mono + timeout
      until (v = yield)
        flunk "#{what} not met within #{timeout} s" if mono > deadline
        sleep 0.02
      end
      v
    end

    # PostgreSQL (tests/with-pg.sh's TENQ_TEST_PG_URL) and, with +pg_gem+,
    # ruby-pg are required: without them the test fails, never skips.
    def need_postgres(pg_gem: false)
      flunk "#{name} needs TENQ_TEST_PG_URL: run under tests/with-pg.sh (run-tests.sh does)" unless Postgres.url
      return unless pg_gem

      begin
        require "pg"
      rescue LoadError
        flunk "#{name} needs ruby-pg (apt-get install ruby-pg; run-tests.sh installs it)"
      end
    end

    def mono
      Process.clock_gettime(Process::CLOCK_MONOTONIC)
    end
  end
end
