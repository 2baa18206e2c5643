# An event loop built on `selectors` whose handler makes a synchronous HTTP call
# (preload_handler_wait_test.cc), run by the unmodified Debian python3.11 under the shim.
#
#   selectors_urlopen_loop.py UPSTREAM_URL   serve: each connection's handler fetches the URL
#                                            with urllib (timeout set: its socket polls), answers
#                                            "done" and closes
#   selectors_urlopen_loop.py --idle SECONDS idle that long (its selector ticking every 100 ms),
#                                            then exit
#
# The loop ticks every 100 ms, as loops with timers do. Its listening port is printed once it
# has idled through one tick.
import selectors
import socket
import sys
import time
import urllib.request

sel = selectors.DefaultSelector()
listener = socket.socket()
listener.bind(("127.0.0.1", 0))
listener.listen()
listener.setblocking(False)


def handle(sock):
    conn, _ = sock.accept()
    with urllib.request.urlopen(sys.argv[1], timeout=10) as response:
        response.read()
    conn.sendall(b"done\n")
    conn.close()


sel.register(listener, selectors.EVENT_READ, handle)
idle_for = float(sys.argv[2]) if sys.argv[1] == "--idle" else None
start = time.monotonic()
announced = False
while idle_for is None or time.monotonic() - start < idle_for:
    events = sel.select(timeout=0.1)
    if not announced:
        print(listener.getsockname()[1], flush=True)
        announced = True
    for key, _ in events:
        key.data(key.fileobj)
