# The upstream a handler calls synchronously (preload_handler_wait_test.cc): a local HTTP server
# that answers every GET after DELAY seconds. Run without the shim. Prints its port on stdout
# once it accepts connections.
import http.server
import sys
import time

DELAY = float(sys.argv[1])


class Slow(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        time.sleep(DELAY)
        body = b"upstream\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


server = http.server.HTTPServer(("127.0.0.1", 0), Slow)
print(server.server_address[1], flush=True)
server.serve_forever()
