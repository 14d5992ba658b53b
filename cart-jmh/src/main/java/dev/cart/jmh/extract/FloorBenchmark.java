package dev.cart.jmh.extract;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonFactoryBuilder;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.StreamReadFeature;
import dev.cart.extract.Endpoint;
import dev.cart.extract.ExtractOptions;
import dev.cart.extract.ExtractedRequest;
import dev.cart.extract.ExtractionException;
import dev.cart.extract.PromptExtractor;
import java.io.IOException;
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
 * Extraction against its floor, in one run: {@link #extract} is {@code PromptExtractor.extract} of a chat
 * body to its routing key (UTF-8 check, Jackson's streaming parse, unescaping, the key's hashing), and
 * {@link #jackson} is Jackson's bare token pass over the same bytes: a parser made, {@code nextToken} to the
 * end, no string's text asked for (so Jackson skips each string), the parser closed. Jackson stays the
 * parser on the routing path, so the second is the floor of any extraction; the targets (issue 47) are
 * stated as the ratio of the two, which {@link FloorRatio} runs and prints. {@link #jacksonText} is the same
 * pass asking for the text of every string value ({@code getTextCharacters}: Jackson decodes it into its own
 * buffer, no String made): the least any extraction that takes prompt text from Jackson would do, since the
 * key is the text as the replica decodes it, escapes and all, which the bare pass never decodes.
 *
 * <p>The floor's factory is configured as the extractor's (strict duplicate detection, names not
 * interned), so the ratio is CART's own work over the parser's. Bodies: {@link Bodies#plain} and
 * {@link Bodies#realistic} of about {@code bytes} bytes; the same body every operation, so from the second
 * on the realistic body's tool list comes from the extractor's cache (an agent's next turn).
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 4, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(
        value = 3,
        jvmArgsAppend = {"-Xms1g", "-Xmx1g", "-XX:+AlwaysPreTouch"})
@State(Scope.Benchmark)
public class FloorBenchmark {

    /** {@code plain-1024}, ..., {@code realistic-32768}: the body's kind and size in bytes. */
    @Param({"plain-1024", "plain-4096", "plain-32768", "realistic-4096", "realistic-32768"})
    public String body;

    byte[] bodyBytes;
    PromptExtractor extractor;
    JsonFactory factory;

    @Setup
    public void setUp() {
        bodyBytes = body(body);
        extractor = new PromptExtractor(ExtractOptions.defaults());
        factory = new JsonFactoryBuilder()
                .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
                .disable(JsonFactory.Feature.INTERN_FIELD_NAMES)
                .build();
    }

    /** The body a parameter names: {@code kind-bytes}. */
    static byte[] body(String param) {
        int dash = param.indexOf('-');
        int bytes = Integer.parseInt(param.substring(dash + 1));
        return switch (param.substring(0, dash)) {
            case "plain" -> Bodies.plain(bytes);
            case "realistic" -> Bodies.realistic(bytes);
            default -> throw new IllegalArgumentException(param);
        };
    }

    /** CART's extraction to the routing key. */
    @Benchmark
    public ExtractedRequest extract() throws ExtractionException {
        return extractor.extract(Endpoint.CHAT_COMPLETIONS, bodyBytes);
    }

    /** Jackson's bare token pass: every token, no string's text. */
    @Benchmark
    public int jackson() throws IOException {
        return tokens(factory, bodyBytes);
    }

    /** Jackson's token pass with every string value's text decoded into the parser's own buffer. */
    @Benchmark
    public int jacksonText() throws IOException {
        return textPass(factory, bodyBytes);
    }

    static int textPass(JsonFactory factory, byte[] body) throws IOException {
        int n = 0;
        try (JsonParser p = factory.createParser(body)) {
            JsonToken t;
            while ((t = p.nextToken()) != null) {
                n += t.id();
                if (t == JsonToken.VALUE_STRING) {
                    char[] text = p.getTextCharacters();
                    int len = p.getTextLength();
                    n += len == 0 ? 0 : text[p.getTextOffset() + len - 1];
                }
            }
        }
        return n;
    }

    static int tokens(JsonFactory factory, byte[] body) throws IOException {
        int n = 0;
        try (JsonParser p = factory.createParser(body)) {
            JsonToken t;
            while ((t = p.nextToken()) != null) {
                n += t.id();
            }
        }
        return n;
    }
}
