// A JVM doing nothing: its main thread sleeps in idleLoop. Prints "ready" once running.
public class Idle {
  static void idleLoop() throws InterruptedException {
    for (;;) {
      Thread.sleep(60_000);
    }
  }

  public static void main(String[] args) throws InterruptedException {
    System.out.println("ready");
    idleLoop();
  }
}
