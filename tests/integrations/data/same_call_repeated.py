# One blocking line, run by the same call site again and again from an event loop's callback:
# each call blocks the main thread for 250 ms (one hang each). CPython 3.11+ specializes the
# call site after a few runs (the eval loop then reaches time.sleep through fewer C frames), yet
# all the hangs are the same code and must have the same fingerprint and signature.
import selectors
import sys
import time

sel = selectors.DefaultSelector()


def blocked():
    time.sleep(0.25)


for _ in range(int(sys.argv[1]) if len(sys.argv) > 1 else 12):
    sel.select(0.02)  # the event loop's wait: the pass before the call ends here
    blocked()
sel.select(0.02)
