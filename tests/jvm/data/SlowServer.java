// An HTTP server (the JDK's own) whose handlers run on its dispatcher thread, HTTP-Dispatcher,
// which waits for connections in epoll_wait (an NIO selector): GET /?ms=N computes for N ms on
// that thread in spin(), which the JIT compiles, while every other request waits. GET /quit
// stops the server and the JVM exits. Prints "port N" and "ready" once serving.
import com.sun.net.httpserver.HttpServer;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;

public class SlowServer {
  static long spin(long ms) {
    long end = System.nanoTime() + ms * 1_000_000L;
    long x = 0;
    while (System.nanoTime() < end) {
      for (int i = 0; i < 10_000; i++) x = x * 31 + i;
    }
    return x;
  }

  public static void main(String[] args) throws Exception {
    HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    server.createContext("/", exchange -> {
      String q = exchange.getRequestURI().getQuery();
      long ms = q != null && q.startsWith("ms=") ? Long.parseLong(q.substring(3)) : 0;
      byte[] body = ("ok " + spin(ms) + "\n").getBytes(StandardCharsets.UTF_8);
      exchange.sendResponseHeaders(200, body.length);
      try (OutputStream out = exchange.getResponseBody()) {
        out.write(body);
      }
      if (exchange.getRequestURI().getPath().equals("/quit")) {
        new Thread(() -> server.stop(0)).start();
      }
    });
    server.start();
    System.out.println("port " + server.getAddress().getPort());
    System.out.println("ready");
  }
}
