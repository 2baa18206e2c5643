// A Swing program that opens a window (dozens of X round trips on main()'s thread and on the
// AWT event thread), prints "ready", idles 2.5 s (its event thread waits on a Java monitor), has
// its event thread compute for 600 ms, and exits.
import javax.swing.JFrame;
import javax.swing.SwingUtilities;

public class SwingIdle {
  public static void main(String[] args) throws Exception {
    SwingUtilities.invokeAndWait(() -> {
      JFrame frame = new JFrame("idle");
      frame.setSize(120, 80);
      frame.setVisible(true);
    });
    System.out.println("ready");
    Thread.sleep(2500);
    SwingUtilities.invokeAndWait(() -> {
      long end = System.nanoTime() + 600_000_000L;
      long x = 0;
      while (System.nanoTime() < end) x++;
    });
    System.exit(0);
  }
}
