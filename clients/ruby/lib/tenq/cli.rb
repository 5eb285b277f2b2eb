# SPDX-License-Identifier: Apache-2.0
# frozen_string_literal: true

require "optparse"
require "logger"
require_relative "../tenq"

module Tenq
  # +tenq-worker+: loads an application (a file, or a Rails application's
  # folder) and runs a {Worker} on its queues until SIGTERM or SIGINT (the
  # jobs it holds finish within the grace period; a second signal stops at
  # once).
  #
  #   tenq-worker -r ./app.rb -q reports -c 10
  #   bundle exec tenq-worker                  # in a Rails application: config/tenq.yml's queues
  class CLI
    USAGE = "Usage: tenq-worker [-r FILE|DIR] -q QUEUE[,QUEUE] [-c N] [options]"

    # An option or a setting that is wrong (exit 2, with the usage line).
    class UsageError < ArgumentError; end

    # @return [Hash{Symbol => Object}] the options as parsed
    attr_reader :options

    def initialize(argv, out: $stdout, err: $stderr)
      @argv = argv.dup
      @out = out
      @err = err
      @options = { require: [], queues: [] }
    end

    # Parses, loads and runs. The exit status: 0 after a graceful stop, 1
    # when a second signal cut it short or the server refused the worker,
    # 2 for bad options or settings. What the application's own code raises
    # while it loads is raised (Ruby prints it, exit 1).
    # @return [Integer]
    def run
      parse
      return 0 if @options[:done]

      load_application
      worker = build_worker
      worker.run ? 0 : 1
    rescue OptionParser::ParseError, UsageError, InvalidError => e
      @err.puts("tenq-worker: #{e.message}")
      @err.puts(USAGE)
      2
    rescue Error => e
      @err.puts("tenq-worker: #{e.class}: #{e.message}")
      1
    end

    # @return [void]
    def parse
      parser.parse!(@argv)
      raise UsageError, "unexpected argument(s): #{@argv.join(' ')}" unless @argv.empty?
    end

    private

    def parser
      OptionParser.new do |o|
        o.banner = USAGE
        application_options(o)
        worker_options(o)
        o.on("-v", "--verbose", "log every job (debug)") { @options[:verbose] = true }
        o.on("-V", "--version", "print the version") { done(@out.puts("tenq-worker #{VERSION}")) }
        o.on("-h", "--help", "this text") { done(@out.puts(o)) }
      end
    end

    # What to load and where the settings come from.
    def application_options(opts)
      opts.on("-r", "--require PATH", "a file to load (its handlers and job classes), or a Rails " \
                                      "application's folder (default: . when it has config/environment.rb)") do |v|
        @options[:require] << v
      end
      opts.on("-C", "--config FILE", "settings outside Rails (default: config/tenq.yml when there)") do |v|
        @options[:config] = v
      end
      opts.on("-e", "--environment ENV", "the settings' section and RAILS_ENV (default: development)") do |v|
        @options[:env] = v
      end
      opts.on("-s", "--server URL[,URL]", "servers (default: tenq.yml's, else TENQ_SERVER)") do |v|
        @options[:servers] = v
      end
      opts.on("--token TOKEN", "the worker's token (default: tenq.yml's, else TENQ_TOKEN)") { |v| @options[:token] = v }
    end

    # What the worker leases and how it runs.
    def worker_options(opts)
      opts.on("-q", "--queue NAME[,NAME]", "queues to lease (repeatable; default: tenq.yml's queues)") do |v|
        @options[:queues].concat(v.split(",").map(&:strip).reject(&:empty?))
      end
      opts.on("-c", "--concurrency N", Integer, "handlers at once (default: tenq.yml's, else 5)") do |v|
        @options[:concurrency] = v
      end
      opts.on("-t", "--types TYPE[,TYPE]", "lease only these job types") { |v| @options[:types] = v.split(",") }
      opts.on("-g", "--grace SECONDS", Float, "after SIGTERM, running jobs may finish this long (30)") do |v|
        @options[:grace] = v
      end
      opts.on("--timeout SECONDS", Float, "a job's longest run") { |v| @options[:timeout] = v }
      opts.on("--prefetch N", "jobs leased ahead of free threads: auto (default) or a number") do |v|
        @options[:prefetch] = Settings.prefetch(v)
      end
    end

    def done(_ignored)
      @options[:done] = true
    end

    # Loads what -r names; a Rails application (its Railtie reads its
    # config/tenq.yml) or, outside Rails, the settings file first.
    def load_application
      ENV["RAILS_ENV"] = @options[:env] if @options[:env]
      paths = @options[:require]
      paths = ["."] if paths.empty? && rails_app?(".")
      load_settings unless paths.any? { |p| rails_app?(p) }
      paths.each { |p| load_path(p) }
    end

    def rails_app?(path)
      File.directory?(path) && File.file?(File.join(path, "config", "environment.rb"))
    end

    # A Rails application: its application.rb (Rails and its gems), the
    # Railtie (tenq was loaded before Rails, so it did not load it), then
    # its environment.rb (the initializers).
    def load_path(path)
      if rails_app?(path)
        require File.expand_path(File.join(path, "config", "application.rb"))
        require_relative "railtie"
        require File.expand_path(File.join(path, "config", "environment.rb"))
      elsif File.file?(path)
        require File.expand_path(path)
      else
        raise UsageError, "-r #{path}: no such file, nor a Rails application's folder"
      end
    end

    def load_settings
      path = @options[:config] || ("config/tenq.yml" if File.file?("config/tenq.yml"))
      Tenq.configure_from(Settings.load(path, env: @options[:env])) if path
    end

    def build_worker
      settings = Tenq.settings || Settings.new
      queues = @options[:queues].empty? ? settings.queues : @options[:queues]
      raise UsageError, "no queue to lease: name them with -q (or queues: in tenq.yml)" if Array(queues).empty?

      Tenq.configure(**client_overrides(settings)) if @options[:servers] || @options[:token]
      opts = settings.worker_options.merge(@options.slice(:concurrency, :grace, :timeout, :prefetch, :types))
      Worker.new(queues: queues, logger: logger, **opts)
    rescue ArgumentError => e # the worker's checks of its options (-c 0, 65 queues)
      raise UsageError, e.message
    end

    def client_overrides(settings)
      opts = settings.client_options
      opts[:servers] = @options[:servers] if @options[:servers]
      opts[:token] = @options[:token] if @options[:token]
      opts
    end

    def logger
      l = Logger.new($stdout, progname: "tenq-worker")
      l.level = @options[:verbose] ? Logger::DEBUG : Logger::INFO
      Tenq.worker_middleware.add(Middleware::Logging.new(l)) if @options[:verbose]
      l
    end
  end
end
