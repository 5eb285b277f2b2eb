# SPDX-License-Identifier: Apache-2.0
# frozen_string_literal: true

module Tenq
  # The sync/async switch. A class that includes it runs its methods as
  # written (+report.execute(42)+), or as jobs (+report.async.execute(42)+:
  # a job of type "DataReport.execute" with args [42], answered by a
  # {Handle} whose +wait+ gives the method's return value). A worker runs
  # such a job as +DataReport.new.execute(42)+.
  #
  #   class DataReport
  #     include Tenq::Job
  #     tenq_options queue: "reports"                 # every method
  #     tenq_options :execute, priority: 5, timeout: 60  # one method
  #
  #     def execute(report_id, format: "pdf")
  #       tenq_job&.progress(0.5)                     # nil when run inline
  #       { "rows" => 42 }
  #     end
  #   end
  #
  #   DataReport.new.async(tenant: "acme").execute(42).wait  # => {"rows"=>42}
  #   DataReport.new.inline.execute(42)                      # => {"rows"=>42}, run here
  #
  # A class that defines +perform+ has Sidekiq's class methods too
  # ({Perform}: +perform_async+, +perform_in+, +perform_at+, +set+,
  # +perform_inline+).
  #
  # Arguments are positional JSON values; keyword arguments travel as a
  # final Hash and come back as keywords when the method takes keywords.
  # Arguments that are not JSON raise {InvalidError} before anything is sent.
  module Job
    # Options that stay with the worker (not sent with the job).
    WORKER_OPTIONS = %i[timeout].freeze
    SUBMIT_OPTIONS = (JobFields::NAMES - %i[type args]).freeze

    CLASS_NAME = /\A[A-Z]\w*(::[A-Z]\w*)*\z/
    private_constant :CLASS_NAME

    @routes = {}.freeze # replaced, never changed: read without the lock
    @mutex = Mutex.new
    Registry::ROUTERS << self

    class << self
      def included(base)
        super
        base.extend(ClassMethods)
        base.extend(Perform)
      end

      # The handler entry for a type "Class.method" of a class that includes
      # Tenq::Job (loaded by the time the job runs), or nil.
      # @return [Registry::Entry, nil]
      def route(type)
        found = @routes[type]
        return found if found
        return nil unless type.is_a?(String) && type.include?(".")

        class_name, _, name = type.rpartition(".")
        klass = job_class(class_name)
        return nil unless klass&.tenq_method?(name)

        entry = Registry::Entry.new(->(task) { klass.tenq_perform(name, task) }, klass.tenq_options_for(name)[:timeout])
        @mutex.synchronize { @routes = @routes.merge(type => entry).freeze }
        entry
      end

      # @return [Class, nil]
      def job_class(class_name)
        return nil unless CLASS_NAME.match?(class_name)

        klass = Object.const_get(class_name)
        klass.is_a?(Class) && klass.include?(Tenq::Job) ? klass : nil
      rescue NameError
        nil
      end

      # The JSON args of a call, and back.
      # @return [Array]
      def encode_args(args, kwargs)
        list = kwargs.empty? ? args : [*args, kwargs.transform_keys(&:to_s)]
        JSONValue.check!(list, "args")
      end
    end

    # Class-level settings of the switch.
    module ClassMethods
      # Submit options for every method (+tenq_options queue: "reports"+) or
      # for one (+tenq_options :execute, priority: 5+). +timeout:+ (seconds)
      # bounds a run in the worker.
      # @return [Hash{Symbol => Object}] the options now in force
      def tenq_options(method_name = nil, **options)
        unknown = options.keys - SUBMIT_OPTIONS - WORKER_OPTIONS
        raise ArgumentError, "unknown tenq option(s): #{unknown.join(', ')}" unless unknown.empty?

        @tenq_options ||= {}
        key = method_name&.to_sym
        @tenq_options[key] = (@tenq_options[key] || {}).merge(options)
        tenq_options_for(method_name)
      end

      # The options of a method: the class's (and its ancestors'), then the
      # method's own.
      # @return [Hash{Symbol => Object}]
      def tenq_options_for(method_name)
        inherited = superclass.respond_to?(:tenq_options_for) ? superclass.tenq_options_for(method_name) : {}
        own = @tenq_options || {}
        inherited.merge(own[nil] || {}).merge(method_name ? own[method_name.to_sym] || {} : {})
      end

      # The job type of a method: "DataReport.execute".
      # @return [String]
      def tenq_type(method_name)
        raise ArgumentError, "an anonymous class cannot be a job: give it a name" unless name

        "#{name}.#{method_name}"
      end

      # A public method the class itself defines (not Object's, not the
      # switch's own) may run as a job.
      def tenq_method?(method_name)
        return false unless method_name.to_s.match?(/\A[a-z_][a-zA-Z0-9_]*[?!]?\z/) &&
                            public_method_defined?(method_name)

        owner = instance_method(method_name).owner
        !Object.ancestors.include?(owner) && owner != Tenq::Job
      end

      # Runs a job of this class: a new instance, the method with the
      # job's args. Called by the worker (and the inline test mode).
      # @return [Object] the method's result
      def tenq_perform(method_name, task)
        instance = new
        instance.tenq_job = task
        tenq_call(instance, method_name, task.args)
      end

      # Calls the method with a job's JSON args (a final Hash as keywords
      # when the method takes keywords).
      # @return [Object] the method's result
      def tenq_call(instance, method_name, json_args)
        args = json_args.nil? ? [] : Array(json_args)
        kwargs = {}
        if args.last.is_a?(Hash) && takes_keywords?(method_name)
          kwargs = args.last.transform_keys(&:to_sym)
          args = args[0...-1]
        end
        instance.public_send(method_name, *args, **kwargs)
      end

      private

      def takes_keywords?(method_name)
        instance_method(method_name).parameters.any? { |kind, _| %i[key keyreq keyrest].include?(kind) }
      end
    end

    # The job this instance runs in a worker ({Task}), or nil inline.
    # @return [Task, nil]
    attr_accessor :tenq_job

    # The async side: +async.execute(42)+ submits the call as a job.
    # Options override the class's and the method's for this call
    # (+async(queue: "urgent", run_at: Time.now + 60)+); +client:+ picks a
    # client other than {Tenq.client}.
    # @return [AsyncProxy]
    def async(client: nil, **options)
      unknown = options.keys - SUBMIT_OPTIONS
      raise ArgumentError, "unknown submit option(s): #{unknown.join(', ')}" unless unknown.empty?

      AsyncProxy.new(self.class, client, options)
    end

    # The method run here and now as a worker runs it: +inline.execute(42)+
    # returns what +async.execute(42).wait+ gives (the arguments and the
    # result go through JSON: string keys). A plain +execute(42)+ is a plain
    # Ruby call and returns what the method returns.
    # @return [InlineProxy]
    def inline
      InlineProxy.new(self.class)
    end

    # What {AsyncProxy} and {InlineProxy} share: they answer every public
    # method of the class that can run as a job (NoMethodError for any
    # other), each in its own way (+tenq_proxy_call+).
    class MethodProxy < BasicObject
      def initialize(klass)
        @klass = klass
      end

      def respond_to_missing?(name, _include_private = false)
        @klass.tenq_method?(name)
      end

      def method_missing(name, *args, **kwargs)
        unless @klass.tenq_method?(name)
          ::Kernel.raise ::NoMethodError, "#{@klass}##{name} is not a public method that can run as a job"
        end

        tenq_proxy_call(name, args, kwargs)
      end
    end

    # Turns method calls into submits.
    class AsyncProxy < MethodProxy
      def initialize(klass, client, options)
        super(klass)
        @client = client
        @options = options
      end

      private

      def tenq_proxy_call(name, args, kwargs)
        options = @klass.tenq_options_for(name).merge(@options)
        WORKER_OPTIONS.each { |o| options.delete(o) }
        (@client || ::Tenq.client).submit(type: @klass.tenq_type(name), args: Job.encode_args(args, kwargs),
                                          **options)
      end
    end
  end
end
