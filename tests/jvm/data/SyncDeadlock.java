// Two threads deadlocked on synchronized blocks: "worker-a" holds FIRST and wants SECOND,
// "worker-b" holds SECOND and wants FIRST. Prints "ready" once both are BLOCKED.
import java.util.concurrent.CountDownLatch;

public class SyncDeadlock {
  static final Object FIRST = new Object();
  static final Object SECOND = new Object();
  static final CountDownLatch bothHoldOne = new CountDownLatch(2);

  static void lockBoth(Object mine, Object theirs) throws InterruptedException {
    synchronized (mine) {
      bothHoldOne.countDown();
      bothHoldOne.await();
      // Line 15, where both block (on one line: the JVM names the line after monitorenter).
      synchronized (theirs) { System.out.println("unreachable"); }
    }
  }

  static Thread start(String name, Object mine, Object theirs) {
    Thread t = new Thread(() -> {
      try {
        lockBoth(mine, theirs);
      } catch (InterruptedException e) {
        return;
      }
    }, name);
    t.start();
    return t;
  }

  public static void main(String[] args) throws InterruptedException {
    Thread a = start("worker-a", FIRST, SECOND);
    Thread b = start("worker-b", SECOND, FIRST);
    while (a.getState() != Thread.State.BLOCKED || b.getState() != Thread.State.BLOCKED) {
      Thread.sleep(1);
    }
    System.out.println("ready");
    a.join();
  }
}
