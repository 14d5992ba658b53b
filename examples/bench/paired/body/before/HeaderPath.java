package dev.cart.proxy;
import com.sun.net.httpserver.Headers;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.CompositeByteBuf;
import io.netty.buffer.Unpooled;
import java.nio.charset.StandardCharsets;
import java.util.SplittableRandom;
/**
 * The Netty front's request body path, without sockets: the body as the front holds it once read (the client's
 * direct buffers, pieces of PIECE bytes: property cart.paired.piece, 16384 unless set), made into the array the
 * core reads, then the request prepared and answered as the relay harness does (plan, prepare: extraction, choice, lease; send; the JSON answer's head and
 * body; upstream done, delivered, end).
 * BEFORE (main at a0c77d3): a byte[] of the body's size per request, filled from the buffers, handed to the core.
 * which 0: the bench's 32 KB chat bodies (bench label), 1: 1 KB ones (SDK label); 256 bodies each, a system prompt
 * shared by a sixteenth of them, as the relay harness makes them. Answer learning on, decision lines off.
 */
public class HeaderPath implements java.util.function.LongSupplier {
  static final String[] WORDS = "the of and to in is was for on that with as by at from this be it are an or which have not had but were their all one been has more new other some when can two there will would after into also time these first people only out most over such".split(" ");
  static final byte[] JSON;
  static {
    String[] words = "the order was sent on the second of the month to the old address and it".split(" ");
    StringBuilder content = new StringBuilder();
    for (int i = 0; i < 32; i++) content.append(words[i % words.length]).append(' ');
    String usage = "\"usage\":{\"prompt_tokens\":250,\"completion_tokens\":32,\"total_tokens\":282}";
    JSON = ("{\"id\":\"chatcmpl-bench\",\"object\":\"chat.completion\",\"created\":1700000000,\"model\":\"bench\",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":\"" + content + "\"},\"logprobs\":null,\"finish_reason\":\"stop\"}]," + usage + "}").getBytes(StandardCharsets.UTF_8);
  }
  static String words(SplittableRandom rnd, int chars) {
    StringBuilder sb = new StringBuilder(chars + 16);
    while (sb.length() < chars) sb.append(WORDS[rnd.nextInt(WORDS.length)]).append(' ');
    sb.setLength(chars);
    return sb.toString();
  }
  static byte[][] bodies(int size) {
    boolean stream = false;
    SplittableRandom rnd = new SplittableRandom(size * 31L);
    String[] systems = new String[16];
    for (int i = 0; i < systems.length; i++) systems[i] = "You are assistant number " + i + ". " + words(rnd, size / 2 - 40);
    byte[][] all = new byte[256][];
    for (int i = 0; i < all.length; i++) {
      String head = "{\"model\":\"bench\",\"messages\":[{\"role\":\"system\",\"content\":\"" + systems[i % 16] + "\"},{\"role\":\"user\",\"content\":\"";
      String tail = "\"}],\"stream\":" + stream + ",\"max_tokens\":32}";
      all[i] = (head + words(rnd, Math.max(16, size - head.length() - tail.length())) + tail).getBytes(StandardCharsets.UTF_8);
    }
    return all;
  }
  /** Each body as direct buffers of PIECE bytes in a composite, as the front keeps the client's buffers. */
  static ByteBuf[] pieces(byte[][] all) {
    ByteBuf[] out = new ByteBuf[all.length];
    for (int i = 0; i < all.length; i++) {
      CompositeByteBuf c = Unpooled.compositeBuffer(64);
      for (int at = 0; at < all[i].length; at += PIECE) {
        int n = Math.min(PIECE, all[i].length - at);
        c.addComponent(true, Unpooled.directBuffer(n).writeBytes(all[i], at, n));
      }
      out[i] = c;
    }
    return out;
  }
  final ProxyServer server;
  final ProxyCore core;
  static final int PIECE = Integer.getInteger("cart.paired.piece", 16384);
  final ByteBuf[][] bodies = {pieces(bodies(32768)), pieces(bodies(1024))};
  final HeaderView requestHeaders, jsonHeaders, sseHeaders;
  int which, i;
  public HeaderPath() throws Exception {
    boolean learn = true;
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
    ByteBuf body = bodies[which][i++ & 255];
    RequestHead rh = new RequestHead("POST", "/v1/chat/completions", null, "/v1/chat/completions", requestHeaders, 40);
    ProxyCore.Proxied p = (ProxyCore.Proxied) core.plan(rh, Integer.MAX_VALUE, false);
    int length = body.readableBytes();
    byte[] bytes = new byte[length];
    body.getBytes(body.readerIndex(), bytes);
    ProxyCore.Prepared pr = core.prepare(p, bytes);
    Forwarder.Exchange x = pr.exchange();
    Forwarder.Send s = (Forwarder.Send) x.next();
    Relay rl = (Relay) x.answered(s, 200, jsonHeaders);
    rl.firstByte();
    rl.body(JSON, 0, JSON.length);
    rl.upstreamDone();
    rl.delivered();
    core.finished(p, 200, start);
    return length;
  }
}
