# tests/ruby/frames_program.rb: a Ruby program whose frames ruby_frames_test reads. Mode
# "sleep": the main thread sleeps under in_block -> each's block -> recurse x4 -> sleeper;
# "busy": it spins in crunch; "thread": a second thread sleeps in worker_body; "fork": a forked
# child does what "sleep" does (its pid is the thread to read). Prints "ready TID 0" (the thread
# to read) when there.
$stdout.sync = true

def crunch
  i = 0
  i += 1 while i >= 0
end

def sleeper
  sleep 1000
end

def recurse(n)
  return sleeper if n.zero?
  recurse(n - 1)
end

def in_block
  [1].each { |_x| recurse(3) }
end

def worker_body
  sleep 1000
end

case ARGV[0]
when "busy"
  puts "ready #{Thread.current.native_thread_id} 0"
  crunch
when "thread"
  t = Thread.new { Thread.current.name = "worker"; worker_body }
  sleep 0.01 until t.status == "sleep"
  puts "ready #{t.native_thread_id} 0"
  t.join
when "fork"
  child = fork do
    puts "ready #{Process.pid} 0"
    in_block
  end
  Process.wait(child)
else
  Thread.new { }.join # a second thread existed once
  puts "ready #{Thread.current.native_thread_id} 0"
  in_block
end
