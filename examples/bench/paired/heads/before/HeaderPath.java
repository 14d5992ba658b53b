package dev.cart.proxy;
import io.netty.buffer.Unpooled;
import io.netty.handler.codec.http.*;
/** main's Call.write and relayHead (736c964): new validating messages, headers copied through HopByHop, lengths from longs. */
public class HeaderPath extends HeadFixtures implements java.util.function.LongSupplier {
  int which;
  public long getAsLong() {
    HttpHeaders in = decoded(which == 0 ? REQ_BENCH : REQ_SDK);
    HttpHeaders ans = decoded(which == 0 ? RESP_JSON : RESP_SSE);
    FullHttpRequest req = new DefaultFullHttpRequest(HttpVersion.HTTP_1_1, HttpMethod.POST, "/v1/chat/completions", Unpooled.EMPTY_BUFFER);
    HttpHeaders h = req.headers();
    try { HopByHop.forEachRequestHeader(NettyFront.view(in), h::add); } catch (IllegalArgumentException e) { h.clear(); }
    h.set(HttpHeaderNames.HOST, "127.0.0.1:8001");
    HttpUtil.setContentLength(req, 1024);
    HttpResponse resp = new DefaultHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.valueOf(200));
    HopByHop.forEachResponseHeader(NettyFront.view(ans), null, resp.headers()::add);
    if (which == 0) HttpUtil.setContentLength(resp, 812); else HttpUtil.setTransferEncodingChunked(resp, true);
    return encode(req, resp);
  }
}
