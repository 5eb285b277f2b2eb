# SPDX-License-Identifier: Apache-2.0
# frozen_string_literal: true

require "logger"
require "socket"
require_relative "worker/leasing"
require_relative "worker/running"
require_relative "worker/reporting"

module Tenq
  # Leases jobs from a server and runs their handlers, as `tenq work` and
  # libtenq's in-process worker do (docs/WORKER.md):
  #
  # - one leaser thread leases up to the free capacity in one request, with
  #   the outcomes of the jobs run since (POST /v1/lease "outcomes"), and
  #   long-polls when idle; with short jobs it leases a little ahead of the
  #   runners (+prefetch+), in halves of that, the next half asked for as
  #   the runners start on the last;
  # - +concurrency+ runner threads run the handlers through the middleware;
  # - one reporter thread heartbeats each lease at a third of its length
  #   (carrying the progress a handler reports), notices cancellation, says
  #   when a handler began (after 10 ms), stops handlers past their timeout,
  #   and sends outcomes itself (POST /v1/outcomes) while the leaser is in a
  #   long poll, or while the queue has a backlog (a lease carrying outcomes
  #   waits for their commit; one without is answered at once);
  # - the thread that called {#run} waits for stops: SIGTERM/SIGINT (through
  #   a self-pipe: a signal handler takes no lock) stop leasing, let running
  #   jobs finish within +grace+ seconds, report their outcomes, and give
  #   back (fail with retry_in 0, "worker stopped") what is cut off; a
  #   second signal stops at once.
  #
  # A server that is away is retried with backoff (100 ms doubling to 5 s);
  # outcomes are kept in order and reported when it is back.
  #
  # A handler is stopped by a {Stopped} exception raised in its thread (it
  # passes +rescue => e+; +ensure+ blocks run): at once for a timeout, a
  # lost lease and the end of the grace period, and +cancel_grace+ seconds
  # after a cancellation was noticed ({Task#cancelled?} is true at once, so
  # a handler that checks it can stop cleanly first).
  class Worker
    include Leasing
    include Running
    include Reporting

    # Stops a blocking request of the leaser or reporter thread.
    class Interrupt < Exception; end

    BACKOFF_FIRST = 0.1
    BACKOFF_MAX = 5.0
    HEARTBEAT_MIN = 0.1
    PROGRESS_EVERY = 0.5
    START_AFTER = 0.010
    INTERRUPT_AFTER = 0.050
    QUIET_WAIT = 2.0

    # @return [String] the name recorded on the jobs it runs
    attr_reader :name
    # @return [Hash{Symbol => Integer}] jobs succeeded, failed, refused, lost
    attr_reader :counts
    # @return [Client] the client it leases with (a handler's {Task#client})
    attr_reader :client

    # @param queues [Array<String>, String] 1 to 64 queues
    # @param concurrency [Integer] handlers at once (runner threads)
    # @param prefetch [Integer, :auto] jobs leased ahead of free runners, a
    #   local queue for short jobs: 0 leases only what runners can take now;
    #   :auto (the default) leases ahead only while jobs are short, about 5 ms
    #   of work, at most 1,000 jobs (see {Leasing#capacity})
    # @param types [Array<String>, nil] lease only these types (default: every type)
    # @param timeout [Numeric, nil] seconds a job may run (a handler's own timeout wins)
    # @param poll [Numeric] longest lease long poll, seconds
    # @param grace [Numeric] seconds running jobs may finish after a stop
    # @param cancel_grace [Numeric] seconds a cancelled handler may take to stop by itself
    def initialize(queues:, client: nil, concurrency: 5, prefetch: :auto, types: nil, timeout: nil, poll: 30, grace: 30,
                   cancel_grace: 5, registry: Tenq.handlers, middleware: Tenq.worker_middleware, logger: nil,
                   name: nil)
      @queues = Array(queues).map(&:to_s)
      @concurrency = concurrency
      @prefetch = prefetch == :auto ? :auto : Integer(prefetch)
      check_options
      @client = client || Tenq.client
      @types = types && Array(types).map(&:to_s)
      @timeout = timeout
      @poll = poll
      @columns = true # the lease's jobs as columns (Leasing#lease_once)
      @grace = grace
      @cancel_grace = cancel_grace
      @registry = registry
      @middleware = middleware
      @logger = logger || default_logger
      @name = name || "#{Socket.gethostname}/pid-#{Process.pid}"
      @counts = Hash.new(0)
      @stops = 0
      @ran = false
    end

    # Registers a handler for a type on this worker's registry.
    # @return [self]
    def handle(type, callable = nil, timeout: nil, &block)
      @registry.register(type, callable, timeout: timeout, &block)
      self
    end

    # Runs until stopped (by {#stop} or a signal). Returns true after a
    # graceful stop, false when a second stop cut it short.
    # @param signals [Array<String>] signals that stop it (trapped while it
    #   runs; only on the main thread)
    # @raise [Error] the server refused the worker (a bad token, a queue it may not use)
    def run(signals: %w[TERM INT])
      raise Error, "a worker runs once" if @ran

      @ran = true
      setup
      previous = trap_signals(signals)
      start_threads
      control_loop
      join_threads
      raise @fatal if @fatal

      !@abandon
    ensure
      restore_signals(previous) if previous
      close_pipe
    end

    # Asks the worker to stop: the first call stops gracefully, the second
    # at once. Safe in a signal handler (no lock: a counter and a byte
    # written to a pipe).
    # @return [void]
    def stop
      @stops += 1
      @wake_w&.write_nonblock(".", exception: false)
    rescue IOError
      nil
    end

    # @api private: no more start or heartbeat for a task (+on+ false: they
    # go on again); waits up to QUIET_WAIT seconds for one in flight.
    def quiet(task, on)
      @mutex.synchronize do
        task.quiet = on
        deadline = now + QUIET_WAIT
        @cv_quiet.wait(@mutex, deadline - now) while on && task.calling && now < deadline
      end
    end

    # @api private: a step parked the task's job ({Parked}): its lease is
    # over, so nothing heartbeats it and its outcome is dropped (counted
    # :parked).
    def parked(task)
      @mutex.synchronize do
        task.parked = true
        task.lost = true
      end
    end

    # @api private: a handler's progress
    def progress(task, value)
      @mutex.synchronize do
        task.set_progress(value)
        @cv_report.signal
      end
    end

    private

    def check_options
      raise ArgumentError, "a worker leases from 1 to 64 queues" unless @queues.size.between?(1, 64)
      unless @concurrency.is_a?(Integer) && @concurrency.between?(1, 1000)
        raise ArgumentError, "concurrency must be 1 to 1000"
      end
      return if @prefetch == :auto || !@prefetch.negative?

      raise ArgumentError, "prefetch must be :auto or 0 or more"
    end

    def default_logger
      Logger.new($stderr, progname: "tenq worker", level: Logger::INFO)
    end

    def setup
      setup_sync
      @hand = {}
      @ready = []
      @done = []
      @running = 0
      @stopping = false
      @past_grace = false
      @abandon = false
      @leaser_done = false
      @reporter_done = false
      @runners_alive = @concurrency
      @active = 0
      @leasing = false
      @lease_wait = nil
      @lease_half = 0
      @backlog = false
      @run_time = nil
      @lease_since = nil
      @lease_interrupted = false
      @outage = false
      @report_retry_at = nil
      @report_failed = false
      @fatal = nil
    end

    # The lock, the conditions the threads wait on, and the self-pipe that
    # wakes the control thread.
    def setup_sync
      @mutex = Mutex.new
      @cv_run = ConditionVariable.new
      @cv_lease = ConditionVariable.new
      @cv_report = ConditionVariable.new
      @cv_quiet = ConditionVariable.new
      @wake_r, @wake_w = IO.pipe
    end

    def now
      Process.clock_gettime(Process::CLOCK_MONOTONIC)
    end

    def trap_signals(signals)
      return nil unless Thread.current == Thread.main

      signals.to_h { |sig| [sig, Signal.trap(sig) { stop }] }
    end

    def restore_signals(previous)
      previous.each { |sig, handler| Signal.trap(sig, handler || "DEFAULT") }
    end

    def start_threads
      @logger.info("worker #{@name}: #{@concurrency} runner(s), prefetch #{@prefetch}, queue(s) #{@queues.join(', ')}")
      @runners = Array.new(@concurrency) { |i| thread("runner #{i}") { runner_loop } }
      @reporter = thread("reporter") { reporter_loop }
      @leaser = thread("leaser") { leaser_loop }
    end

    def thread(label)
      Thread.new do
        Thread.current.name = "tenq #{label}"
        Thread.current.report_on_exception = false
        yield
      rescue Exception => e # rubocop:disable Lint/RescueException -- a dead thread must stop the worker
        @logger.error("#{label}: #{e.class}: #{e.message}") unless e.is_a?(Interrupt)
        stop unless e.is_a?(Interrupt)
      end
    end

    # Waits for stops and the end of the grace period until the reporter
    # is done.
    def control_loop
      seen = 0
      deadline = nil
      loop do
        stops = @stops
        deadline ||= first_stop if stops.positive? && seen.zero?
        abandon if stops >= 2 && !@abandon
        seen = stops
        end_grace if deadline && !@past_grace && now >= deadline
        interrupt_lease if @stopping
        break if @mutex.synchronize { @reporter_done }

        wait_for_wake(deadline)
      end
    end

    def wait_for_wake(deadline)
      timeout = deadline && !@past_grace ? [deadline - now, 0].max : nil
      timeout = [timeout || INTERRUPT_AFTER, INTERRUPT_AFTER].min if @stopping && !@lease_interrupted && !@leaser_done
      IO.select([@wake_r], nil, nil, timeout)
      @wake_r.read_nonblock(4096, exception: false)
    end

    def first_stop
      @mutex.synchronize do
        @stopping = true
        @logger.info("stopping: no more leases; #{@ready.size + @running + @done.size} job(s) in hand")
        broadcast_all
      end
      now + @grace
    end

    # Past the grace period: running handlers are stopped, queued jobs given back.
    def end_grace
      @mutex.synchronize do
        @past_grace = true
        running = @hand.values.select { |t| t.state == :running }
        @logger.warn("grace period over: stopping #{running.size} running job(s)") unless running.empty?
        running.each { |t| stop_task(t, :shutdown) }
        broadcast_all
      end
    end

    def abandon
      @mutex.synchronize do
        @abandon = true
        @past_grace = true
        @logger.warn("stopping now: outcomes not reported are abandoned")
        @hand.each_value { |t| stop_task(t, :shutdown) if t.state == :running }
        broadcast_all
      end
      [@leaser, @reporter].each { |t| t.raise(Interrupt) if t&.alive? }
    end

    # A stop cuts the leaser's request short, but never one younger than
    # 50 ms: a lease the server answered at once is read, not lost.
    def interrupt_lease
      return if @lease_interrupted

      @mutex.synchronize do
        since = @lease_since
        return unless since && now - since >= INTERRUPT_AFTER

        @lease_interrupted = true
        @leaser.raise(Interrupt)
      end
    end

    def broadcast_all
      @cv_run.broadcast
      @cv_lease.broadcast
      @cv_report.broadcast
    end

    # Wakes the control thread.
    def wake_control
      @wake_w.write_nonblock(".", exception: false)
    rescue IOError
      nil
    end

    def join_threads
      limit = @abandon ? 1 : nil
      [@leaser, *@runners, @reporter].each { |t| t.join(limit) }
    end

    def close_pipe
      [@wake_r, @wake_w].each { |io| io&.close unless io&.closed? }
    end

    # Stops a task's handler (mutex held): a flag it can read, and (for a
    # cancellation after +cancel_grace+) a {Stopped} raised in its thread.
    def stop_task(task, reason)
      task.stop!(reason)
      interrupt_task(task, reason) unless reason == :cancelled && @cancel_grace.positive?
    end

    def interrupt_task(task, reason)
      return unless task.state == :running && task.thread && !task.interrupted

      task.interrupted = true
      task.thread.raise(Stopped.new(reason))
    end
  end
end
