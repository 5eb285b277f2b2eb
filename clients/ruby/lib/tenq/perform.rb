# SPDX-License-Identifier: Apache-2.0
# frozen_string_literal: true

require "json"

module Tenq
  module Job
    # Sidekiq's class methods for a class that includes {Tenq::Job} and
    # defines +perform+: +perform_async+, +perform_in+, +perform_at+, +set+,
    # and +perform_inline+, which runs it here as a worker would.
    #
    #   class HardJob
    #     include Tenq::Job
    #     tenq_options queue: "critical", tenant: "acme"   # as sidekiq_options
    #
    #     def perform(name, count)
    #       { "name" => name, "count" => count }
    #     end
    #   end
    #
    #   HardJob.perform_async("bob", 5)                 # a Handle: id, wait
    #   HardJob.perform_in(300, "bob", 5)               # in 5 minutes (or 5.minutes)
    #   HardJob.perform_at(Time.now + 3600, "bob", 5)
    #   HardJob.set(queue: "low", priority: -1).perform_async("bob", 5)
    #   HardJob.perform_inline("bob", 5)                # runs now, args and result through JSON
    #
    # The job's type is "HardJob.perform", a job of the switch like any
    # other ({Job}): any worker of its queue runs it.
    module Perform
      # Submits +perform(*args)+ as a job.
      # @return [Handle, nil]
      def perform_async(*args, **kwargs)
        tenq_submit_perform({}, args, kwargs)
      end

      # Submits it to run +interval+ seconds from now (a Numeric or an
      # ActiveSupport::Duration).
      # @return [Handle, nil]
      def perform_in(interval, *args, **kwargs)
        tenq_submit_perform({ run_at: Perform.run_at(interval, relative: true) }, args, kwargs)
      end

      # Submits it to run at +time+ (a Time, or seconds since the epoch).
      # @return [Handle, nil]
      def perform_at(time, *args, **kwargs)
        tenq_submit_perform({ run_at: Perform.run_at(time, relative: false) }, args, kwargs)
      end

      # Submit options for the next call only: +set(queue: "low").perform_async(1)+.
      # +client:+ picks a client other than {Tenq.client}.
      # @return [Setter]
      def set(client: nil, **options)
        unknown = options.keys - SUBMIT_OPTIONS
        raise ArgumentError, "unknown submit option(s): #{unknown.join(', ')}" unless unknown.empty?

        Setter.new(self, client, options)
      end

      # Runs +perform(*args)+ here and now, as a worker would: the
      # arguments and the result go through JSON, so it returns what
      # +perform_async(*args).wait+ gives (string keys), and arguments that
      # are not JSON raise {InvalidError}.
      # @return [Object]
      def perform_inline(*args, **kwargs)
        new.inline.perform(*args, **kwargs)
      end

      # @api private
      def tenq_submit_perform(options, args, kwargs, client: nil)
        unless tenq_method?(:perform)
          raise NoMethodError, "#{self}#perform is not defined: perform_async runs a class's public #perform"
        end

        new.async(client: client, **options).perform(*args, **kwargs)
      end

      # The run_at of an interval from now or of a point in time.
      # @return [Time]
      def self.run_at(value, relative:)
        return value if value.is_a?(Time) && !relative

        # a Numeric, or an ActiveSupport::Duration (a Numeric's to_f, not a String's)
        unless value.is_a?(Numeric) || (value.respond_to?(:to_f) && !value.is_a?(String) && !value.is_a?(Time))
          what = relative ? "an interval must be seconds" : "a time must be a Time or seconds since the epoch"
          raise InvalidError.new("#{what}, not #{value.inspect[0, 80]}", field: "run_at")
        end

        relative ? Time.now + value.to_f : Time.at(value.to_f)
      end

      # +set(...)+'s answer: the Sidekiq-style calls with those options.
      class Setter
        def initialize(klass, client, options)
          @klass = klass
          @client = client
          @options = options
        end

        # @return [Handle, nil]
        def perform_async(*args, **kwargs)
          @klass.tenq_submit_perform(@options, args, kwargs, client: @client)
        end

        # @return [Handle, nil]
        def perform_in(interval, *args, **kwargs)
          @klass.tenq_submit_perform(@options.merge(run_at: Perform.run_at(interval, relative: true)), args, kwargs,
                                     client: @client)
        end

        # @return [Handle, nil]
        def perform_at(time, *args, **kwargs)
          @klass.tenq_submit_perform(@options.merge(run_at: Perform.run_at(time, relative: false)), args, kwargs,
                                     client: @client)
        end
      end
    end

    # +report.inline.execute(42)+: the method, run here and now as a worker
    # runs it: the arguments and the result go through JSON.
    class InlineProxy < MethodProxy
      private

      def tenq_proxy_call(name, args, kwargs)
        sent = ::JSON.parse(::JSON.generate(Job.encode_args(args, kwargs)))
        result = @klass.tenq_call(@klass.new, name, sent)
        ::JSON.parse(::JSON.generate(JSONValue.check!(result, "result"))) unless result.nil?
      end
    end
  end
end
