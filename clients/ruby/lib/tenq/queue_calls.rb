# SPDX-License-Identifier: Apache-2.0
# frozen_string_literal: true

require "json"
require "uri"

module Tenq
  # Queues and tenants (docs/API.md, "Tenants and queues"): read and change
  # their settings, pause and resume. Included in {Client}. Each call may be
  # sent again after a broken connection: the same request sets the same
  # state.
  module QueueCalls
    # @return [QueueInfo]
    def queue(name)
      QueueInfo.new(transport.call("GET", queue_path(name), nil, retry_safe: true))
    end

    # PUT /v1/queues/{name} (admin) with settings of docs/SEMANTICS.md:
    # +lease_ms:+, +max_attempts:+, +timeout_ms:+, +paused:+, +rate:+,
    # +tenant_rate:+, +rate_period_ms:+, +rate_burst:+, ... (nil removes a
    # limit).
    # @return [QueueInfo] the queue as it is then
    def set_queue(name, **settings)
      QueueInfo.new(transport.call("PUT", queue_path(name), JSON.generate(settings), retry_safe: true))
    end

    # Pauses the queue whole (admin), or only +tenant+'s jobs in it (a
    # tenant token: its own tenant when none is named): nothing of it is
    # leased until resumed; submits are still taken, leased jobs run to
    # their end.
    # @return [QueueInfo] with {QueueInfo#paused?} and {QueueInfo#paused_tenants}
    def pause_queue(name, tenant: nil)
      QueueInfo.new(transport.call("POST", "#{queue_path(name)}/pause", tenant_body(tenant), retry_safe: true))
    end

    # Undoes {#pause_queue} (the same +tenant+): the jobs may be leased at once.
    # @return [QueueInfo]
    def resume_queue(name, tenant: nil)
      QueueInfo.new(transport.call("POST", "#{queue_path(name)}/resume", tenant_body(tenant), retry_safe: true))
    end

    # @return [TenantInfo]
    def tenant(name)
      TenantInfo.new(transport.call("GET", tenant_path(name), nil, retry_safe: true))
    end

    # PUT /v1/tenants/{name} (admin): +slots:+, +weight:+, +rate:+,
    # +rate_period_ms:+, +rate_burst:+ (nil: unlimited, no limit).
    # @return [TenantInfo] the tenant as it is then
    def set_tenant(name, **settings)
      TenantInfo.new(transport.call("PUT", tenant_path(name), JSON.generate(settings), retry_safe: true))
    end

    private

    def queue_path(name)
      "/v1/queues/#{URI.encode_www_form_component(name.to_s)}"
    end

    def tenant_path(name)
      "/v1/tenants/#{URI.encode_www_form_component(name.to_s)}"
    end

    def tenant_body(tenant)
      tenant.nil? ? nil : JSON.generate("tenant" => tenant.to_s)
    end
  end
end
