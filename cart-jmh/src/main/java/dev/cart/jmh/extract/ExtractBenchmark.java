package dev.cart.jmh.extract;

import dev.cart.extract.Endpoint;
import dev.cart.extract.ExtractOptions;
import dev.cart.extract.ExtractedRequest;
import dev.cart.extract.ExtractionException;
import dev.cart.extract.PromptExtractor;
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
 * Extracting the key from a chat body ({@link Bodies}): {@code plain} ASCII words, or a {@code realistic}
 * body with JSON escapes, newlines, non-ASCII text, a tools array and tool calls. Includes the UTF-8
 * check, the streaming parse and the key's block hashing.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(
        value = 1,
        jvmArgsAppend = {"-Xms1g", "-Xmx1g", "-XX:+AlwaysPreTouch"})
@State(Scope.Benchmark)
public class ExtractBenchmark {

    @Param({"4096", "32768", "1048576"})
    public int bytes;

    @Param({"plain", "realistic"})
    public String body;

    byte[] bodyBytes;
    PromptExtractor extractor;

    @Setup
    public void setUp() {
        bodyBytes = body.equals("plain") ? Bodies.plain(bytes) : Bodies.realistic(bytes);
        extractor = new PromptExtractor(ExtractOptions.defaults());
    }

    @Benchmark
    public ExtractedRequest chat() throws ExtractionException {
        return extractor.extract(Endpoint.CHAT_COMPLETIONS, bodyBytes);
    }
}
