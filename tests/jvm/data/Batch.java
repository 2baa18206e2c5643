// A batch program: main() computes for 400 ms on the thread the launcher started, which never
// waits for events, prints "ready" and its result, and returns.
public class Batch {
  public static void main(String[] args) {
    System.out.println("ready");
    long end = System.nanoTime() + 400_000_000L;
    long x = 0;
    while (System.nanoTime() < end) x++;
    System.out.println(x > 0 ? "done" : "none");
  }
}
