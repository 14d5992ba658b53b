package dev.cart.extract;

import java.nio.charset.StandardCharsets;
import java.util.SplittableRandom;
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
 * Extracting the key from a chat body of about 32 KB and 1 MB: a system prompt, two tools and
 * alternating turns of English-like text, fields in the order the OpenAI Python SDK writes them
 * (messages before model). Includes the UTF-8 check, the streaming parse and the key's block hashing.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"-Xms1g", "-Xmx1g"})
@State(Scope.Benchmark)
public class ExtractBenchmark {

    @Param({"32768", "1048576"})
    public int bytes;

    byte[] body;
    PromptExtractor extractor;

    @Setup
    public void setUp() {
        body = chatBody(bytes);
        extractor = new PromptExtractor(ExtractOptions.defaults());
    }

    @Benchmark
    public ExtractedRequest chat() throws ExtractionException {
        return extractor.extract(Endpoint.CHAT_COMPLETIONS, body);
    }

    static byte[] chatBody(int size) {
        SplittableRandom rnd = new SplittableRandom(42);
        String[] words = ("the of and to in is that for it as with was on be by this are from at or an which "
                + "have not but they his her their one all were there been has when who will more no if out so "
                + "said what up its about into than them can only other new some could time these two may then")
                .split(" ");
        StringBuilder sb = new StringBuilder("{\"messages\":[{\"role\":\"system\",\"content\":\"");
        words(sb, words, rnd, 2_000);
        sb.append("\"}");
        int turn = 0;
        while (sb.length() < size - 600) {
            sb.append(",{\"role\":\"").append(turn++ % 2 == 0 ? "user" : "assistant").append("\",\"content\":\"");
            words(sb, words, rnd, Math.min(1_200, size - 600 - sb.length()));
            sb.append("\"}");
        }
        sb.append("],\"model\":\"llama-3.1-8b-instruct\",\"stream\":true,\"tools\":[{\"type\":\"function\","
                + "\"function\":{\"name\":\"lookup\",\"description\":\"Look up an order\",\"parameters\":{\"type\":"
                + "\"object\",\"properties\":{\"id\":{\"type\":\"string\"}}}}}],\"temperature\":0.2}");
        return sb.toString().getBytes(StandardCharsets.UTF_8);
    }

    private static void words(StringBuilder sb, String[] words, SplittableRandom rnd, int chars) {
        int start = sb.length();
        while (sb.length() - start < chars) {
            sb.append(words[rnd.nextInt(words.length)]).append(' ');
        }
    }
}
