# SPDX-License-Identifier: Apache-2.0
# frozen_string_literal: true

require "json"
require "uri"

module Tenq
  # Keyed limits (docs/API.md, "Keyed limits"): the keys resident jobs name
  # and the key settings. Included in {Client}. Each call may be sent again
  # after a broken connection: the same request sets the same state.
  module KeyCalls
    # GET /v1/keys: the keys resident jobs name, those at their limit first
    # (+at_limit: true+: only those; +key:+ with +tenant:+: that key).
    # @return [Hash{String => Object}] {"total", "keys_at_limit", "keys" => [{"tenant", "key",
    #   "limit", "active", "ready", "held", "at_limit", "setting", "rate"}]}; one key asked for by its
    #   name has "holders" and "jobs" too (up to 20 ids each: running jobs holding it, its ready jobs)
    def keys(tenant: nil, key: nil, at_limit: false, limit: nil)
      query = { "tenant" => tenant || defaults[:tenant], "key" => key, "at_limit" => (at_limit ? "true" : nil),
                "limit" => limit }.compact
      path = query.empty? ? "/v1/keys" : "/v1/keys?#{URI.encode_www_form(query)}"
      transport.call("GET", path, nil, retry_safe: true)
    end

    # PUT /v1/key-settings (admin): the settings of +key+ of +tenant+, or (a
    # key ending in "*") of every key beginning with the rest, whole (nil:
    # the jobs' own).
    # @return [Hash{String => Object}] the setting as stored
    def set_key_setting(tenant, key, concurrency: nil, rate: nil, rate_period_ms: nil, rate_burst: nil)
      body = { "tenant" => tenant.to_s, "key" => key.to_s, "concurrency" => concurrency, "rate" => rate,
               "rate_burst" => rate_burst }
      body["rate_period_ms"] = rate_period_ms unless rate_period_ms.nil?
      transport.call("PUT", "/v1/key-settings", JSON.generate(body), retry_safe: true)
    end

    # GET /v1/key-settings: the key settings (of +tenant+, default the client's).
    # @return [Array<Hash{String => Object}>]
    def key_settings(tenant: nil)
      t = tenant || defaults[:tenant]
      path = t.nil? ? "/v1/key-settings" : "/v1/key-settings?#{URI.encode_www_form('tenant' => t)}"
      ans = transport.call("GET", path, nil, retry_safe: true)
      raise ProtocolError, "the key settings answer has no settings list" unless ans.is_a?(Hash)

      Array(ans["settings"])
    end

    # DELETE /v1/key-settings (admin); {NotFoundError} when there is none.
    # @return [void]
    def delete_key_setting(tenant, key)
      query = URI.encode_www_form("tenant" => tenant.to_s, "key" => key.to_s)
      transport.call("DELETE", "/v1/key-settings?#{query}", nil, retry_safe: true)
      nil
    end
  end
end
