# tests/ruby/app.rb: an IO.select loop whose handler busy-loops in `crunch` for HANG_S once
# the pipe it watches becomes readable (the fourth pass writes to it); a few quick passes
# later it exits. The test finds crunch's loop line by its "# mark:" comment.
$stdout.sync = true
HANG_S = 0.6

def crunch(deadline)
  x = 0
  x += 1 while Process.clock_gettime(Process::CLOCK_MONOTONIC) < deadline # mark: crunch-loop
  x
end

def handle(reader)
  reader.read_nonblock(64)
  crunch(Process.clock_gettime(Process::CLOCK_MONOTONIC) + HANG_S)
end

reader, writer = IO.pipe
passes = 0
while passes < 10
  ready, = IO.select([reader], nil, nil, 0.02)
  handle(reader) if ready
  passes += 1
  writer.write("x") if passes == 4
end
puts "done"
