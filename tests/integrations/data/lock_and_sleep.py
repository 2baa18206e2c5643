# An asyncio program whose loop, in one pass, waits for a threading.Lock held by another thread
# (1.2 s), and in a later pass sleeps 0.6 s: the preload shim reports both, with their causes.
import asyncio
import threading
import time

lock = threading.Lock()
held = threading.Event()


def hold_lock():
    with lock:
        held.set()
        time.sleep(1.2)


def take_lock():
    with lock:
        pass


async def main():
    holder = threading.Thread(target=hold_lock, name="lock-holder")
    holder.start()
    held.wait()
    await asyncio.sleep(0.05)  # the loop waits: the shim arms
    take_lock()
    await asyncio.sleep(0.05)
    time.sleep(0.6)
    await asyncio.sleep(0.05)
    holder.join()
    print("done", flush=True)


asyncio.run(main())
