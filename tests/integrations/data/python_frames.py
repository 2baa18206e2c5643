# Python hangs of every shape, one per pass of an asyncio loop (every scenario runs inside the
# main task's coroutine), for the preload shim's Python frames. The test finds the
# lines below by their "# mark:" comments.
import asyncio
import json
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


async def main():
    for name in sys.argv[1:]:
        await asyncio.sleep(0.05)  # the loop's wait: the pass before the scenario ends here
        await scenario(name)  # mark: scenario
    await asyncio.sleep(0.05)


asyncio.run(main())
print("done", flush=True)
