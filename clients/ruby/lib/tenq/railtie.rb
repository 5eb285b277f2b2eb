# SPDX-License-Identifier: Apache-2.0
# frozen_string_literal: true

require "rails/railtie"

module Tenq
  # Rails: reads config/tenq.yml (its section for Rails.env; {Settings})
  # into the default client before the application's initializers run
  # (an initializer may still call {Tenq.configure}), makes
  # +config.active_job.queue_adapter = :tenq+ work, and runs each job a
  # worker of the application runs inside the application's reloader, as
  # a request is. +config.tenq.config_file+ names another file.
  class Railtie < ::Rails::Railtie
    config.tenq = ActiveSupport::OrderedOptions.new

    initializer "tenq.settings", before: :load_config_initializers do |app|
      path = app.config.tenq.config_file || app.root.join("config", "tenq.yml")
      Tenq.configure_from(Settings.load(path.to_s, env: Rails.env.to_s)) if File.file?(path.to_s)
    end

    initializer "tenq.reloader" do |app|
      Tenq.worker_middleware.prepend(Reloading.new(app))
    end

    # Runs each job inside the application's reloader (code reloaded
    # between jobs in development; connections given back after each).
    class Reloading
      def initialize(app)
        @app = app
      end

      def call(_task, &block)
        @app.reloader.wrap(&block)
      end
    end
  end
end

require_relative "active_job" if defined?(ActiveJob)
