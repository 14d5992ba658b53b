package dev.cart.proxy;
import com.sun.net.httpserver.Headers;
import io.netty.handler.codec.http.*;
import java.util.*;
/** The request's and the answer's headers through the Netty front's path, as the build at hand does it. */
public class HeaderPath implements java.util.function.LongSupplier {
  int which;
  public long getAsLong() { // one request and its answer; returns something so the work is not dropped
    long sink = 0;
    HttpHeaders in = HeaderFixtures.REQ[which];
    HttpHeaders up = new DefaultHttpHeaders();
    HeaderView h = NettyFront.view(in);
    long[] cb = new long[2]; // ProxyCore.headLimits
    h.forEach((n, v) -> { cb[0]++; cb[1] += n.length() + 4L + v.length(); });
    sink += cb[0] + cb[1];
    HopByHop.forEachRequestHeader(h, up::add); // Call.write
    up.set(HttpHeaderNames.HOST, "127.0.0.1:8001");
    HttpHeaders ans = HeaderFixtures.RESP[which];
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
