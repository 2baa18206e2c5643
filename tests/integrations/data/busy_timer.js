// A timer callback that keeps node's main thread busy in one JavaScript function for 600 ms,
// three times. Run with --perf-basic-prof, node writes /tmp/perf-PID.map naming its JIT code.
function busyWork(ms) {
  const end = Date.now() + ms;
  let x = 0;
  while (Date.now() < end) {
    for (let i = 0; i < 1000; i++) x += i % 7;
  }
  return x;
}

let runs = 0;
const timer = setInterval(() => {
  busyWork(600);
  if (++runs === 3) clearInterval(timer);
}, 50);
