package dev.cart.jmh.extract;

import dev.cart.core.Tokenization;
import dev.cart.extract.Endpoint;
import dev.cart.extract.ExtractOptions;
import dev.cart.extract.ExtractedRequest;
import dev.cart.extract.ExtractionException;
import dev.cart.extract.PromptExtractor;
import dev.cart.extract.Tokenizer;
import dev.cart.extract.Tokenizers;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Token mode ({@code cl100k_base} through jtokkit): extracting a key in tokens from the same chat bodies
 * as {@link Bodies#plain}, with the token cache hitting and missing.
 *
 * <ul>
 *   <li>{@code hit}: every segment of the body (model marker and tools, system prompt, each message) is in
 *       the cache: the parse, one cache lookup per segment and the block hashing of the ids.</li>
 *   <li>{@code miss}: a cache of no entries, so every segment goes through the tokenizer each time.</li>
 *   <li>{@code lastTurnNew}: the realistic case of a conversation's next turn: every earlier message is
 *       cached, the last one is new (bodies differ only in their last message; 1,024 of them cycle through
 *       a 1,000-entry cache, so the last message is never found).</li>
 * </ul>
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(
        value = 1,
        jvmArgsAppend = {"-Xms1g", "-Xmx1g"})
@State(Scope.Benchmark)
public class TokenizerBenchmark {

    @Param({"4096", "32768"})
    public int bytes;

    byte[] body;
    byte[][] nextTurns;
    PromptExtractor cached;
    PromptExtractor uncached;
    PromptExtractor conversation;
    int i;

    @Setup
    public void setUp() throws ExtractionException {
        Tokenizer cl100k = Tokenizers.jtokkit("cl100k_base");
        body = Bodies.plain(bytes);
        cached = new PromptExtractor(ExtractOptions.builder().tokenizer(cl100k).build());
        uncached = new PromptExtractor(
                ExtractOptions.builder().tokenizer(cl100k).tokenCacheEntries(0).build());
        conversation =
                new PromptExtractor(ExtractOptions.builder().tokenizer(cl100k).build());
        Tokenization first = cached.extract(Endpoint.CHAT_COMPLETIONS, body).tokenization();
        Tokenization again = cached.extract(Endpoint.CHAT_COMPLETIONS, body).tokenization();
        if (first.status() != Tokenization.Status.TOKENIZED || again.cacheHits() != again.segments()) {
            throw new IllegalStateException("expected a tokenized key and a full cache hit: " + first + " " + again);
        }
        // Bodies that differ only in their last message: the same prefix, then a new user turn.
        String text = new String(body, StandardCharsets.UTF_8);
        int cut = text.lastIndexOf("],\"model\"");
        String head = text.substring(0, cut);
        String tail = text.substring(cut);
        nextTurns = new byte[1024][];
        for (int k = 0; k < nextTurns.length; k++) {
            nextTurns[k] = (head + ",{\"role\":\"user\",\"content\":\"turn " + k + ": and what about the other "
                            + "order, the one that was sent on the second of the month to the old address?\"}" + tail)
                    .getBytes(StandardCharsets.UTF_8);
        }
        for (byte[] b : nextTurns) {
            conversation.extract(Endpoint.CHAT_COMPLETIONS, b);
        }
        Tokenization t =
                conversation.extract(Endpoint.CHAT_COMPLETIONS, nextTurns[0]).tokenization();
        if (t.cacheHits() != t.segments() - 1) {
            throw new IllegalStateException("expected every segment but the last cached: " + t);
        }
    }

    @Benchmark
    public ExtractedRequest hit() throws ExtractionException {
        return cached.extract(Endpoint.CHAT_COMPLETIONS, body);
    }

    @Benchmark
    public ExtractedRequest miss() throws ExtractionException {
        return uncached.extract(Endpoint.CHAT_COMPLETIONS, body);
    }

    @Benchmark
    public ExtractedRequest lastTurnNew() throws ExtractionException {
        return conversation.extract(Endpoint.CHAT_COMPLETIONS, nextTurns[i++ & 1023]);
    }
}
