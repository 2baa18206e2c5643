// Two threads deadlocked on java.util.concurrent ReentrantLocks: "juc-a" holds FIRST and wants
// SECOND, "juc-b" the other way round. Prints "ready" once each is queued on the other's lock.
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.locks.ReentrantLock;

public class JucDeadlock {
  static final ReentrantLock FIRST = new ReentrantLock();
  static final ReentrantLock SECOND = new ReentrantLock();
  static final CountDownLatch bothHoldOne = new CountDownLatch(2);

  static void lockBoth(ReentrantLock mine, ReentrantLock theirs) throws InterruptedException {
    mine.lock();
    bothHoldOne.countDown();
    bothHoldOne.await();
    theirs.lock();  // line 15: where both wait
  }

  static Thread start(String name, ReentrantLock mine, ReentrantLock theirs) {
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
    Thread a = start("juc-a", FIRST, SECOND);
    Thread b = start("juc-b", SECOND, FIRST);
    while (!SECOND.hasQueuedThread(a) || !FIRST.hasQueuedThread(b)) {
      Thread.sleep(1);
    }
    System.out.println("ready");
    a.join();
  }
}
