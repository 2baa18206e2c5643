// A timer callback that computes for 400 ms: the hang docs/js.md shows.
function crunch(ms) {
  const end = Date.now() + ms;
  let x = 0;
  while (Date.now() < end) x += Math.sqrt(x + 1);
  return x;
}
setTimeout(function tick() { crunch(400); }, 200);
