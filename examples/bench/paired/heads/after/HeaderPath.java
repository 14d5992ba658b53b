package dev.cart.proxy;
import io.netty.buffer.Unpooled;
import io.netty.handler.codec.http.*;
import java.util.ArrayList;
/** This build's Call.write and relayHead: the decoded maps less the dropped names, lengths as text, no new maps. */
public class HeaderPath extends HeadFixtures implements java.util.function.LongSupplier {
  int which;
  final ArrayList<CharSequence> dropped = new ArrayList<>();
  final java.util.function.Consumer<CharSequence> drop = dropped::add;
  HttpHeaders pruned(HttpHeaders map) { for (int i = 0; i < dropped.size(); i++) map.remove(dropped.get(i)); dropped.clear(); return map; }
  public long getAsLong() {
    HttpHeaders in = decoded(which == 0 ? REQ_BENCH : REQ_SDK);
    HttpHeaders ans = decoded(which == 0 ? RESP_JSON : RESP_SSE);
    HopByHop.forEachDroppedRequestName(NettyFront.view(in), drop);
    HttpHeaders h = pruned(in);
    h.add(HttpHeaderNames.HOST, "127.0.0.1:8001");
    h.add(HttpHeaderNames.CONTENT_LENGTH, Integer.toString(1024));
    FullHttpRequest req = new DefaultFullHttpRequest(HttpVersion.HTTP_1_1, HttpMethod.POST, "/v1/chat/completions", Unpooled.EMPTY_BUFFER, h, EmptyHttpHeaders.INSTANCE);
    HopByHop.forEachDroppedResponseName(NettyFront.view(ans), null, drop);
    HttpHeaders r = pruned(ans);
    if (which == 0) r.add(HttpHeaderNames.CONTENT_LENGTH, Long.toString(812L)); else r.add(HttpHeaderNames.TRANSFER_ENCODING, HttpHeaderValues.CHUNKED);
    HttpResponse resp = new DefaultHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.valueOf(200), r);
    return encode(req, resp);
  }
}
