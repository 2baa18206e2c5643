# A Python program that loads GLib only after the preload shim armed (preload_glib_source_test):
# the main thread's first wait (the select below) arms the shim, then `from gi.repository import
# GLib` dlopen()s GLib. An unnamed timeout source stalls its callback 600 ms (the hang in which
# the shim finds GLib); once the shim wrapped g_timeout_funcs' dispatch entry (read here), it
# stalls again and the loop quits. Prints "done", or "not wrapped" after 20 s.
import ctypes
import select
import time


def glib_loaded():
    with open("/proc/self/maps") as maps:
        return "libglib-2.0" in maps.read()


select.select([], [], [], 0.05)
print("glib before import:", "yes" if glib_loaded() else "no", flush=True)

from gi.repository import GLib  # noqa: E402

# GSourceFuncs: prepare, check, dispatch, finalize, closure_callback, closure_marshal.
timeout_funcs = (ctypes.c_void_p * 6).in_dll(ctypes.CDLL("libglib-2.0.so.0"), "g_timeout_funcs")
glib_dispatch = timeout_funcs[2]
loop = GLib.MainLoop()
deadline = 0.0
outcome = "done"


def second_stall():
    time.sleep(0.6)
    loop.quit()
    return False


def wait_for_wrap():
    global outcome
    if timeout_funcs[2] != glib_dispatch:
        GLib.timeout_add(10, second_stall)
        return False
    if time.monotonic() > deadline:
        outcome = "not wrapped"
        loop.quit()
        return False
    return True


def first_stall():
    global deadline
    time.sleep(0.6)
    deadline = time.monotonic() + 20
    GLib.timeout_add(10, wait_for_wrap)
    return False


GLib.timeout_add(100, first_stall)
loop.run()
print(outcome, flush=True)
