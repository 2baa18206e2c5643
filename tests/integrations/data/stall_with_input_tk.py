"""A Tk window that stalls STALL_S seconds in a timer callback, then reports the keys it was
given. Prints "stalling WINDOW_ID" as the stall starts (the test types or pings then), "keys
K1 K2 ..." with the keys it received afterwards, and exits. Run under the preload shim by
preload_input_test."""
import sys
import time
import tkinter

stall_s = float(sys.argv[1])
root = tkinter.Tk()
root.geometry("200x100+0+0")
keys = []
root.bind("<KeyPress>", lambda e: keys.append(e.keysym))


def stall():
    root.focus_force()
    root.update_idletasks()
    print("stalling %d" % int(root.wm_frame(), 16), flush=True)
    end = time.monotonic() + stall_s
    while time.monotonic() < end:
        pass
    root.after(500, finish)


def finish():
    print("keys " + " ".join(keys), flush=True)
    root.destroy()


root.after(800, stall)
root.mainloop()
