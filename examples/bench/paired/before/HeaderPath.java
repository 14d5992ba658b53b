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
    Headers h = NettyFront.headersOf(in);
    long count = 0, bytes = 0; // ProxyCore.headLimits
    for (Map.Entry<String, List<String>> e : h.entrySet()) for (String v : e.getValue()) { count++; bytes += e.getKey().length() + 4L + v.length(); }
    sink += count + bytes;
    Headers filtered = HopByHop.requestHeaders(h); // Forwarder.Exchange
    for (Map.Entry<String, List<String>> e : filtered.entrySet()) for (String v : e.getValue()) up.add(e.getKey(), v); // Call.write
    up.set(HttpHeaderNames.HOST, "127.0.0.1:8001");
    HttpHeaders ans = HeaderFixtures.RESP[which];
    HttpHeaders out = new DefaultHttpHeaders();
    Headers a = NettyFront.headersOf(ans); // Call.answerHead
    Headers client = new Headers(); HopByHop.copyResponseHeaders(a, client); // Relay
    String ct = a.getFirst("content-type"); boolean chunked = a.containsKey("transfer-encoding");
    String cl = a.getFirst("content-length"); String ce = a.getFirst("content-encoding");
    boolean bad = a.containsKey("transfer-encoding") && a.containsKey("content-length"); // Forwarder.invalidAnswer
    sink += (ct == null ? 0 : ct.length()) + (chunked ? 1 : 0) + (cl == null ? 0 : cl.length()) + (ce == null ? 0 : 1) + (bad ? 1 : 0);
    for (Map.Entry<String, List<String>> e : client.entrySet()) for (String v : e.getValue()) out.add(e.getKey(), v); // relayHead
    return sink + up.size() + out.size();
  }
}
