# The Python program whose frames frame_chain_test.cc and the snapshot tests read: one mode per
# run (argv[1]). When the frames to read are in place it prints "ready TID IDENT" (the thread to
# read, its pthread_t) on stdout, then stays there until killed. Line numbers are asserted by the tests: keep
# the marked lines where they are (or update the tests' kLine constants).
import asyncio
import sys
import threading
import time


def ready(tid=None):
    print("ready", tid if tid is not None else threading.get_native_id(), threading.get_ident(),
          flush=True)


def busy():
    ready()
    x = 0
    while True: x += 1  # line 19: busy_loop


def sleeper():
    ready()
    time.sleep(1000)  # line 24: sleeper


def recurse(n):
    if n == 0:
        ready()
        time.sleep(1000)  # line 30: recurse_bottom
    return recurse(n - 1)  # line 31: recurse_call


def generator():
    ready()
    time.sleep(1000)  # line 36: in_generator
    yield 1


def consume():
    for _ in generator():  # line 41: consume
        pass


async def coroutine():
    ready()
    time.sleep(1000)  # line 47: in_coroutine
    await asyncio.sleep(0)


async def outer_task():
    await coroutine()  # line 52: outer_task


def worker_body():
    ready(threading.get_native_id())
    time.sleep(1000)  # line 57: worker_body


def main_waits():
    while True:
        time.sleep(1000)  # line 62: main_waits


class Opaque:
    pass


def encode_opaque(obj):
    # Called by _json's C encoder (json.dumps' default=) partway through a large object.
    ready()
    time.sleep(1000)  # line 72: encode_opaque


def dump_big():
    import json  # here, not at the top: the lines above stay where the tests expect them
    big = {"rows": [list(range(20)) for _ in range(5000)], "tail": Opaque()}
    return json.dumps(big, default=encode_opaque)  # line 78: dump_big


mode = sys.argv[1]
if mode == "busy":
    busy()
elif mode == "sleep":
    sleeper()
elif mode == "recurse":
    recurse(int(sys.argv[2]) - 1)
elif mode == "generator":
    consume()
elif mode == "asyncio":
    asyncio.run(outer_task())
elif mode == "json":
    dump_big()
elif mode == "thread":
    threading.Thread(target=worker_body, name="worker").start()
    main_waits()
