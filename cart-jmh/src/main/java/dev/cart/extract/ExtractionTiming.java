package dev.cart.extract;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import dev.cart.core.PromptKey;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Base64;
import java.util.Random;

/**
 * A rough timing of extraction, run by hand (never asserted): {@code java -cp cart-jmh/target/benchmarks.jar
 * dev.cart.extract.ExtractionTiming [32k|32k-sdk|1m|image]} (the jar from {@code mvn -B -ntp -Pbench -pl cart-jmh
 * -am package -DskipTests}). For each body it reports the
 * median over 15 rounds of the mean time per call, after a warm-up, for: the whole {@code extract}; the
 * same parse without building the key; building a {@link PromptKey} from the key's
 * characters alone; and, as floors, a Jackson pass that skips every value and one that decodes every string.
 *
 * <p>It lives in {@code cart-jmh} but in {@code cart-extract}'s package, as {@link TokenTiming} does: it times
 * the extractor's package-private parts ({@code Extraction}, its parse without the key), which a program on the
 * class path reaches from the same package name.
 */
public final class ExtractionTiming {

    private static volatile long sink;

    private ExtractionTiming() {}

    public static void main(String[] args) throws Exception {
        System.out.println(System.getProperty("java.vm.name") + " " + System.getProperty("java.runtime.version") + ", "
                + Runtime.getRuntime().availableProcessors() + " CPUs");
        String only = args.length > 0 ? args[0] : "all"; // 32k, 32k-sdk, 1m, image: one body per JVM
        if (only.equals("all") || only.equals("32k")) {
            report("chat 32 KB (model first)", chatBody(32 * 1024, false), Endpoint.CHAT_COMPLETIONS);
        }
        if (only.equals("all") || only.equals("32k-sdk")) {
            report(
                    "chat 32 KB (messages first, as the Python SDK)",
                    chatBody(32 * 1024, true),
                    Endpoint.CHAT_COMPLETIONS);
        }
        if (only.equals("all") || only.equals("1m")) {
            report("chat 1 MB", chatBody(1024 * 1024, true), Endpoint.CHAT_COMPLETIONS);
        }
        if (only.equals("all") || only.equals("image")) {
            report("chat 5 MB inline image + short text", imageBody(5 * 1024 * 1024), Endpoint.CHAT_COMPLETIONS);
        }
    }

    /** A system prompt, two tools and alternating turns of English-like text, about {@code size} bytes. */
    static byte[] chatBody(int size, boolean messagesFirst) {
        Random rnd = new Random(42);
        String[] words = ("the of and to in is that for it as with was on be by this are from at or an which have not "
                        + "but they his her their one all were there been has when who will more no if out so said what up its "
                        + "about into than them can only other new some could time these two may then do first any my now such "
                        + "like our over man me even most made after also did many before must through back years where much "
                        + "your way well down should because each just those people how too little state good very make world")
                .split(" ");
        StringBuilder messages = new StringBuilder("\"messages\":[{\"role\":\"system\",\"content\":\"");
        words(messages, rnd, words, 600);
        messages.append("\"}");
        int turn = 0;
        while (messages.length() < size - 2000) {
            messages.append(",{\"role\":\"")
                    .append(turn++ % 2 == 0 ? "user" : "assistant")
                    .append("\",\"content\":\"");
            words(messages, rnd, words, 40 + rnd.nextInt(400));
            messages.append("\"}");
        }
        messages.append(']');
        String tools =
                "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"search\",\"description\":\"Search the "
                        + "knowledge base for documents matching a query\",\"parameters\":{\"type\":\"object\",\"properties\":"
                        + "{\"query\":{\"type\":\"string\",\"description\":\"What to look for\"},\"limit\":{\"type\":\"integer\","
                        + "\"minimum\":1,\"maximum\":50}},\"required\":[\"query\"]}}},{\"type\":\"function\",\"function\":{\"name\":"
                        + "\"fetch\",\"description\":\"Fetch one document by id\",\"parameters\":{\"type\":\"object\",\"properties\":"
                        + "{\"id\":{\"type\":\"string\"}},\"required\":[\"id\"]}}}]";
        String head =
                "\"model\":\"meta-llama/Llama-3.1-70B-Instruct\",\"temperature\":0.2,\"max_tokens\":512,\"stream\":true";
        String body = messagesFirst
                ? "{" + messages + "," + head + "," + tools + "}"
                : "{" + head + "," + tools + "," + messages + "}";
        return body.getBytes(StandardCharsets.UTF_8);
    }

    private static void words(StringBuilder sb, Random rnd, String[] words, int n) {
        for (int i = 0; i < n; i++) {
            sb.append(words[rnd.nextInt(words.length)]);
            sb.append(i % 17 == 16 ? ". " : i % 97 == 96 ? "\\n\\n" : " ");
        }
    }

    static byte[] imageBody(int size) {
        byte[] img = new byte[size * 3 / 4];
        new Random(1).nextBytes(img);
        return ("{\"model\":\"gpt-4o\",\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"What is this?\"},"
                        + "{\"type\":\"image_url\",\"image_url\":{\"url\":\"data:image/png;base64,"
                        + Base64.getEncoder().encodeToString(img)
                        + "\"}}]}]}")
                .getBytes(StandardCharsets.UTF_8);
    }

    private interface Op {
        void run() throws Exception;
    }

    private static void report(String name, byte[] body, Endpoint endpoint) throws Exception {
        PromptExtractor x = new PromptExtractor(ExtractOptions.defaults());
        String keyText = x.keyText(endpoint, body);
        char[] keyChars =
                keyText.replace(String.valueOf(Extraction.BOUNDARY_MARK), "").toCharArray();
        PromptKey key = x.extract(endpoint, body).key();
        JsonFactory jf = new JsonFactory();
        int iterations = (int) Math.max(20, Math.min(20_000, 400_000_000L / Math.max(1, body.length) / 10));
        System.out.printf(
                "%n%s: body %,d bytes, key %,d chars, %d blocks, %d boundaries; %d calls per round%n",
                name, body.length, key.length(), key.blockCount(), key.boundaryCount(), iterations);
        time(
                "extract (parse + key)",
                iterations,
                () -> sink += x.extract(endpoint, body).key().length());
        System.out.printf(
                "  %-40s %,d bytes%n", "allocated per extract call", allocatedPerCall(() -> x.extract(endpoint, body)));
        time("parse only (segments, no key)", iterations, () -> {
            new Extraction(x.factory(), x.options(), endpoint, body, new ToolsCache(), new ModelMarkers()).parse();
            sink++;
        });
        Extraction parsed =
                new Extraction(x.factory(), x.options(), endpoint, body, new ToolsCache(), new ModelMarkers());
        parsed.parse();
        time(
                "key from parsed segments (result())",
                iterations,
                () -> sink += parsed.result().key().length());
        time(
                "PromptKey from the key's chars alone",
                iterations,
                () -> sink += PromptKey.textBuilder(64, 1024)
                        .append(keyChars, 0, keyChars.length)
                        .build()
                        .length());
        time("floor: Jackson skipping every value", iterations, () -> {
            try (JsonParser p = jf.createParser(body)) {
                while (p.nextToken() != null) {
                    sink++;
                }
            }
        });
        time("floor: Jackson decoding every string", iterations, () -> {
            try (JsonParser p = jf.createParser(body)) {
                JsonToken t;
                while ((t = p.nextToken()) != null) {
                    if (t == JsonToken.VALUE_STRING) {
                        sink += p.getTextLength();
                    }
                }
            }
        });
    }

    /** Bytes this thread allocates per call, from HotSpot's per-thread counter. */
    private static long allocatedPerCall(Op op) throws Exception {
        com.sun.management.ThreadMXBean mx =
                (com.sun.management.ThreadMXBean) java.lang.management.ManagementFactory.getThreadMXBean();
        long id = Thread.currentThread().getId();
        int n = 20;
        long before = mx.getThreadAllocatedBytes(id);
        for (int i = 0; i < n; i++) {
            op.run();
        }
        return (mx.getThreadAllocatedBytes(id) - before) / n;
    }

    private static void time(String what, int iterations, Op op) throws Exception {
        for (int i = 0; i < iterations * 3; i++) {
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
                "  %-40s median %10.1f us   (min %.1f, max %.1f)%n",
                what, rounds[rounds.length / 2], rounds[0], rounds[rounds.length - 1]);
    }
}
