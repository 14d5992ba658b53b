package dev.cart.gateway;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** Code blocks of this module's README, read as the reader sees them. */
final class ReadmeBlocks {

    static final Path README = Path.of("README.md");

    private ReadmeBlocks() {}

    /** The first {@code ```lang} block after the first occurrence of {@code marker} in the README. */
    static String after(String marker, String lang) throws IOException {
        String text = Files.readString(README);
        int at = text.indexOf(marker);
        assertTrue(at >= 0, "the README has " + marker);
        String fence = "```" + lang + "\n";
        int start = text.indexOf(fence, at);
        assertTrue(start >= 0, "a " + lang + " block follows " + marker);
        int end = text.indexOf("\n```", start + fence.length() - 1);
        assertTrue(end > start, "the block after " + marker + " ends");
        return text.substring(start + fence.length(), end + 1);
    }

    /** The block written to {@code dir} as an additional configuration location for the gateway. */
    static String asConfigLocation(String yaml, Path dir) throws IOException {
        Path file = Files.writeString(dir.resolve("readme-block.yaml"), yaml);
        return "spring.config.additional-location=file:" + file;
    }
}
