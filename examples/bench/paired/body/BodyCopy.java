import io.netty.buffer.*;
import io.netty.util.concurrent.FastThreadLocalThread;
import java.lang.management.ManagementFactory;
/**
 * The copy alone, on a FastThreadLocalThread (as an event loop): a direct buffer of SIZE bytes copied into a new byte[]
 * of its size, against into a heap buffer of Netty's default allocator (HELD of them outstanding, the oldest released,
 * as connections hold them until their request ends). Thread CPU time and bytes allocated per copy.
 *
 *   javac -cp PROXY.jar BodyCopy.java && java -Xms1g -Xmx1g -cp PROXY.jar:. BodyCopy
 */
public class BodyCopy {
  static long sink;
  static void run(String name, int size, int held) {
    com.sun.management.ThreadMXBean mx = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    ByteBuf src = Unpooled.directBuffer(size).writeZero(size);
    ByteBuf[] ring = new ByteBuf[held];
    byte[][] aring = new byte[held][];
    for (int round = 0; round < 8; round++) {
      int n = 20000;
      long c0 = mx.getCurrentThreadCpuTime(); long a0 = mx.getCurrentThreadAllocatedBytes();
      for (int i = 0; i < n; i++) { byte[] b = new byte[size]; src.getBytes(0, b); aring[i % held] = b; sink += b[i & (size-1)]; }
      long c1 = mx.getCurrentThreadCpuTime(); long a1 = mx.getCurrentThreadAllocatedBytes();
      for (int i = 0; i < n; i++) { ByteBuf h = ByteBufAllocator.DEFAULT.heapBuffer(size, size); src.getBytes(0, h.array(), h.arrayOffset(), size); sink += h.array()[h.arrayOffset() + (i & (size-1))]; int k = i % held; if (ring[k] != null) ring[k].release(); ring[k] = h; }
      long c2 = mx.getCurrentThreadCpuTime(); long a2 = mx.getCurrentThreadAllocatedBytes();
      if (round >= 5) System.out.printf("%s %d held %d: new byte[] %.0f ns %d B, pooled heap %.0f ns %d B%n", name, size, held, (c1-c0)/(double)n, (a1-a0)/n, (c2-c1)/(double)n, (a2-a1)/n);
    }
    for (ByteBuf b : ring) if (b != null) b.release();
  }
  public static void main(String[] a) throws Exception {
    for (int held : new int[] {1, 32, 64}) {
      Thread t = new FastThreadLocalThread(() -> run("ftl", 32768, held)); t.start(); t.join();
    }
  }
}
