# SPDX-License-Identifier: Apache-2.0
# frozen_string_literal: true

require_relative "test_helper"
require_relative "support/gem_home"

# tenq-worker, installed from the gem (and through bundler), against a real
# server: it runs the jobs of the queues it is given, and SIGTERM stops it
# gracefully: the jobs it holds finish, nothing more is leased, exit 0.
class TestCLI < TenqTest::Case
  APP = <<~'RUBY'
    require "tenq"

    Tenq.handle("Slow.run") do |task|
      sleep task.args["s"]
      "done #{task.args['n']}"
    end
  RUBY

  def setup
    super
    @gems = TenqTest::GemHome.new(server.url).install
  end

  def teardown
    @gems&.cleanup
    super
  end

  def app
    dir = @gems.app_dir
    File.write(File.join(dir, "app.rb"), APP)
    dir
  end

  # Starts the command, holds three 3 s jobs running, sends SIGTERM,
  # submits one more once the worker says it stops (and its lease in
  # flight, cut 50 ms after the stop, is over); the three finish, the fourth
  # is left ready.
  def run_and_terminate(cmd, dir)
    c = client
    held = Array.new(3) { |n| c.submit(type: "Slow.run", args: { "s" => 3, "n" => n }) }
    log = File.join(@gems.dir, "worker.log")
    pid = Process.spawn(@gems.env, cmd, chdir: dir, out: log, err: log, pgroup: true)
    begin
      eventually(timeout: 60, what: "three jobs running") { held.all? { |h| c.job(h.id).state == "running" } }
      Process.kill("TERM", pid)
      eventually(what: "the worker stopping") { File.read(log).include?("stopping: no more leases") }
      sleep 0.5
      late = c.submit(type: "Slow.run", args: { "s" => 0, "n" => 9 })
      _, status = Process.wait2(pid)
      pid = nil
      assert status.success?, "exit after SIGTERM: #{status}: #{File.read(log)}"
      assert_equal ["done 0", "done 1", "done 2"], held.map { |h| h.wait(timeout: 5) }, "it finished what it held"
      assert_equal [1, 1, 1], held.map { |h| c.job(h.id).attempts }, "none was given back and run again"
      assert_equal ["ready", 0], c.job(late.id).then { |j| [j.state, j.attempts] }, "nothing leased after SIGTERM"
      assert_match(/stopping: no more leases; 3 job\(s\) in hand/, File.read(log))
      assert_match(/10 runner\(s\).*queue\(s\) #{@queue}/, File.read(log))
    ensure
      if pid
        Process.kill("KILL", -pid)
        Process.wait(pid)
      end
    end
  end

  def test_the_installed_command_runs_and_stops_on_sigterm
    run_and_terminate("tenq-worker -r ./app.rb -q #{@queue} -c 10", app)
  end

  def test_bundle_exec_runs_and_stops_on_sigterm
    dir = app
    File.write(File.join(dir, "Gemfile"), "source \"https://rubygems.org\"\ngem \"tenq\", path: #{@gems.src.inspect}\n")
    @gems.sh("bundle install --local --quiet", dir)
    run_and_terminate("bundle exec tenq-worker -r ./app.rb -q #{@queue} -c 10", dir)
  end

  def test_bad_options_say_what_is_wrong
    dir = app
    out, status = Open3.capture2e(@gems.env, "tenq-worker -r ./app.rb", chdir: dir)
    assert_equal 2, status.exitstatus
    assert_match(/no queue to lease: name them with -q/, out)
    out, status = Open3.capture2e(@gems.env, "tenq-worker -r ./missing.rb -q x", chdir: dir)
    assert_equal 2, status.exitstatus
    assert_match(%r{-r \./missing\.rb: no such file}, out)
    out, status = Open3.capture2e(@gems.env, "tenq-worker -r ./app.rb -q x -c 0", chdir: dir)
    assert_equal 2, status.exitstatus
    assert_match(/concurrency must be 1 to 1000/, out)
    out, status = Open3.capture2e(@gems.env, "tenq-worker --version", chdir: dir)
    assert_equal [0, "tenq-worker #{Tenq::VERSION}\n"], [status.exitstatus, out]
  end
end
