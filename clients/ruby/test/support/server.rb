# SPDX-License-Identifier: Apache-2.0
# frozen_string_literal: true

require "fileutils"
require "json"
require "net/http"
require "open3"
require "tmpdir"

module TenqTest
  BIN = ENV.fetch("TENQ_BIN", "/opt/tenq-snapshot/tenq")

  # One real `tenq serve` process on a free loopback port (--listen
  # 127.0.0.1:0 --port-file), with a SQLite store in a temporary folder
  # unless given another store. Stopped with SIGKILL, paused with SIGSTOP.
  class Server
    attr_reader :port, :dir, :store, :pid

    def initialize(store: nil, env: {}, args: [], port: 0)
      raise "tenq binary not found at #{BIN} (set TENQ_BIN)" unless File.executable?(BIN)

      @dir = Dir.mktmpdir("tenq-rb-")
      @store = store || "sqlite:#{@dir}/tenq.db"
      @env = env
      @args = args
      start(port)
    end

    def url
      "http://127.0.0.1:#{@port}"
    end

    # Starts the process (again: on the same port when it had one).
    def start(port = @port || 0)
      port_file = File.join(@dir, "port")
      FileUtils.rm_f(port_file)
      log = File.open(File.join(@dir, "server.log"), "a")
      @pid = Process.spawn(@env, BIN, "serve", "--listen", "127.0.0.1:#{port}", "--store", @store,
                           "--port-file", port_file, *@args, out: File::NULL, err: log)
      log.close
      wait_for_port(port_file)
      self
    end

    def kill
      signal("KILL")
      reap
    end

    def stop
      signal("TERM")
      reap
    end

    def pause
      signal("STOP")
    end

    def resume
      signal("CONT")
    end

    def alive?
      return false unless @pid

      Process.waitpid(@pid, Process::WNOHANG).nil?
    rescue Errno::ECHILD
      false
    end

    # GET path with no token; the parsed JSON and the status.
    def get(path, token: nil)
      http = Net::HTTP.new("127.0.0.1", @port)
      req = Net::HTTP::Get.new(path)
      req["Authorization"] = "Bearer #{token}" if token
      res = http.request(req)
      [res.code.to_i, res.body.to_s.empty? ? nil : JSON.parse(res.body)]
    end

    # The server's count of HTTP requests (GET /metrics).
    def requests_served
      body = Net::HTTP.get(URI("#{url}/metrics"))
      line = body.lines.find { |l| l.start_with?("tenq_http_requests_total ") }
      raise "no tenq_http_requests_total in /metrics" unless line

      Integer(line.split[1])
    end

    # The environment of a server whose wall clock is +seconds+ off this
    # machine's (libfaketime; its monotonic clock is left alone).
    def self.clock_off(seconds)
      lib = Dir.glob("/usr/lib/*/faketime/libfaketimeMT.so.1").min
      raise "libfaketime is missing: apt-get install faketime" unless lib

      asan = ENV.fetch("ASAN_OPTIONS", "")
      { "LD_PRELOAD" => lib, "FAKETIME" => format("%+d", seconds),
        "FAKETIME_DONT_FAKE_MONOTONIC" => "1", "FAKETIME_FORCE_MONOTONIC_FIX" => "0",
        # ASan (a sanitized TENQ_BIN) wants to be the first library
        "ASAN_OPTIONS" => [asan, "verify_asan_link_order=0"].reject(&:empty?).join(":") }
    end

    def log
      File.read(File.join(@dir, "server.log"))
    rescue Errno::ENOENT
      ""
    end

    def cleanup
      if @pid
        resume
        kill
      end
      FileUtils.rm_rf(@dir)
    end

    private

    def signal(name)
      Process.kill(name, @pid) if @pid
    rescue Errno::ESRCH
      nil
    end

    def reap
      Process.wait(@pid) if @pid
    rescue Errno::ECHILD
      nil
    ensure
      @pid = nil
    end

    def wait_for_port(port_file)
      deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 30
      loop do
        text = File.exist?(port_file) ? File.read(port_file).strip : ""
        unless text.empty?
          @port = Integer(text)
          return
        end
        raise "tenq serve exited: #{log[-2000..] || log}" if Process.waitpid(@pid, Process::WNOHANG)
        raise "tenq serve did not start in 30 s: #{log}" if Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline

        sleep 0.02
      end
    end
  end

  # A fresh PostgreSQL database on the server TENQ_TEST_PG_URL names
  # (tests/with-pg.sh sets it), for servers that share it.
  module Postgres
    @count = 0

    def self.url
      ENV.fetch("TENQ_TEST_PG_URL", "").then { |u| u.empty? ? nil : u }
    end

    def self.new_database
      base = url or raise "TENQ_TEST_PG_URL is not set"
      @count += 1
      name = "rb_#{Process.pid}_#{@count}"
      out, status = Open3.capture2e("psql", base, "-q", "-c", "CREATE DATABASE #{name}")
      raise "psql: #{out}" unless status.success?

      "#{base.sub(%r{/[^/]*\z}, '')}/#{name}"
    end
  end
end
