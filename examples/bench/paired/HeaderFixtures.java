package dev.cart.proxy;
import io.netty.handler.codec.http.*;
/** The headers both builds' {@code HeaderPath} harnesses take through the path: two requests and two answers. */
public class HeaderFixtures {
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
}
