import java.lang.management.ManagementFactory;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.function.LongSupplier;
/** Two builds' harness (dev.cart.proxy.HeaderPath, a LongSupplier) in one JVM, rounds alternating (ABBA), thread CPU and bytes allocated per call. */
public class Paired {
  public static void main(String[] a) throws Exception {
    String[][] builds = {{a[0], a[1]}, {a[2], a[3]}}; // jar, harness classes
    LongSupplier[][] h = new LongSupplier[2][2];
    for (int b = 0; b < 2; b++) {
      ClassLoader cl = new URLClassLoader(new URL[] {Path.of(builds[b][1]).toUri().toURL(), Path.of(builds[b][0]).toUri().toURL()}, ClassLoader.getPlatformClassLoader());
      for (int w = 0; w < 2; w++) {
        Object o = cl.loadClass("dev.cart.proxy.HeaderPath").getDeclaredConstructor().newInstance();
        var f = o.getClass().getDeclaredField("which"); f.setAccessible(true); f.setInt(o, w);
        h[b][w] = (LongSupplier) o;
      }
    }
    com.sun.management.ThreadMXBean mx = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    int rounds = Integer.parseInt(a[4]), n = Integer.parseInt(a.length > 5 ? a[5] : "20000"); long sink = 0;
    for (int w = 0; w < 2; w++) {
      double[][] ns = new double[2][rounds]; long[] bytes = new long[2]; double[] ratio = new double[rounds];
      for (int r = -5; r < rounds; r++) { // 5 warm-up rounds
        for (int k = 0; k < 2; k++) {
          int b = (r & 1) == 0 ? k : 1 - k; // ABBA
          long c0 = mx.getCurrentThreadCpuTime(), al0 = mx.getCurrentThreadAllocatedBytes();
          for (int i = 0; i < n; i++) sink += h[b][w].getAsLong();
          long c1 = mx.getCurrentThreadCpuTime(), al1 = mx.getCurrentThreadAllocatedBytes();
          if (r >= 0) { ns[b][r] = (c1 - c0) / (double) n; bytes[b] = (al1 - al0) / n; }
        }
        if (r >= 0) ratio[r] = ns[1][r] / ns[0][r];
      }
      for (double[] x : ns) Arrays.sort(x); Arrays.sort(ratio);
      String[] names = (a.length > 7 ? a[7] : "before,after").split(",");
      System.err.printf("%s: " + names[0] + " %.0f ns (min %.0f) %d B, " + names[1] + " %.0f ns (min %.0f) %d B per call; " + names[1] + "/" + names[0] + " median %.2f (IQR %.2f-%.2f) over %d rounds%n",
          (a.length > 6 ? a[6] : "") + (w == 0 ? "bench" : "SDK"), ns[0][rounds / 2], ns[0][0], bytes[0], ns[1][rounds / 2], ns[1][0], bytes[1], ratio[rounds / 2], ratio[rounds / 4], ratio[3 * rounds / 4], rounds);
    }
    if (sink == 42) System.out.println();
    System.exit(0); // a harness may have started non-daemon threads (a proxy's event loops)
  }
}
