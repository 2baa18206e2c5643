// A timer callback that spins on Date.now() for 600 ms, three times. Most samples land in the
// clock read, reached from the JavaScript function through one of V8's builtins that node copies
// into anonymous memory (not in the module, not in the perf map): the culprit must still be
// spinOnClock, named by /tmp/perf-PID.map (--perf-basic-prof).
function spinOnClock(ms) {
  const end = Date.now() + ms;
  let n = 0;
  while (Date.now() < end) n++;
  return n;
}

let runs = 0;
const timer = setInterval(() => {
  spinOnClock(600);
  if (++runs === 3) clearInterval(timer);
}, 50);
