# SPDX-License-Identifier: Apache-2.0
# frozen_string_literal: true

require_relative "tenq/version"
require_relative "tenq/errors"
require_relative "tenq/json_value"
require_relative "tenq/traceparent"
require_relative "tenq/idempotency_keys"
require_relative "tenq/backpressure"
require_relative "tenq/job_fields"
require_relative "tenq/transport"
require_relative "tenq/job_info"
require_relative "tenq/settings_info"
require_relative "tenq/schedule_info"
require_relative "tenq/submit_result"
require_relative "tenq/handle"
require_relative "tenq/middleware"
require_relative "tenq/worker_calls"
require_relative "tenq/queue_calls"
require_relative "tenq/key_calls"
require_relative "tenq/schedule_calls"
require_relative "tenq/workflows"
require_relative "tenq/steps"
require_relative "tenq/client"
require_relative "tenq/lease_row"
require_relative "tenq/task"
require_relative "tenq/registry"
require_relative "tenq/execution"
require_relative "tenq/job"
require_relative "tenq/perform"
require_relative "tenq/testing"
require_relative "tenq/worker"
require_relative "tenq/tx"
require_relative "tenq/settings"

# The Ruby client of tenq, the multi-tenant job queue: a {Client} for the
# HTTP/JSON protocol, the sync/async switch ({Job}), a {Worker}, test modes
# ({Testing}) and tracing hooks ({Middleware::Tracing}).
module Tenq
  @mutex = Mutex.new
  @client = nil
  @handlers = Registry.new
  @worker_middleware = Middleware::Chain.new
  @client_middleware = Middleware::Chain.new
  @settings = nil

  class << self
    # +depends_on: [Tenq.index(0)]+: the first job of the same
    # +submit_many+ or +create_batch+ list.
    # @return [Index]
    def index(position)
      Index.new(Integer(position))
    end

    # The handlers a {Worker} uses unless given others.
    # @return [Registry]
    attr_reader :handlers

    # Middleware around each job a worker runs (and the test modes run).
    # @return [Middleware::Chain]
    attr_reader :worker_middleware

    # Middleware around each submit of the default client.
    # @return [Middleware::Chain]
    attr_reader :client_middleware

    # The default client (the async switch and workers use it when given
    # none): made on first use from TENQ_SERVER / TENQ_TOKEN, or set with
    # {client=} or {configure}.
    # @return [Client]
    def client
      @mutex.synchronize { @client ||= Client.new(middleware: @client_middleware) }
    end

    # @param client [Client, nil]
    def client=(client)
      @mutex.synchronize { @client = client }
    end

    # Makes the default client with these options ({Client#initialize}).
    # @return [Client]
    def configure(**options)
      options[:middleware] ||= @client_middleware
      self.client = Client.new(**options)
    end

    # The settings of config/tenq.yml in force ({configure_from}), or nil.
    # @return [Settings, nil]
    attr_reader :settings

    # Makes the default client from settings (config/tenq.yml: servers,
    # token, tenant, queue) and keeps them for tenq-worker (queues,
    # concurrency, ...).
    # @param settings [Settings]
    # @return [Client]
    def configure_from(settings)
      @settings = settings
      configure(**settings.client_options)
    end

    # Registers a handler on the default registry:
    #   Tenq.handle("email.send") { |task| Mailer.deliver(task.args) }
    # @return [Registry]
    def handle(type, callable = nil, timeout: nil, &block)
      @handlers.register(type, callable, timeout: timeout, &block)
    end
  end
end

# In a Rails application (Rails loaded first, as Bundler.require does): the
# Railtie, and with ActiveJob the adapter.
require_relative "tenq/railtie" if defined?(Rails::Railtie)
