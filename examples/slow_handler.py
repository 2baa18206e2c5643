"""An unmodified event-loop program to watch with `hangwatch run` (README.md, docs/run.md,
docs/python.md): a selectors loop that handles a few events; one of them computes for 300 ms."""
import os
import selectors
import time


def price(items):
    total = 0
    end = time.monotonic() + 0.3
    while time.monotonic() < end:
        total += items * items % 7
    return total


def handle_request(number):
    return price(number) if number == 2 else 0


def main():
    selector = selectors.DefaultSelector()
    reader, writer = os.pipe()
    selector.register(reader, selectors.EVENT_READ)
    handled = 0
    while handled < 4:
        ready = selector.select(timeout=0.02)  # the loop's wait: idle, never a hang
        if not ready:
            os.write(writer, b"x")  # the next event
            continue
        os.read(reader, 1)
        handle_request(handled)
        handled += 1


main()
