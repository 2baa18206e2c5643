# tests/ruby/stuck_app.rb: an IO.select loop whose handler never returns (`spin` loops forever
# once the pipe is readable); the test kills the process: a fatal hang, read back from the
# open-hang file. The test finds spin's loop line by its "# mark:" comment.
def spin
  x = 0
  x += 1 while true # mark: spin-loop
end

reader, writer = IO.pipe
passes = 0
loop do
  ready, = IO.select([reader], nil, nil, 0.02)
  spin if ready
  passes += 1
  writer.write("x") if passes == 4
end
