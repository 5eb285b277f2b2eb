# SPDX-License-Identifier: Apache-2.0
# frozen_string_literal: true

require "erb"
require "yaml"

module Tenq
  # The settings of config/tenq.yml: the servers, the token and the default
  # tenant (and queue) of the default client, and what +tenq-worker+ leases.
  # The Railtie reads the file of a Rails application; +tenq-worker+ reads
  # it (or the file +-C+ names) outside Rails.
  #
  #   # config/tenq.yml: ERB, then YAML; a section per environment, as
  #   # database.yml (or one flat section for every environment)
  #   default: &default
  #     servers: <%= ENV.fetch("TENQ_SERVER", "http://127.0.0.1:7070") %>  # a URL, "a,b", or a list
  #     token: <%= ENV["TENQ_TOKEN"] %>
  #     tenant: acme           # the default tenant of every submit (ActiveJob's too)
  #     queues: [default, mailers]
  #     concurrency: 10
  #   development:
  #     <<: *default
  #   production:
  #     <<: *default
  #     concurrency: 25
  #
  # An unknown key or a value of the wrong kind raises {InvalidError} naming
  # it (+field+ is the key), and nothing is configured.
  class Settings
    # Keys of the default client ({Client#initialize}).
    CLIENT_KEYS = %i[servers token tenant queue failover_budget backpressure_budget].freeze
    # Keys of tenq-worker ({Worker#initialize}).
    WORKER_KEYS = %i[queues concurrency prefetch grace timeout].freeze
    KEYS = (CLIENT_KEYS + WORKER_KEYS).freeze
    KINDS = {
      servers: [String, Array], token: [String], tenant: [String], queue: [String], failover_budget: [Numeric],
      backpressure_budget: [Numeric],
      queues: [String, Array], concurrency: [Integer], prefetch: [Integer, String], grace: [Numeric],
      timeout: [Numeric]
    }.freeze

    # @return [Hash{Symbol => Object}] the settings in force (nil values left out)
    attr_reader :values
    # @return [String, nil] the file they came from
    attr_reader :path

    # Reads a file: its section for +env+ (merged over a "shared" one), or
    # the whole file when it has no sections (no value is a mapping).
    # @return [Settings]
    # @raise [InvalidError] a key it does not know, a value of the wrong
    #   kind, no section for +env+
    def self.load(path, env: nil)
      env ||= ENV["RAILS_ENV"] || ENV["RACK_ENV"] || ENV["TENQ_ENV"] || "development"
      text = ERB.new(File.read(path)).result
      data = YAML.safe_load(text, aliases: true) || {}
      raise InvalidError.new("#{path}: not a mapping of settings", field: "tenq.yml") unless data.is_a?(Hash)

      new(section(data, env.to_s, path), path: path)
    end

    # The part of a file's mapping that applies to +env+.
    def self.section(data, env, path)
      return data unless data.values.any?(Hash)
      unless data[env].is_a?(Hash)
        raise InvalidError.new("#{path}: no #{env} section (it has #{data.keys.join(', ')})", field: env)
      end

      shared = data["shared"].is_a?(Hash) ? data["shared"] : {}
      shared.merge(data[env])
    end

    # @param values [Hash] settings (String or Symbol keys)
    def initialize(values = {}, path: nil)
      @path = path
      @values = {}
      values.each do |key, value|
        name = key.to_sym
        next if value.nil?

        check(name, value)
        @values[name] = value
      end
      @values.freeze
    end

    def [](key)
      @values[key.to_sym]
    end

    # The options of the default client.
    # @return [Hash{Symbol => Object}]
    def client_options
      @values.slice(*CLIENT_KEYS).transform_values { |v| v.is_a?(Array) ? v.map(&:to_s) : v }
    end

    # The queues tenq-worker leases (nil: none named).
    # @return [Array<String>, nil]
    def queues
      q = @values[:queues]
      return nil if q.nil?

      q.is_a?(Array) ? q.map(&:to_s) : q.split(",").map(&:strip).reject(&:empty?)
    end

    # The options of a {Worker} (queues apart).
    # @return [Hash{Symbol => Object}]
    def worker_options
      opts = @values.slice(:concurrency, :grace, :timeout)
      opts[:prefetch] = Settings.prefetch(@values[:prefetch]) if @values.key?(:prefetch)
      opts
    end

    # "auto" or a count.
    # @return [Integer, Symbol]
    def self.prefetch(value)
      return :auto if value.to_s == "auto"

      Integer(value)
    rescue ArgumentError, TypeError
      raise InvalidError.new("prefetch must be auto or a number of jobs, not #{value.inspect}", field: "prefetch")
    end

    private

    def check(name, value)
      where = @path ? "#{@path}: " : ""
      unless KEYS.include?(name)
        raise InvalidError.new("#{where}unknown setting #{name} (known: #{KEYS.join(', ')})", field: name.to_s)
      end

      if KINDS.fetch(name).any? { |k| value.is_a?(k) }
        Settings.prefetch(value) if name == :prefetch
        return
      end

      raise InvalidError.new("#{where}#{name} must be #{KINDS.fetch(name).map(&:name).join(' or ')}, " \
                             "not #{value.inspect[0, 80]}", field: name.to_s)
    end
  end
end
