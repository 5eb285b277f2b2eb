# SPDX-License-Identifier: Apache-2.0
# frozen_string_literal: true

require_relative "test_helper"

# Graceful stop of a worker process on SIGTERM / SIGINT.
class TestSignals < TenqTest::Case
  FIXTURE = File.expand_path("fixtures/worker_process.rb", __dir__)

  def start_worker(concurrency:, grace:)
    r, w = IO.pipe
    @log = File.join(server.dir, "worker-#{@queue}.log")
    pid = Process.spawn({ "TENQ_SERVER" => server.url }, RbConfig.ruby, FIXTURE, @queue, concurrency.to_s,
                        grace.to_s, out: w, err: @log)
    w.close
    @lines = Queue.new
    @reader = Thread.new { r.each_line { |l| @lines << l.strip } }
    @pid = pid
  end

  def teardown
    if @pid
      begin
        Process.kill("KILL", @pid)
      rescue Errno::ESRCH
        nil
      end
      Process.wait(@pid) rescue nil # rubocop:disable Style/RescueModifier
    end
    super
  end

  def expect_line(pattern, timeout: 30)
    deadline = mono + timeout
    loop do
      left = deadline - mono
      flunk "no line #{pattern} from the worker within #{timeout} s: #{File.read(@log)}" if left <= 0
      line = @lines.empty? ? sleep(0.02) && nil : @lines.pop # Queue#pop(timeout:) is Ruby 3.2
      return line if line&.match?(pattern)
    end
  end

  def exit_status(timeout: 30)
    deadline = mono + timeout
    loop do
      _, status = Process.waitpid2(@pid, Process::WNOHANG)
      if status
        @pid = nil
        return status.exitstatus
      end
      flunk "the worker did not exit within #{timeout} s: #{File.read(@log)}" if mono > deadline
      sleep 0.02
    end
  end

  def test_sigterm_lets_running_jobs_finish_and_report
    c = client
    jobs = c.submit_many(Array.new(2) { { type: "Slow.run", args: { "sleep" => 1.5 } } })
    start_worker(concurrency: 2, grace: 20)
    2.times { expect_line(/\Astart \d+/) }
    Process.kill("TERM", @pid)
    later = c.submit(type: "Slow.run", args: { "sleep" => 0 })
    assert_equal 0, exit_status
    jobs.each { |h| assert_equal "slept", c.job(h.id).result }
    assert_equal "ready", c.job(later.id).state, "no lease after the stop"
  end

  def test_sigint_past_the_grace_period_gives_jobs_back
    c = client
    jobs = c.submit_many(Array.new(2) { { type: "Slow.run", args: { "sleep" => 60 } } })
    start_worker(concurrency: 2, grace: 0.5)
    2.times { expect_line(/\Astart \d+/) }
    t0 = mono
    Process.kill("INT", @pid)
    assert_equal 0, exit_status
    assert_operator mono - t0, :<, 15
    jobs.each do |h|
      j = c.job(h.id)
      assert_equal ["ready", "worker stopped", 1], [j.state, j.error, j.attempts]
    end
  end

  def test_a_second_signal_stops_at_once
    c = client
    h = c.submit(type: "Slow.run", args: { "sleep" => 60 })
    start_worker(concurrency: 1, grace: 60)
    expect_line(/\Astart \d+/)
    t0 = mono
    Process.kill("TERM", @pid)
    sleep 0.3
    Process.kill("TERM", @pid)
    assert_equal 1, exit_status
    assert_operator mono - t0, :<, 15
    assert_includes %w[leased running], c.job(h.id).state, "nothing reported: the lease decides"
  end
end
