# An event loop built on `selectors` whose handler makes a synchronous HTTP call
# (preload_handler_wait_test.cc), run by the unmodified Debian python3.11 under the shim.
#
#   selectors_urlopen_loop.py UPSTREAM_URL   serve: each connection's handler fetches the URL
#                                            with urllib (timeout set: its socket polls), answers
#                                            "done" and closes
#   selectors_urlopen_loop.py --idle SECONDS idle that long (its selector ticking every 100 ms),
#                                            then exit
#   selectors_urlopen_loop.py --busy UPSTREAM_URL
#                                            never idle: 600 events are queued before the loop
#                                            starts (bytes on a socket, one per event), so its
#                                            selector returns ready every time and never times
#                                            out; the 300th event's handler fetches the URL,
#                                            then the loop prints "done" after the last event
#                                            and exits
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


if sys.argv[1] == "--busy":
    queue, feeder = socket.socketpair()
    feeder.sendall(b"e" * 600)
    handled = 0

    def handle_queued(sock):
        global handled
        sock.recv(1)
        handled += 1
        if handled == 300:
            with urllib.request.urlopen(sys.argv[2], timeout=10) as response:
                response.read()

    sel.register(queue, selectors.EVENT_READ, handle_queued)
    while handled < 600:
        for key, _ in sel.select(timeout=0.1):
            key.data(key.fileobj)
    print("done", flush=True)
    sys.exit(0)

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
