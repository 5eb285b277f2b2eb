# SPDX-License-Identifier: Apache-2.0
# frozen_string_literal: true

require "fileutils"
require "open3"
require "tmpdir"

module TenqTest
  # A clean copy of the gem's folder (what `gem build` packs) in a
  # temporary folder, and the environment of a shell whose gems go to a
  # GEM_HOME of its own (its bin on PATH, as a user's gem bin is), with
  # nothing of this test run's load path.
  class GemHome
    ROOT = File.expand_path("../..", __dir__)
    FILES = %w[lib sig exe tenq.gemspec README.md CHANGELOG.md].freeze

    attr_reader :dir, :src, :home

    def initialize(server_url)
      @dir = Dir.mktmpdir("tenq-rb-gem-")
      @src = File.join(@dir, "gem")
      @home = File.join(@dir, "home")
      FileUtils.mkdir_p(@src)
      FileUtils.cp_r(FILES.map { |f| File.join(ROOT, f) }, @src)
      @server_url = server_url
    end

    def env
      { "GEM_HOME" => @home, "GEM_PATH" => @home, "PATH" => "#{@home}/bin:#{ENV.fetch('PATH')}",
        "TENQ_SERVER" => @server_url, "RUBYLIB" => nil, "RUBYOPT" => nil, "BUNDLE_GEMFILE" => nil,
        "BUNDLE_USER_HOME" => File.join(@dir, "bundle-home"), "BUNDLE_APP_CONFIG" => nil, "MT_NO_PLUGINS" => nil }
    end

    # Runs a shell command in +dir+; its output, or a failed assertion.
    def sh(cmd, dir, extra_env = {})
      out, status = Open3.capture2e(env.merge(extra_env), "sh", "-c", cmd, chdir: dir)
      raise Minitest::Assertion, "#{cmd} failed (#{status}): #{out}" unless status.success?

      out
    end

    # Builds and installs the copy into the GEM_HOME.
    def install
      sh("gem build tenq.gemspec -o tenq.gem && gem install --local ./tenq.gem", @src)
      self
    end

    # A folder for an application.
    def app_dir(name = "app")
      d = File.join(@dir, name)
      FileUtils.mkdir_p(d)
      d
    end

    def cleanup
      FileUtils.rm_rf(@dir)
    end
  end
end
