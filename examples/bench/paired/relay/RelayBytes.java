package dev.cart.proxy;
import java.lang.management.ManagementFactory;
/**
 * Bytes allocated per routed request by each step of relay's path (HeaderPath, same requests, answers and proxy
 * configuration; learning on unless learn.txt says false), on one thread, exact (the thread's allocated-bytes counter
 * read between the steps), after 20,000 requests of warm-up: what allocates where, deterministically, on a loaded
 * machine. Not a timing.
 *
 *   javac -d /tmp/rb -cp PROXY.jar examples/bench/paired/relay/HeaderPath.java examples/bench/paired/relay/RelayBytes.java
 *   java -Dcart.paired.size=1024 -cp /tmp/rb:PROXY.jar dev.cart.proxy.RelayBytes
 */
public class RelayBytes {
  static final com.sun.management.ThreadMXBean MX = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
  static final String[] STEPS = {"plan", "prepare", "next", "answered", "firstByte", "body", "upstreamDone", "delivered", "finished"};
  final long[] bytes = new long[STEPS.length];
  long mark;

  void step(int k) {
    long now = MX.getCurrentThreadAllocatedBytes();
    bytes[k] += now - mark;
    mark = MX.getCurrentThreadAllocatedBytes();
  }

  void request(HeaderPath h) {
    long start = System.nanoTime();
    byte[] body = h.bodies[h.which][h.i++ & 255];
    RequestHead rh = new RequestHead("POST", "/v1/chat/completions", null, "/v1/chat/completions", h.requestHeaders, 40);
    mark = MX.getCurrentThreadAllocatedBytes();
    ProxyCore.Proxied p = (ProxyCore.Proxied) h.core.plan(rh, Integer.MAX_VALUE, false); step(0);
    ProxyCore.Prepared pr = h.core.prepare(p, body); step(1);
    Forwarder.Exchange x = pr.exchange();
    Forwarder.Send s = (Forwarder.Send) x.next(); step(2);
    Relay rl = (Relay) x.answered(s, 200, h.which == 0 ? h.jsonHeaders : h.sseHeaders); step(3);
    rl.firstByte(); step(4);
    if (h.which == 0) {
      rl.body(HeaderPath.JSON, 0, HeaderPath.JSON.length);
    } else {
      for (byte[] e : HeaderPath.EVENTS) rl.body(e, 0, e.length);
    }
    step(5);
    rl.upstreamDone(); step(6);
    rl.delivered(); step(7);
    h.core.finished(p, 200, start); step(8);
  }

  public static void main(String[] a) throws Exception {
    int n = 20_000;
    for (int w = 0; w < 2; w++) {
      HeaderPath h = new HeaderPath();
      h.which = w;
      RelayBytes r = new RelayBytes();
      for (int i = 0; i < n; i++) r.request(h);
      java.util.Arrays.fill(r.bytes, 0);
      for (int i = 0; i < n; i++) r.request(h);
      StringBuilder out = new StringBuilder(w == 0 ? "JSON answer:" : "streamed:   ");
      long total = 0;
      for (int k = 0; k < STEPS.length; k++) {
        out.append(' ').append(STEPS[k]).append(' ').append(r.bytes[k] / n);
        total += r.bytes[k];
      }
      System.out.println(out.append(", total ").append(total / n).append(" B per request"));
    }
    System.exit(0); // the proxies' event loops
  }
}
