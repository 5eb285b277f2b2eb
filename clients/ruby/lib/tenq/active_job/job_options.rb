# SPDX-License-Identifier: Apache-2.0
# frozen_string_literal: true

module Tenq
  module ActiveJob
    # Class methods of every ActiveJob class (extended onto
    # ActiveJob::Base): its tenant, and submit fields of tenq's own.
    #
    #   class InvoiceJob < ApplicationJob
    #     queue_as :billing
    #     tenq_tenant argument: :account       # the keyword argument account: (or an index: 0)
    #     tenq_tenant { |job| job.arguments.first.account.slug }  # or a block
    #     tenq_options max_attempts: 10, timeout_ms: 120_000, key: ->(job) { "invoice-#{job.arguments.first}" }
    #   end
    #
    # A subclass inherits its parent's and may override them.
    module JobOptions
      # Fields a class may set (the queue, the time and the priority are
      # ActiveJob's own: queue_as, set(wait:), queue_with_priority).
      FIELDS = %i[max_attempts timeout_ms key unique_key unique score idempotency_key].freeze

      # The tenant of this class's jobs: a name, one of the job's arguments
      # (+argument: 0+ the first; +argument: :account+ the keyword argument
      # account:), or a block given the job.
      # @return [void]
      def tenq_tenant(name = nil, argument: nil, &block)
        given = [name, argument, block].compact
        raise ArgumentError, "tenq_tenant takes one of a name, argument: or a block" unless given.size == 1
        unless argument.nil? || argument.is_a?(Integer) || argument.is_a?(Symbol) || argument.is_a?(String)
          raise ArgumentError, "argument: is an index or a keyword argument's name, not #{argument.inspect}"
        end

        @tenq_tenant = if name then name.to_s
                       elsif argument.nil? then block
                       else
                         [:argument, argument]
                       end
      end

      # Submit fields of tenq for this class's jobs: a value, or a block
      # given the job (+key: ->(job) { ... }+).
      # @return [Hash{Symbol => Object}] the fields now in force
      def tenq_options(**options)
        unknown = options.keys - FIELDS
        unless unknown.empty?
          raise ArgumentError, "unknown tenq option(s): #{unknown.join(', ')} (known: #{FIELDS.join(', ')})"
        end

        @tenq_options = (@tenq_options || {}).merge(options)
        tenq_options_in_force
      end

      # @api private: the class's fields, its parents' under them
      # @return [Hash{Symbol => Object}]
      def tenq_options_in_force
        inherited = superclass.respond_to?(:tenq_options_in_force) ? superclass.tenq_options_in_force : {}
        @tenq_options ? inherited.merge(@tenq_options) : inherited
      end

      # @api private: the class's tenant rule (or its parents'), or nil
      def tenq_tenant_rule
        return @tenq_tenant if defined?(@tenq_tenant) && @tenq_tenant

        superclass.respond_to?(:tenq_tenant_rule) ? superclass.tenq_tenant_rule : nil
      end

      # @api private: the tenant of a job by the class's rule, or nil
      # @return [String, nil]
      def tenq_tenant_of(job)
        rule = tenq_tenant_rule
        value = case rule
                when nil, String then rule
                when Array then JobOptions.argument(job, rule[1])
                else rule.call(job)
                end
        value&.to_s
      end

      # The argument at an index, or the keyword argument of that name.
      def self.argument(job, which)
        args = job.arguments
        return args[which] if which.is_a?(Integer)

        last = args.last
        return nil unless last.is_a?(Hash)

        last.key?(which.to_sym) ? last[which.to_sym] : last[which.to_s]
      end
    end
  end
end

module Tenq
  module ActiveJob
    # Instance methods of every ActiveJob job.
    module JobMethods
      # The tenq job this ActiveJob job runs as, while a tenq worker runs it
      # in this thread ({Task}: +attempt+, +progress+, +cancelled?+), else nil.
      # @return [Task, nil]
      def tenq_job
        run = Runner.current
        run.task if run && run.job_id == job_id
      end
    end
  end
end

ActiveSupport.on_load(:active_job) do
  extend Tenq::ActiveJob::JobOptions
  include Tenq::ActiveJob::JobMethods
end
