package dev.cart.proxy;
import com.sun.net.httpserver.Headers;
import io.netty.handler.codec.http.*;
import java.util.*;
/** The request's and the answer's headers through the Netty front's path, as the build at hand does it. */
public class HeaderPath implements java.util.function.LongSupplier {
  static final HttpHeaders[] REQ = new HttpHeaders[2];
  static final HttpHeaders[] RESP = new HttpHeaders[2];
  static {
    HttpHeaders b = new DefaultHttpHeaders(); // the bench's client
    b.add("Host", "bench"); b.add("Content-Type", "application/json"); b.add("Accept", "text/event-stream");
    b.add("X-Bench-Answer", "sse"); b.add("Content-Length", "1024");
    HttpHeaders s = new DefaultHttpHeaders(); // an OpenAI SDK client
    for (String[] kv : new String[][] {{"Host","127.0.0.1:8000"},{"Accept-Encoding","gzip, deflate"},{"Connection","keep-alive"},
        {"Accept","application/json"},{"Content-Type","application/json"},{"User-Agent","OpenAI/Python 1.54.4"},
        {"X-Stainless-Lang","python"},{"X-Stainless-Package-Version","1.54.4"},{"X-Stainless-OS","Linux"},
        {"X-Stainless-Arch","x64"},{"X-Stainless-Runtime","CPython"},{"X-Stainless-Runtime-Version","3.12.3"},
        {"Authorization","Bearer sk-0123456789abcdef0123456789abcdef"},{"X-Stainless-Async","false"},
        {"x-stainless-retry-count","0"},{"x-stainless-read-timeout","600"},{"Content-Length","1024"}}) s.add(kv[0], kv[1]);
    REQ[0] = b; REQ[1] = s;
    HttpHeaders r1 = new DefaultHttpHeaders(); // the fake replica's streamed answer
    r1.add("Content-Type", "text/event-stream"); r1.add("Cache-Control", "no-cache"); r1.add("Transfer-Encoding", "chunked");
    HttpHeaders r2 = new DefaultHttpHeaders(); // vLLM (uvicorn) JSON answer
    r2.add("date", "Wed, 02 Dec 2026 02:00:00 GMT"); r2.add("server", "uvicorn"); r2.add("content-length", "812");
    r2.add("content-type", "application/json");
    RESP[0] = r1; RESP[1] = r2;
  }
  int which;
  public long getAsLong() { // one request and its answer; returns something so the work is not dropped
    long sink = 0;
    HttpHeaders in = REQ[which];
    HttpHeaders up = new DefaultHttpHeaders();
    HeaderView h = NettyFront.view(in);
    long[] cb = new long[2]; // ProxyCore.headLimits
    h.forEach((n, v) -> { cb[0]++; cb[1] += n.length() + 4L + v.length(); });
    sink += cb[0] + cb[1];
    HopByHop.forEachRequestHeader(h, up::add); // Call.write
    up.set(HttpHeaderNames.HOST, "127.0.0.1:8001");
    HttpHeaders ans = RESP[which];
    HttpHeaders out = new DefaultHttpHeaders();
    HeaderView a = NettyFront.view(ans); // Call.answerHead
    String ct = a.first("content-type"); boolean chunked = a.has("transfer-encoding");
    String cl = a.first("content-length"); String ce = a.first("content-encoding");
    boolean bad = a.has("transfer-encoding") && a.has("content-length"); // Forwarder.invalidAnswer
    sink += (ct == null ? 0 : ct.length()) + (chunked ? 1 : 0) + (cl == null ? 0 : cl.length()) + (ce == null ? 0 : 1) + (bad ? 1 : 0);
    HopByHop.forEachResponseHeader(a, null, out::add); // Relay.clientHeaders, relayHead
    return sink + up.size() + out.size();
  }
}
