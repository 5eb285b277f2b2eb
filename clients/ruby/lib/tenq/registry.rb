# SPDX-License-Identifier: Apache-2.0
# frozen_string_literal: true

module Tenq
  # Handlers by job type. A handler is anything with +call(task)+ that
  # returns the result (any JSON). Types not registered here are routed to
  # the classes that include {Tenq::Job}: "DataReport.execute" runs
  # +DataReport.new.execute(*args)+ (and, with tenq/active_job loaded, a
  # type that names an ActiveJob class runs that job).
  class Registry
    Entry = Struct.new(:callable, :timeout)

    # Objects with +route(type)+ (an {Entry} or nil), asked in order for a
    # type no handler is registered for.
    ROUTERS = [] # rubocop:disable Style/MutableConstant -- tenq/active_job adds its router

    def initialize
      @handlers = {}.freeze # replaced, never changed: runners read it without a lock
      @mutex = Mutex.new
    end

    # Registers a handler for a type (a block or a callable).
    # @param timeout [Numeric, nil] seconds a job of this type may run
    # @return [self]
    def register(type, callable = nil, timeout: nil, &block)
      handler = callable || block
      raise ArgumentError, "a handler needs a block or a callable" unless handler.respond_to?(:call)
      raise ArgumentError, "bad type #{type.inspect}: 1-128 printable ASCII, no spaces" unless Registry.type?(type)

      @mutex.synchronize { @handlers = @handlers.merge(type.to_s => Entry.new(handler, timeout)).freeze }
      self
    end

    # The entry for a type, or nil.
    # @return [Entry, nil]
    def lookup(type)
      @handlers[type] || Registry.route(type)
    end

    # The entry a router gives a type, or nil.
    # @return [Entry, nil]
    def self.route(type)
      found = nil
      ROUTERS.each { |r| break if (found = r.route(type)) }
      found
    end

    # @return [Array<String>] the types registered explicitly
    def types
      @handlers.keys
    end

    # A valid type name (docs/SEMANTICS.md).
    def self.type?(type)
      type.to_s.match?(/\A[!-~]{1,128}\z/)
    end
  end
end
