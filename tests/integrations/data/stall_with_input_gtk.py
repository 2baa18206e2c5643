"""A GTK 3 window that stalls STALL_S seconds in a timeout callback, then reports the keys it
was given. Prints "stalling WINDOW_ID" as the stall starts, "keys K1 K2 ..." afterwards, and
exits. Run under the preload shim by preload_input_test (Debian's python3-gi)."""
import sys
import time

import gi

gi.require_version("Gtk", "3.0")
gi.require_version("Gdk", "3.0")
from gi.repository import Gdk, GLib, Gtk  # noqa: E402

stall_s = float(sys.argv[1])
win = Gtk.Window(title="stall")
win.set_default_size(200, 100)
keys = []
win.connect("key-press-event", lambda w, e: keys.append(Gdk.keyval_name(e.keyval)))
win.connect("destroy", Gtk.main_quit)
win.show_all()


def focus():
    # Before the stall: these wait for the X server's replies, and a pass that began with a
    # reply on the display connection may have read input hangwatch cannot see (perceived null).
    win.present_with_time(Gdk.CURRENT_TIME)
    win.get_window().focus(Gdk.CURRENT_TIME)
    Gdk.Display.get_default().sync()
    return False


def stall():
    print("stalling %d" % win.get_window().get_xid(), flush=True)
    end = time.monotonic() + stall_s
    while time.monotonic() < end:
        pass
    GLib.timeout_add(500, finish)
    return False


def finish():
    print("keys " + " ".join(keys), flush=True)
    win.destroy()
    return False


GLib.timeout_add(800, focus)
GLib.timeout_add(1500, stall)  # once the window has settled: a pass begun by the timer
Gtk.main()
