package dev.cart.proxy;
import com.sun.net.httpserver.Headers;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.SplittableRandom;
/**
 * A routed request and its answer through the proxy's own path, without sockets, as a front drives it: the head's
 * plan, the body's preparation (extraction, choice, lease), the send, the answer's head (Relay), its body through the
 * observer, the replica done (lease closed, usage), delivered (answer learning), the request's end (metrics). The
 * bench's requests (256 chat bodies of about SIZE bytes, a system prompt shared by a sixteenth of them; property
 * cart.paired.size, 32768 unless set) and the bench's fake replica's answers. which 0: the JSON answer (bench label),
 * 1: the 34-event stream (SDK label; property cart.paired.events for another count of text events, 32 unless set), one
 * event per chunk. The build's directory holds learn.txt (true or false):
 * cache.learn_answer of its proxy. Decision lines off (a constant of either side).
 */
public class HeaderPath implements java.util.function.LongSupplier {
  static final String[] WORDS = "the of and to in is was for on that with as by at from this be it are an or which have not had but were their all one been has more new other some when can two there will would after into also time these first people only out most over such".split(" ");
  static final int SIZE = Integer.getInteger("cart.paired.size", 32768);
  static final byte[] JSON;
  static final byte[][] EVENTS;
  static {
    String[] words = "the order was sent on the second of the month to the old address and it".split(" ");
    StringBuilder content = new StringBuilder();
    for (int i = 0; i < 32; i++) content.append(words[i % words.length]).append(' ');
    String usage = "\"usage\":{\"prompt_tokens\":250,\"completion_tokens\":32,\"total_tokens\":282}";
    JSON = ("{\"id\":\"chatcmpl-bench\",\"object\":\"chat.completion\",\"created\":1700000000,\"model\":\"bench\",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":\"" + content + "\"},\"logprobs\":null,\"finish_reason\":\"stop\"}]," + usage + "}").getBytes(StandardCharsets.UTF_8);
    int texts = Integer.getInteger("cart.paired.events", 32);
    EVENTS = new byte[texts + 3][];
    for (int i = 0; i < texts; i++) EVENTS[i] = ev("{\"role\":\"assistant\",\"content\":\"" + words[i % words.length] + " \"}", "null");
    EVENTS[texts] = ev("{}", "\"stop\"");
    EVENTS[texts + 1] = ("data: {\"id\":\"chatcmpl-bench\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,\"model\":\"bench\",\"choices\":[]," + usage + "}\n\n").getBytes(StandardCharsets.UTF_8);
    EVENTS[texts + 2] = "data: [DONE]\n\n".getBytes(StandardCharsets.UTF_8);
  }
  static byte[] ev(String delta, String finish) {
    return ("data: {\"id\":\"chatcmpl-bench\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,\"model\":\"bench\",\"choices\":[{\"index\":0,\"delta\":" + delta + ",\"logprobs\":null,\"finish_reason\":" + finish + "}]}\n\n").getBytes(StandardCharsets.UTF_8);
  }
  static String words(SplittableRandom rnd, int chars) {
    StringBuilder sb = new StringBuilder(chars + 16);
    while (sb.length() < chars) sb.append(WORDS[rnd.nextInt(WORDS.length)]).append(' ');
    sb.setLength(chars);
    return sb.toString();
  }
  static byte[][] bodies(boolean stream) {
    SplittableRandom rnd = new SplittableRandom(SIZE * 31L + (stream ? 1 : 0));
    String[] systems = new String[16];
    for (int i = 0; i < systems.length; i++) systems[i] = "You are assistant number " + i + ". " + words(rnd, SIZE / 2 - 40);
    byte[][] all = new byte[256][];
    for (int i = 0; i < all.length; i++) {
      String head = "{\"model\":\"bench\",\"messages\":[{\"role\":\"system\",\"content\":\"" + systems[i % 16] + "\"},{\"role\":\"user\",\"content\":\"";
      String tail = "\"}],\"stream\":" + stream + ",\"max_tokens\":32}";
      all[i] = (head + words(rnd, Math.max(16, SIZE - head.length() - tail.length())) + tail).getBytes(StandardCharsets.UTF_8);
    }
    return all;
  }
  final ProxyServer server;
  final ProxyCore core;
  final byte[][][] bodies = {bodies(false), bodies(true)};
  final HeaderView requestHeaders, jsonHeaders, sseHeaders;
  int which, i;
  public HeaderPath() throws Exception {
    boolean learn;
    try (InputStream in = HeaderPath.class.getResourceAsStream("/learn.txt")) {
      learn = in == null || new String(in.readAllBytes(), StandardCharsets.US_ASCII).trim().equals("true");
    }
    ProxyConfig config = ConfigLoader.parse("server:\n  host: 127.0.0.1\n  port: 0\nworkers:\n  - url: \"http://127.0.0.1:9\"\n    max_load: 1000\n  - url: \"http://127.0.0.1:10\"\n    max_load: 1000\nproxy:\n  decision_log: false\ncache:\n  learn_answer: " + learn + "\n");
    server = ProxyServer.start(config, new ProxyServer.Options().healthChecks(false));
    var f = ProxyServer.class.getDeclaredField("core"); f.setAccessible(true);
    core = (ProxyCore) f.get(server);
    Headers rq = new Headers(); rq.add("Host", "bench"); rq.add("Content-Type", "application/json"); rq.add("Accept", "application/json");
    requestHeaders = HeaderView.of(rq);
    Headers js = new Headers(); js.add("Content-Type", "application/json"); js.add("Content-Length", Integer.toString(JSON.length));
    jsonHeaders = HeaderView.of(js);
    Headers ss = new Headers(); ss.add("Content-Type", "text/event-stream"); ss.add("Cache-Control", "no-cache"); ss.add("Transfer-Encoding", "chunked");
    sseHeaders = HeaderView.of(ss);
  }
  public long getAsLong() {
    long start = System.nanoTime();
    byte[] body = bodies[which][i++ & 255];
    RequestHead rh = new RequestHead("POST", "/v1/chat/completions", null, "/v1/chat/completions", requestHeaders, 40);
    ProxyCore.Proxied p = (ProxyCore.Proxied) core.plan(rh, Integer.MAX_VALUE, false);
    ProxyCore.Prepared pr = core.prepare(p, body);
    Forwarder.Exchange x = pr.exchange();
    Forwarder.Send s = (Forwarder.Send) x.next();
    Relay rl = (Relay) x.answered(s, 200, which == 0 ? jsonHeaders : sseHeaders);
    rl.firstByte();
    if (which == 0) {
      rl.body(JSON, 0, JSON.length);
    } else {
      for (byte[] e : EVENTS) rl.body(e, 0, e.length);
    }
    rl.upstreamDone();
    rl.delivered();
    core.finished(p, 200, start);
    return body.length;
  }
}
