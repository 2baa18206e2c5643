# A tiny asyncio HTTP server, run by the unmodified Debian python3 under the preload shim.
# GET /slow blocks the event loop's thread (the main thread) for about a second, in the way
# named by the query: ?busy (a Python loop) or ?sleep (time.sleep). Anything else answers at
# once. The listening port is printed on stdout as soon as the server accepts connections.
import asyncio
import sys
import time


def block_the_loop(how):
    end = time.monotonic() + 1.0
    if how == "sleep":
        time.sleep(1.0)
        return
    n = 0
    while time.monotonic() < end:  # the clock is read once per 20000 additions
        for _ in range(20000):
            n += 1


async def handle(reader, writer):
    request = await reader.readline()
    while (await reader.readline()) not in (b"\r\n", b""):
        pass
    path = request.split(b" ")[1].decode() if request.count(b" ") >= 2 else "/"
    if path.startswith("/slow"):
        block_the_loop("sleep" if path.endswith("?sleep") else "busy")
    body = b"ok\n"
    writer.write(b"HTTP/1.0 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
    await writer.drain()
    writer.close()
    if path == "/quit":
        asyncio.get_running_loop().stop()


async def main():
    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    print(server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()


try:
    asyncio.run(main())
except RuntimeError:
    pass  # loop stopped by /quit
sys.exit(0)
