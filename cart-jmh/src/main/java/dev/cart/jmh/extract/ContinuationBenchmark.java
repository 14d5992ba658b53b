package dev.cart.jmh.extract;

import dev.cart.core.PromptKey;
import dev.cart.extract.Endpoint;
import dev.cart.extract.ExtractOptions;
import dev.cart.extract.ExtractedRequest;
import dev.cart.extract.ExtractionException;
import dev.cart.extract.PromptExtractor;
import java.nio.charset.StandardCharsets;
import java.util.List;
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
 * What answer learning costs the proxy per request: the routing extraction plus the key of "conversation
 * + reply" for the next turn. {@code extractAndContinue}: {@code extract} then
 * {@link PromptExtractor#continuationKey} with a 1,000-character reply. {@code extractTwice}: the former
 * way, {@code extract} of the body and of the next turn's body (the body with the assistant message
 * appended, prepared up front: the splice that made it, one more streaming pass, is not included, so this
 * baseline is on the low side). {@code continueOnly}: {@code continuationKey} alone, of a request extracted
 * once, with the reply held as the proxy holds it (a {@code StringBuilder}): answer learning's own key.
 * Realistic chat bodies ({@link Bodies#realistic}).
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(
        value = 1,
        jvmArgsAppend = {"-Xms1g", "-Xmx1g"})
@State(Scope.Benchmark)
public class ContinuationBenchmark {

    @Param({"4096", "32768"})
    public int bytes;

    byte[] body;
    byte[] next;
    List<String> reply;
    List<StringBuilder> held;
    PromptExtractor extractor;
    ExtractedRequest routed;

    @Setup
    public void setUp() throws ExtractionException {
        body = Bodies.realistic(bytes);
        StringBuilder r = new StringBuilder();
        while (r.length() < 1_000) {
            r.append("Your order A-1042 was shipped on Monday \u2014 it should arrive by Thursday. ");
        }
        reply = List.of(r.toString());
        String text = new String(body, StandardCharsets.UTF_8);
        int close = text.lastIndexOf(']');
        next = (text.substring(0, close) + ",{\"role\":\"assistant\",\"content\":\"" + r + "\"}"
                        + text.substring(close))
                .getBytes(StandardCharsets.UTF_8);
        extractor = new PromptExtractor(ExtractOptions.defaults());
        held = List.of(new StringBuilder(r));
        routed = extractor.extract(Endpoint.CHAT_COMPLETIONS, body);
    }

    @Benchmark
    public PromptKey continueOnly() {
        return extractor.continuationKey(routed, held);
    }

    @Benchmark
    public PromptKey extractAndContinue() throws ExtractionException {
        ExtractedRequest req = extractor.extract(Endpoint.CHAT_COMPLETIONS, body);
        return extractor.continuationKey(req, reply);
    }

    @Benchmark
    public PromptKey extractTwice() throws ExtractionException {
        extractor.extract(Endpoint.CHAT_COMPLETIONS, body);
        return extractor.extract(Endpoint.CHAT_COMPLETIONS, next).key();
    }
}
