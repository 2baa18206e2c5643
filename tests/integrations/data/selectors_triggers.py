"""A selectors (epoll) loop whose handlers stall, each pass begun by another kind of event:
a client's request on a TCP connection, the loop's own time-out (a timer), an eventfd
wake-up posted by another thread. Prints "client PID PORT" once its client connected, then
"done". Run under the preload shim by preload_context_test."""
import os
import selectors
import socket
import subprocess
import sys
import threading
import time

STALL_S = 0.6
sel = selectors.DefaultSelector()

listener = socket.socket()
listener.bind(("127.0.0.1", 0))
listener.listen()
listener.setblocking(False)
port = listener.getsockname()[1]

# The client: its own process (without the shim), which connects, sends one request and waits.
env = dict(os.environ)
env.pop("LD_PRELOAD", None)
client = subprocess.Popen(
    [sys.executable, "-c",
     "import socket, sys, time\n"
     "s = socket.create_connection(('127.0.0.1', int(sys.argv[1])))\n"
     "s.sendall(b'GET /thumbnail')\n"
     "time.sleep(30)\n", str(port)],
    env=env)

state = {"step": "request"}


def on_request(conn):
    data = conn.recv(100)
    if data:
        time.sleep(STALL_S)  # the handler stalls: this pass began with the client's request
        sel.unregister(conn)
        state["step"] = "timer"


def on_accept(sock):
    conn, addr = sock.accept()
    conn.setblocking(False)
    print("client %d %d" % (client.pid, addr[1]), flush=True)
    sel.register(conn, selectors.EVENT_READ, on_request)


sel.register(listener, selectors.EVENT_READ, on_accept)

efd = os.eventfd(0)
while state["step"] != "done":
    events = sel.select(timeout=0.2)
    for key, _ in events:
        if key.fileobj == efd:
            os.eventfd_read(efd)
            time.sleep(STALL_S)  # began with another thread's wake-up
            state["step"] = "done"
        else:
            key.data(key.fileobj)
    if not events and state["step"] == "timer":
        time.sleep(STALL_S)  # began with the loop's own time-out
        state["step"] = "wakeup"
        sel.register(efd, selectors.EVENT_READ)
        threading.Thread(target=lambda: (time.sleep(0.1), os.eventfd_write(efd, 1))).start()

client.kill()
client.wait()
print("done", flush=True)
