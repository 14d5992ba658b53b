package dev.cart.proxy;
import dev.cart.extract.Endpoint;
import java.nio.charset.StandardCharsets;
/** One streamed answer of the bench's fake replica through ResponseObserver, cut as Netty delivers it: one event per chunk. */
public class HeaderPath implements java.util.function.LongSupplier {
  static final byte[][] EVENTS;
  static {
    String[] words = "the order was sent on the second of the month to the old address and it".split(" ");
    EVENTS = new byte[35][];
    for (int i = 0; i < 32; i++) EVENTS[i] = ev("{\"role\":\"assistant\",\"content\":\"" + words[i % words.length] + " \"}", "null");
    EVENTS[32] = ev("{}", "\"stop\"");
    EVENTS[33] = ("data: {\"id\":\"chatcmpl-bench\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,\"model\":\"bench\",\"choices\":[],\"usage\":{\"prompt_tokens\":250,\"completion_tokens\":32,\"total_tokens\":282}}\n\n").getBytes(StandardCharsets.UTF_8);
    EVENTS[34] = "data: [DONE]\n\n".getBytes(StandardCharsets.UTF_8);
  }
  static byte[] ev(String delta, String finish) {
    return ("data: {\"id\":\"chatcmpl-bench\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,\"model\":\"bench\",\"choices\":[{\"index\":0,\"delta\":" + delta + ",\"logprobs\":null,\"finish_reason\":" + finish + "}]}\n\n").getBytes(StandardCharsets.UTF_8);
  }
  int which;
  public long getAsLong() {
    ResponseObserver o = ResponseObserver.create(Endpoint.CHAT_COMPLETIONS, "text/event-stream", null, which == 0);
    for (byte[] e : EVENTS) o.accept(e, 0, e.length);
    o.finish();
    if (o.parseFailures() != 0 || o.usage().promptTokens() != 250) throw new AssertionError();
    return o.reply() == null ? 0 : o.reply().get(0).length();
  }
}
