# tests/ruby/fork_app.rb: app.rb's IO.select loop in a forked child, as a pre-forking server's
# worker runs it (Ruby 3.1 keeps the parent's tid in the child's thread: the agent finds the
# thread by its pthread_t). The test finds crunch's loop line by its "# mark:" comment.
$stdout.sync = true
HANG_S = 0.6

def crunch(deadline)
  x = 0
  x += 1 while Process.clock_gettime(Process::CLOCK_MONOTONIC) < deadline # mark: crunch-loop
  x
end

worker = fork do
  reader, writer = IO.pipe
  passes = 0
  while passes < 10
    ready, = IO.select([reader], nil, nil, 0.02)
    if ready
      reader.read_nonblock(64)
      crunch(Process.clock_gettime(Process::CLOCK_MONOTONIC) + HANG_S)
    end
    passes += 1
    writer.write("x") if passes == 4
  end
end
Process.wait(worker)
puts "done"
