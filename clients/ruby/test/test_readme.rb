# SPDX-License-Identifier: Apache-2.0
# frozen_string_literal: true

require_relative "test_helper"
require "open3"

# The README's quick start, run as written: its commands and files, against
# a real server named by TENQ_SERVER (the README's `make run` server is the
# default address, 127.0.0.1:7070), with the gem installed from a copy of
# this folder into a temporary GEM_HOME.
class TestReadme < TenqTest::Case
  ROOT = File.expand_path("..", __dir__)

  def quick_start_blocks
    text = File.read(File.join(ROOT, "README.md"))
    section = text[/^## Five-minute quick start\n(.*?)^## /m, 1] or flunk "no quick start section"
    section.scan(/^ *```(sh|ruby)\n(.*?)^ *```/m).map { |lang, code| [lang, code.gsub(/^ {3}/, "")] }
  end

  def sh(env, cmd, dir)
    out, status = Open3.capture2e(env, "sh", "-c", cmd, chdir: dir)
    assert status.success?, "#{cmd} failed: #{out}"
    out
  end

  def test_the_quick_start_runs_as_written
    blocks = quick_start_blocks
    assert_equal %w[sh ruby sh sh], blocks.map(&:first)
    install, ruby, work, call = blocks.map(&:last)
    dir = Dir.mktmpdir("tenq-rb-readme-")
    src = File.join(dir, "gem")
    FileUtils.mkdir_p(src)
    FileUtils.cp_r(%w[lib sig tenq.gemspec README.md].map { |f| File.join(ROOT, f) }, src)
    env = { "GEM_HOME" => File.join(dir, "home"), "GEM_PATH" => File.join(dir, "home"), "TENQ_SERVER" => server.url,
            "RUBYLIB" => nil, "RUBYOPT" => nil }
    sh(env, install, src)

    app = File.join(dir, "app")
    FileUtils.mkdir_p(app)
    File.write(File.join(app, "data_report.rb"), ruby)
    worker_log = File.join(dir, "worker.log")
    pid = Process.spawn(env, "sh", "-c", "exec #{work.strip}", chdir: app, out: worker_log, err: worker_log)
    begin
      out = sh(env, call, app)
      lines = out.lines.map(&:strip)
      assert_equal '{"report_id"=>7, "format"=>"pdf", "rows"=>42}', lines[0]
      assert_match(/\A\d+\z/, lines[1])
      assert_equal '{"format"=>"csv", "report_id"=>42, "rows"=>42}', lines[2]
      Process.kill("INT", pid) # Ctrl-C
      _, status = Process.wait2(pid)
      pid = nil
      assert status.success?, "the worker's exit after Ctrl-C: #{File.read(worker_log)}"
    ensure
      if pid
        Process.kill("KILL", pid)
        Process.wait(pid)
      end
      FileUtils.rm_rf(dir)
    end
  end
end
