package dev.cart.proxy;
import dev.cart.extract.Endpoint;
import java.nio.charset.StandardCharsets;
/**
 * One streamed answer of the bench's fake replica through ResponseObserver, cut as Netty delivers it: one event per chunk.
 * Its 32 text events (property cart.paired.events for another count), the finish event, the usage event and [DONE].
 */
public class HeaderPath implements java.util.function.LongSupplier {
  static final byte[][] EVENTS;
  static {
    String[] words = "the order was sent on the second of the month to the old address and it".split(" ");
    int texts = Integer.getInteger("cart.paired.events", 32);
    EVENTS = new byte[texts + 3][];
    for (int i = 0; i < texts; i++) EVENTS[i] = ev("{\"role\":\"assistant\",\"content\":\"" + words[i % words.length] + " \"}", "null");
    EVENTS[texts] = ev("{}", "\"stop\"");
    EVENTS[texts + 1] = ("data: {\"id\":\"chatcmpl-bench\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,\"model\":\"bench\",\"choices\":[],\"usage\":{\"prompt_tokens\":250,\"completion_tokens\":32,\"total_tokens\":282}}\n\n").getBytes(StandardCharsets.UTF_8);
    EVENTS[texts + 2] = "data: [DONE]\n\n".getBytes(StandardCharsets.UTF_8);
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
