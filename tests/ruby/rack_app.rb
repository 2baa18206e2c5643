# tests/ruby/rack_app.rb: a Rack application served by WEBrick (Debian's ruby-rack and
# ruby-webrick), and its client in a thread of the same process: six requests on one
# keep-alive connection (the connection's server thread waits for the next between them: a
# loop `hangwatch run --threads loops` watches), then /slow, whose handler busy-loops in
# `slow_report` for HANG_S, then the server is shut down. The test finds slow_report's loop
# line by its "# mark:" comment.
require "net/http"
require "rack"
require "webrick"

$stdout.sync = true
HANG_S = 0.6

class ReportApp
  def call(env)
    return [200, { "content-type" => "text/plain" }, [slow_report]] if env["PATH_INFO"] == "/slow"
    [200, { "content-type" => "text/plain" }, ["ok"]]
  end

  def slow_report
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + HANG_S
    x = 0
    x += 1 while Process.clock_gettime(Process::CLOCK_MONOTONIC) < deadline # mark: slow-loop
    "done #{x}"
  end
end

server = nil
started = Queue.new
client = Thread.new do
  port = started.pop
  Net::HTTP.start("127.0.0.1", port) do |http|
    6.times do |i|
      http.get("/")
      # Once longer than WEBrick's 0.5 s wait for the next request: that wait times out, so
      # the connection's thread idled in its loop (docs/run.md, when a thread counts as one).
      sleep(i == 1 ? 0.7 : 0.05)
    end
    http.get("/slow")
  end
  server.shutdown
end

Rack::Handler::WEBrick.run(ReportApp.new, Host: "127.0.0.1", Port: 0,
                                          Logger: WEBrick::Log.new(File::NULL),
                                          AccessLog: [],
                                          StartCallback: -> { started << server.config[:Port] }) do |s|
  server = s
end
client.join
puts "done"
