package dev.cart.jmh.kvevents;

import dev.cart.kvevents.EngineTokenizer;
import dev.cart.kvevents.KvIndex;
import dev.cart.kvevents.PromptTokens;
import dev.cart.kvevents.TokenizeRequest;
import dev.cart.sim.SimulatedReplicaServer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;

/**
 * The cost precise mode adds before a lookup: asking the engine for the request's tokens
 * ({@code POST /tokenize}) with {@link EngineTokenizer}, here against the simulated replica on loopback (its
 * tokenizer is {@code cl100k_base} with a Llama-3 template, in Java: a real engine's differs). A chat request
 * of about {@code tokens} tokens; {@code runs} round trips after a warm-up; quantiles printed.
 *
 * <p>Run: {@code java -cp cart-jmh/target/benchmarks.jar dev.cart.jmh.kvevents.TokenizeRoundTrip [tokens] [runs]}.
 */
public final class TokenizeRoundTrip {

    private TokenizeRoundTrip() {}

    public static void main(String[] args) throws Exception {
        int tokens = args.length > 0 ? Integer.parseInt(args[0]) : 8_000;
        int runs = args.length > 1 ? Integer.parseInt(args[1]) : 1_000;
        try (SimulatedReplicaServer r = SimulatedReplicaServer.start(SimulatedReplicaServer.Options.defaults())) {
            KvIndex index = KvIndex.builder().build();
            EngineTokenizer tok = EngineTokenizer.builder(index)
                    .timeout(Duration.ofSeconds(5))
                    .connectTimeout(Duration.ofSeconds(2))
                    .build();
            StringBuilder text = new StringBuilder();
            for (int i = 0; text.length() < tokens * 4; i++) {
                text.append("sentence ").append(i).append(" of the shared system prompt, kept short. ");
            }
            String body = "{\"model\":\"sim\",\"messages\":[{\"role\":\"system\",\"content\":\"" + text
                    + "\"},{\"role\":\"user\",\"content\":\"what now?\"}]}";
            TokenizeRequest req = TokenizeRequest.of(TokenizeRequest.Api.CHAT, body.getBytes(StandardCharsets.UTF_8));
            List<String> replica = List.of(r.baseUri().toString());
            int got = 0;
            for (int i = 0; i < 200; i++) {
                got = tok.tokenize(req, replica).tokens().length;
            }
            long[] nanos = new long[runs];
            for (int i = 0; i < runs; i++) {
                PromptTokens t = tok.tokenize(req, replica);
                if (!t.ok()) {
                    throw new IllegalStateException(t.failure());
                }
                nanos[i] = t.nanos();
            }
            Arrays.sort(nanos);
            System.out.printf(
                    "tokenize round trip, %d tokens: p50=%.2f ms p99=%.2f ms max=%.2f ms (%d runs)%n",
                    got,
                    nanos[runs / 2] / 1e6,
                    nanos[(int) Math.ceil(runs * 0.99) - 1] / 1e6,
                    nanos[runs - 1] / 1e6,
                    runs);
        }
    }
}
