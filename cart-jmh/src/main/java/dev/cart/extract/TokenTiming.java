package dev.cart.extract;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.cart.core.PromptKey;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * A rough timing of token mode, run by hand (never asserted): {@code java -cp cart-jmh/target/benchmarks.jar
 * dev.cart.extract.TokenTiming [cl100k_base|o200k_base]} (the jar from {@code mvn -B -ntp -Pbench -pl cart-jmh
 * -am package -DskipTests}). In {@code cart-extract}'s package, as {@link ExtractionTiming}: it reads the
 * extractor's package-private token cache and boundary mark.
 *
 * <p>On the 32 KB chat body of {@link ExtractionTiming} (tools, a 4 KB system prompt, alternating turns)
 * it reports, per call, the median over 15 rounds (each round about 0.2 s; every operation is first run
 * for 2 s so that the JIT has compiled all of them before any is measured) of:
 * <ul>
 *   <li>character mode, for comparison;</li>
 *   <li>token mode <b>cold</b>: no cache, every segment tokenized;</li>
 *   <li>token mode, <b>system prompt warm</b>: 400 variants of the body with the same tools and system
 *       prompt and every message made unique, taken in turn, so only the tools and system segments hit;</li>
 *   <li>token mode, <b>next turn</b>: the same history, the last two messages unique (a conversation's
 *       next turn: everything but the newest user message and the reply before it hits; 1,000 variants,
 *       so the 2,000 new segments of a cycle do not fit the cache);</li>
 *   <li>token mode, <b>all warm</b>: the same body again (every segment hits);</li>
 *   <li>the parts: tokenizing the segments alone, the whole key text in one call, and
 *       {@code PromptKey.ofTokens} over the ids (the key-building cost).</li>
 * </ul>
 */
public final class TokenTiming {

    private static final ObjectMapper JSON = new ObjectMapper();

    private static volatile long sink;

    private TokenTiming() {}

    private interface Op {
        void run() throws Exception;
    }

    public static void main(String[] args) throws Exception {
        String encoding = args.length > 0 ? args[0] : "cl100k_base";
        System.out.println(System.getProperty("java.vm.name") + " " + System.getProperty("java.runtime.version") + ", "
                + Runtime.getRuntime().availableProcessors() + " CPUs, " + encoding);
        long t0 = System.nanoTime();
        Tokenizer tok = Tokenizers.jtokkit(encoding);
        System.out.printf("loading the encoding: %.0f ms%n", (System.nanoTime() - t0) / 1e6);

        byte[] body = ExtractionTiming.chatBody(32 * 1024, false);
        Endpoint ep = Endpoint.CHAT_COMPLETIONS;
        PromptExtractor chars = new PromptExtractor(ExtractOptions.defaults());
        PromptExtractor cold = new PromptExtractor(
                ExtractOptions.builder().tokenizer(tok).tokenCacheEntries(0).build());
        PromptExtractor warm =
                new PromptExtractor(ExtractOptions.builder().tokenizer(tok).build());

        String keyText = chars.keyText(ep, body);
        String[] segments = keyText.split(String.valueOf(Extraction.BOUNDARY_MARK), -1);
        if (segments[segments.length - 1].isEmpty()) {
            segments = Arrays.copyOf(segments, segments.length - 1);
        }
        String whole = keyText.replace(String.valueOf(Extraction.BOUNDARY_MARK), "");
        ExtractedRequest r = warm.extract(ep, body);
        PromptKey charKey = chars.extract(ep, body).key();
        System.out.printf(
                "body %,d bytes; key %,d chars, %d segments (%,d chars of tools, %,d of system prompt); "
                        + "%,d tokens, %d blocks of 16, %d boundaries%n",
                body.length,
                charKey.length(),
                segments.length,
                segments[0].length(),
                segments[1].length(),
                r.key().length(),
                r.key().blockCount(),
                r.key().boundaryCount());

        List<byte[]> unique = variants(body, 400, false);
        List<byte[]> nextTurn = variants(body, 1000, true);
        int[] next = {0};

        String[] segs = segments;
        int[][] ids = new int[segs.length][];
        int total = 0;
        for (int i = 0; i < segs.length; i++) {
            ids[i] = tok.encode(segs[i]);
            total += ids[i].length;
        }
        int[] all = new int[total];
        int[] bounds = new int[segs.length];
        for (int i = 0, at = 0; i < segs.length; i++) {
            System.arraycopy(ids[i], 0, all, at, ids[i].length);
            at += ids[i].length;
            bounds[i] = at;
        }
        char[] keyChars = whole.toCharArray();
        PromptExtractor sys =
                new PromptExtractor(ExtractOptions.builder().tokenizer(tok).build());
        PromptExtractor turn =
                new PromptExtractor(ExtractOptions.builder().tokenizer(tok).build());

        List<String> names = new ArrayList<>();
        List<Op> ops = new ArrayList<>();
        List<PromptExtractor> caches = new ArrayList<>();
        names.add("character mode: extract");
        ops.add(() -> sink += chars.extract(ep, body).key().length());
        caches.add(null);
        names.add("token mode, cold (no cache): extract");
        ops.add(() -> sink += cold.extract(ep, body).key().length());
        caches.add(null);
        names.add("token mode, system prompt warm: extract");
        ops.add(() -> sink +=
                sys.extract(ep, unique.get(next[0]++ % unique.size())).key().length());
        caches.add(sys);
        names.add("token mode, next turn: extract");
        ops.add(() -> sink += turn.extract(ep, nextTurn.get(next[0]++ % nextTurn.size()))
                .key()
                .length());
        caches.add(turn);
        names.add("token mode, all warm: extract");
        ops.add(() -> sink += warm.extract(ep, body).key().length());
        caches.add(warm);
        names.add("part: tokenize the segments alone");
        ops.add(() -> {
            for (String s : segs) {
                sink += tok.encode(s).length;
            }
        });
        caches.add(null);
        names.add("part: tokenize the key text in one call");
        ops.add(() -> sink += tok.encode(whole).length);
        caches.add(null);
        names.add("part: PromptKey.ofTokens (" + total + " ids)");
        ops.add(() -> sink += PromptKey.ofTokens(all, bounds, 16, 256).blockCount());
        caches.add(null);
        names.add("part: PromptKey from the key's chars");
        ops.add(() -> sink += PromptKey.textBuilder(64, 1024)
                .append(keyChars, 0, keyChars.length)
                .build()
                .blockCount());
        caches.add(null);

        // Warm every operation up first (2 s each), so that no figure depends on the order of measurement.
        for (Op op : ops) {
            long end = System.nanoTime() + 2_000_000_000L;
            while (System.nanoTime() < end) {
                op.run();
            }
        }
        for (int i = 0; i < ops.size(); i++) {
            time(names.get(i), ops.get(i));
            if (caches.get(i) != null) {
                report(caches.get(i));
            }
        }
    }

    /**
     * {@code n} copies of the body with the same tools and system prompt; each copy's messages (all of
     * them, or only the last two) start with a tag of its own, so their segments are new to the cache.
     */
    private static List<byte[]> variants(byte[] body, int n, boolean lastTwoOnly) throws IOException {
        List<byte[]> out = new ArrayList<>();
        for (int v = 0; v < n; v++) {
            ObjectNode b = (ObjectNode) JSON.readTree(body);
            JsonNode messages = b.get("messages");
            for (int i = 1; i < messages.size(); i++) {
                if (!lastTwoOnly || i >= messages.size() - 2) {
                    ObjectNode m = (ObjectNode) messages.get(i);
                    m.put("content", "[" + v + "] " + m.get("content").asText());
                }
            }
            out.add(JSON.writeValueAsBytes(b));
        }
        return out;
    }

    private static void report(PromptExtractor x) {
        TokenCache.Stats s = x.tokenCache().stats();
        System.out.printf(
                "  %-48s hit rate %.2f (%,d hits, %,d misses, %,d evictions, size %d)%n",
                "", s.hitRate(), s.hits(), s.misses(), s.evictions(), s.size());
    }

    private static void time(String what, Op op) throws Exception {
        // Calibrate: about 0.2 s per round.
        int iterations = 1;
        while (true) {
            long t0 = System.nanoTime();
            for (int i = 0; i < iterations; i++) {
                op.run();
            }
            if (System.nanoTime() - t0 > 200_000_000L) {
                break;
            }
            iterations *= 2;
        }
        for (int i = 0; i < iterations * 2; i++) {
            op.run();
        }
        double[] rounds = new double[15];
        for (int r = 0; r < rounds.length; r++) {
            long t0 = System.nanoTime();
            for (int i = 0; i < iterations; i++) {
                op.run();
            }
            rounds[r] = (System.nanoTime() - t0) / 1e3 / iterations;
        }
        Arrays.sort(rounds);
        System.out.printf(
                "  %-48s median %9.1f us   (min %.1f, max %.1f)%n",
                what, rounds[rounds.length / 2], rounds[0], rounds[rounds.length - 1]);
    }
}
