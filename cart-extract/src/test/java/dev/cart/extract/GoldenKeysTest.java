package dev.cart.extract;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.cart.core.PromptKey;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * Keys do not change unnoticed: a digest of the key (blocks, boundaries, anchor, length) of every fixture
 * and of generated bodies, in character mode with two block sizes, against {@code golden-keys.txt}. A
 * change of the key format or of the block hashing must update that file on purpose, since keys learned
 * before it no longer match keys made after it: on a mismatch the test writes what it computed to
 * {@code target/golden-keys.txt}, to be reviewed and copied over {@code src/test/resources/golden-keys.txt}. Last
 * change: blocks are hashed over CESU-8, so the generated bodies (non-ASCII text) changed and the fixtures
 * (ASCII) did not.
 */
class GoldenKeysTest {

    @Test
    void keysAreUnchanged() throws Exception {
        String expected;
        try (InputStream in = GoldenKeysTest.class.getResourceAsStream("/golden-keys.txt")) {
            expected = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
        String actual = lines();
        if (!actual.equals(expected)) {
            Path written = Path.of("target", "golden-keys.txt");
            Files.writeString(written, actual);
            assertEquals(expected, actual, "keys changed; what they are now is in " + written.toAbsolutePath());
        }
    }

    private static String lines() throws ExtractionException, IOException {
        StringBuilder sb = new StringBuilder();
        for (int block : new int[] {16, 64}) {
            PromptExtractor x = new PromptExtractor(
                    ExtractOptions.builder().blockChars(block).anchorLimit(100).build());
            for (String f : Fixtures.all()) {
                sb.append(block)
                        .append(' ')
                        .append(f)
                        .append(' ')
                        .append(digest(x.extract(Fixtures.endpoint(f), Fixtures.bytes(f))
                                .key()))
                        .append('\n');
            }
            List<byte[]> bodies = generated();
            for (int i = 0; i < bodies.size(); i++) {
                sb.append(block)
                        .append(" generated-")
                        .append(i)
                        .append(' ')
                        .append(digest(
                                x.extract(i % 2 == 0 ? Endpoint.CHAT_COMPLETIONS : Endpoint.MESSAGES, bodies.get(i))
                                        .key()))
                        .append('\n');
            }
        }
        return sb.toString();
    }

    private static List<byte[]> generated() {
        List<byte[]> out = new ArrayList<>();
        SplittableRandom rnd = new SplittableRandom(99);
        for (int i = 0; i < 8; i++) {
            String sys = KeyPathsTest.json(rnd, KeyPathsTest.text(rnd, 300));
            String user = KeyPathsTest.json(rnd, KeyPathsTest.text(rnd, 500));
            String body = i % 2 == 0
                    ? "{\"model\":\"m" + i + "\",\"messages\":[{\"role\":\"system\",\"content\":" + sys + "},"
                            + "{\"role\":\"user\",\"name\":\"n\",\"content\":[{\"type\":\"text\",\"text\":" + user
                            + "},"
                            + "{\"type\":\"image_url\",\"image_url\":{\"url\":\"data:image/png;base64,AAAA\"}}]}],"
                            + "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\",\"parameters\":{\"b\":1,\"a\":"
                            + sys + "}}}]}"
                    : "{\"model\":\"m" + i + "\",\"system\":" + sys + ",\"messages\":[{\"role\":\"user\",\"content\":["
                            + "{\"type\":\"text\",\"text\":" + user
                            + "},{\"type\":\"tool_result\",\"tool_use_id\":\"t\","
                            + "\"content\":[{\"type\":\"text\",\"text\":\"ok\"}]}]}]}";
            out.add(body.getBytes(StandardCharsets.UTF_8));
        }
        return out;
    }

    private static String digest(PromptKey k) {
        long h = k.anchorHash() * 31 + k.length();
        for (int i = 0; i < k.blockCount(); i++) {
            h = h * 1_000_003 + k.blockHash(i);
        }
        for (int i = 0; i < k.boundaryCount(); i++) {
            h = h * 31 + k.boundary(i);
        }
        return k.length() + "/" + k.blockCount() + "/" + k.boundaryCount() + "/" + Long.toHexString(h);
    }
}
