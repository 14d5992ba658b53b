package dev.cart.proxy;
import io.netty.buffer.*;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.http.*;
import io.netty.util.AsciiString;
/**
 * Heads as Netty's decoders leave them (a validating DefaultHttpHeaders, names as AsciiString: the known ones
 * HttpHeaderNames' constants, values Strings), made fresh per call; the encoders both builds' heads go through.
 * which 0 ("bench"): cart-bench's client and its fake replica's JSON answer; 1 ("SDK"): an OpenAI SDK client, a streamed answer.
 */
public class HeadFixtures {
  static final String[][] REQ_BENCH = {{"Host","bench"},{"Content-Type","application/json"},{"Accept","application/json"},{"X-Bench-Answer","json"},{"Content-Length","1024"}};
  static final String[][] REQ_SDK = {{"Host","127.0.0.1:8000"},{"Accept-Encoding","gzip, deflate"},{"Connection","keep-alive"},
        {"Accept","application/json"},{"Content-Type","application/json"},{"User-Agent","OpenAI/Python 1.54.4"},
        {"X-Stainless-Lang","python"},{"X-Stainless-Package-Version","1.54.4"},{"X-Stainless-OS","Linux"},
        {"X-Stainless-Arch","x64"},{"X-Stainless-Runtime","CPython"},{"X-Stainless-Runtime-Version","3.12.3"},
        {"Authorization","Bearer sk-0123456789abcdef0123456789abcdef"},{"X-Stainless-Async","false"},
        {"x-stainless-retry-count","0"},{"x-stainless-read-timeout","600"},{"Content-Length","1024"}};
  static final String[][] RESP_JSON = {{"Content-Type","application/json"},{"Content-Length","812"}};
  static final String[][] RESP_SSE = {{"content-type","text/event-stream"},{"cache-control","no-cache"},{"transfer-encoding","chunked"}};
  static final AsciiString[] KNOWN = {HttpHeaderNames.HOST, HttpHeaderNames.CONTENT_TYPE, HttpHeaderNames.ACCEPT, HttpHeaderNames.CONTENT_LENGTH,
      HttpHeaderNames.ACCEPT_ENCODING, HttpHeaderNames.CONNECTION, HttpHeaderNames.USER_AGENT, HttpHeaderNames.AUTHORIZATION,
      HttpHeaderNames.DATE, HttpHeaderNames.SERVER, HttpHeaderNames.CACHE_CONTROL, HttpHeaderNames.TRANSFER_ENCODING};
  static CharSequence name(String n) {
    for (AsciiString k : KNOWN) if (k.contentEqualsIgnoreCase(n)) return k;
    return new AsciiString(n);
  }
  /** A decoded map: what HttpObjectDecoder makes (a new AsciiString per unknown name, as splitHeaderName does). */
  static HttpHeaders decoded(String[][] kv) {
    HttpHeaders h = DefaultHttpHeadersFactory.headersFactory().newHeaders();
    for (String[] e : kv) h.add(name(e[0]), e[1]);
    return h;
  }
  final EmbeddedChannel reqEnc = new EmbeddedChannel(new HttpRequestEncoder());
  final EmbeddedChannel respEnc = new EmbeddedChannel(new HttpResponseEncoder());
  /** Encodes both heads as the front's pipelines do, and drops the bytes: returns their count. */
  long encode(FullHttpRequest req, HttpResponse resp) {
    long n = 0;
    reqEnc.writeOutbound(req);
    for (Object o; (o = reqEnc.readOutbound()) != null; ) { n += ((ByteBuf) o).readableBytes(); ((ByteBuf) o).release(); }
    respEnc.writeOutbound(resp, LastHttpContent.EMPTY_LAST_CONTENT);
    for (Object o; (o = respEnc.readOutbound()) != null; ) { n += ((ByteBuf) o).readableBytes(); ((ByteBuf) o).release(); }
    return n;
  }
}
