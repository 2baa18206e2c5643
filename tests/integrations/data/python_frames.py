# Python hangs of every shape, one per pass of an asyncio loop (every scenario runs inside the
# main task's coroutine), for the preload shim's Python frames. The test finds the
# lines below by their "# mark:" comments.
import asyncio
import json
import os
import platform
import sys
import threading
import time

HANG_S = 0.6


def busy(deadline):
    x = 0
    while time.monotonic() < deadline:  # mark: busy-loop
        x += 1  # mark: busy-loop
    return x


def sleeper():
    time.sleep(HANG_S)  # mark: sleep


def recurse(n, deadline):
    if n == 0:
        return busy(deadline)
    return recurse(n - 1, deadline)  # mark: recurse


def numbers(deadline):
    yield busy(deadline)  # mark: generator


async def compute(deadline):
    return busy(deadline)  # mark: coroutine


def encode_all(data, deadline):
    while time.monotonic() < deadline:
        json.dumps(data)  # mark: json


def worker_spin(stop):
    while not stop.is_set():  # mark: worker
        pass


def main_with_worker(deadline):
    return busy(deadline)  # mark: main-with-worker


async def scenario(name):
    deadline = time.monotonic() + HANG_S
    if name == "busy":
        busy(deadline)
    elif name == "sleep":
        sleeper()
    elif name == "recursion":
        recurse(200, deadline)
    elif name == "generator":
        for _ in numbers(deadline):
            pass
    elif name == "coroutine":
        await compute(deadline)
    elif name == "json":
        data = [{"key": i, "values": list(range(20))} for i in range(20000)]
        deadline = time.monotonic() + HANG_S
        encode_all(data, deadline)
    elif name == "worker":
        stop = threading.Event()
        t = threading.Thread(target=worker_spin, args=(stop,))
        t.start()
        main_with_worker(deadline)
        stop.set()
        t.join()


# The epoll waits' system call numbers, as /proc/TID/syscall shows them.
EPOLL_WAITS = {"aarch64": {"22", "441"}}.get(platform.machine(), {"232", "281", "441"})


def wake_when_waiting(loop, woken, tid):
    # Resolves `woken` once the main thread sleeps in the loop's epoll wait, so that wait is
    # one that blocks (no timer due, nothing ready): the preload shim arms at the first wait
    # that may block, and a process run late on a loaded machine finds every asyncio.sleep
    # already due, polls with zero timeouts and would run its first scenario before arming.
    while True:
        with open(f"/proc/self/task/{tid}/syscall") as f:
            if f.read().split()[0] in EPOLL_WAITS:
                break
        time.sleep(0.005)
    loop.call_soon_threadsafe(woken.set_result, None)


async def first_wait():
    loop = asyncio.get_running_loop()
    woken = loop.create_future()
    args = (loop, woken, threading.get_native_id())
    threading.Thread(target=wake_when_waiting, args=args).start()
    await woken


async def main():
    if os.environ.get("PYTHON_FRAMES_STARVED_START"):
        # As a loaded machine runs it: the loop busy before its first wait, past every timer.
        asyncio.get_running_loop().call_soon(busy, time.monotonic() + 0.1)
    await first_wait()
    for name in sys.argv[1:]:
        await asyncio.sleep(0.05)  # the loop's wait: the pass before the scenario ends here
        await scenario(name)  # mark: scenario
    await asyncio.sleep(0.05)


asyncio.run(main())
print("done", flush=True)
