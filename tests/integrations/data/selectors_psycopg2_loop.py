# An event loop built on `selectors` whose handler runs a query with psycopg2
# (preload_handler_wait_test.cc), run by the unmodified Debian python3.11 under the shim.
#
#   selectors_psycopg2_loop.py SOCKET_DIR   connect to the PostgreSQL listening in SOCKET_DIR,
#                                           then serve: each connection's handler runs
#                                           SELECT pg_sleep(1) (libpq polls its socket for the
#                                           answer), answers "done" and closes
#
# The loop ticks every 100 ms, as loops with timers do. Once it has idled through one tick it
# prints one line: the backend's pid (pg_backend_pid()) and its listening port.
import selectors
import socket
import sys

import psycopg2

conn = psycopg2.connect(host=sys.argv[1], user="postgres", dbname="postgres")
cur = conn.cursor()
cur.execute("select pg_backend_pid()")
backend_pid = cur.fetchone()[0]

sel = selectors.DefaultSelector()
listener = socket.socket()
listener.bind(("127.0.0.1", 0))
listener.listen()
listener.setblocking(False)


def handle(sock):
    client, _ = sock.accept()
    cur.execute("select pg_sleep(1)")
    cur.fetchall()
    client.sendall(b"done\n")
    client.close()


sel.register(listener, selectors.EVENT_READ, handle)
announced = False
while True:
    events = sel.select(timeout=0.1)
    if not announced:
        print(backend_pid, listener.getsockname()[1], flush=True)
        announced = True
    for key, _ in events:
        key.data(key.fileobj)
