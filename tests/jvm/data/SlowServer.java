// An HTTP server (the JDK's own) whose handlers run on its dispatcher thread, HTTP-Dispatcher,
// which waits for connections in epoll_wait (an NIO selector): GET /?ms=N computes for N ms on
// that thread in spin(), which the JIT compiles, while every other request waits; GET /?nap=N
// sleeps N ms on it in nap(), a native method (Thread.sleep) under Java frames; GET /?read=N
// reads a socket whose peer never writes for N ms in await() (the JDK's socket code, its
// libnio). GET /quit
// stops the server and the JVM exits. Prints "port N" and "ready" once serving.
import com.sun.net.httpserver.HttpServer;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
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

  static void nap(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  static int await(long ms) throws java.io.IOException {
    try (ServerSocket quiet = new ServerSocket(0);
        Socket socket = new Socket("127.0.0.1", quiet.getLocalPort())) {
      socket.setSoTimeout((int) ms);
      try {
        return socket.getInputStream().read();
      } catch (SocketTimeoutException e) {
        return -1;
      }
    }
  }

  public static void main(String[] args) throws Exception {
    HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    server.createContext("/", exchange -> {
      String q = exchange.getRequestURI().getQuery();
      long ms = q != null && q.startsWith("ms=") ? Long.parseLong(q.substring(3)) : 0;
      if (q != null && q.startsWith("nap=")) nap(Long.parseLong(q.substring(4)));
      if (q != null && q.startsWith("read=")) await(Long.parseLong(q.substring(5)));
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
