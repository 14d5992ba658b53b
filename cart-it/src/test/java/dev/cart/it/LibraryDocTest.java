package dev.cart.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.function.Predicate;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * docs/library.md and the README's library section show the consumer projects' code as the build compiles and
 * runs it: a code block that follows a {@code <!-- source: path -->} line names a file of the repository, and
 * its lines appear in that file as they are, in one run (a whole file or an excerpt). The consumers'
 * {@code @project.version@} reads as the release version (the project's without -SNAPSHOT). In docs/library.md
 * every block but a shell block ({@code sh}) names its source; in README.md every Java and XML block does (its
 * shell and YAML blocks are the proxy's, checked elsewhere).
 */
class LibraryDocTest {

    private static final Path ROOT =
            Path.of(System.getProperty("cart.root", "..")).normalize();
    private static final String RELEASE = System.getProperty("cart.version", "").replace("-SNAPSHOT", "");
    private static final Pattern SOURCE = Pattern.compile("<!-- source: (\\S+) -->");

    @Test
    void everyCodeBlockOfTheLibraryGuideIsCopiedFromTheFileItNames() throws IOException {
        List<Block> blocks = blocks(Files.readAllLines(ROOT.resolve("docs/library.md")));
        assertTrue(blocks.size() >= 8, "docs/library.md shows the consumer's code (" + blocks.size() + " blocks)");
        assertEquals(List.of(), problems(blocks, lang -> !lang.equals("sh")), "docs/library.md's code blocks");
    }

    @Test
    void theReadmesLibraryCodeIsCopiedFromTheFilesItNames() throws IOException {
        List<Block> blocks = blocks(Files.readAllLines(ROOT.resolve("README.md")));
        long java = blocks.stream()
                .filter(b -> b.lang().equals("java") && b.source() != null)
                .count();
        assertTrue(java >= 1, "README.md shows the consumer's Java code (" + java + " blocks)");
        assertEquals(
                List.of(),
                problems(blocks, lang -> lang.equals("java") || lang.equals("xml")),
                "README.md's code blocks");
    }

    /** The check itself: a block that differs from its source, or lacks one where one is needed, is named. */
    @Test
    void namesABlockThatDiffersFromItsSource() {
        String src = "cart-it/src/it/class-path/src/main/java/com/example/host/Serve.java";
        List<Block> blocks = blocks(List.of(
                "<!-- source: " + src + " -->",
                "```java",
                "    private Serve() {}",
                "```",
                "<!-- source: " + src + " -->",
                "```java",
                "    private Serve() {} // changed",
                "```",
                "```java",
                "int x;",
                "```",
                "```sh",
                "ls",
                "```"));
        assertEquals(
                List.of(
                        "line 6: the block differs from " + src,
                        "line 9: a ```java block without <!-- source: path -->"),
                problems(blocks, lang -> !lang.equals("sh")));
    }

    /** What is wrong with {@code blocks}; a block whose language {@code needsSource} must name its source. */
    static List<String> problems(List<Block> blocks, Predicate<String> needsSource) {
        List<String> problems = new ArrayList<>();
        for (Block b : blocks) {
            if (b.source() == null) {
                if (needsSource.test(b.lang())) {
                    problems.add("line " + b.line() + ": a ```" + b.lang() + " block without <!-- source: path -->");
                }
                continue;
            }
            Path file = ROOT.resolve(b.source());
            if (!Files.isRegularFile(file)) {
                problems.add("line " + b.line() + ": " + b.source() + " does not exist");
                continue;
            }
            List<String> lines;
            try {
                lines = Files.readString(file)
                        .replace("@project.version@", RELEASE)
                        .lines()
                        .toList();
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
            if (Collections.indexOfSubList(lines, b.lines()) < 0) {
                problems.add("line " + b.line() + ": the block differs from " + b.source());
            }
        }
        return problems;
    }

    /** One fenced code block: its language, the source named on the line before it, its lines. */
    record Block(int line, String lang, String source, List<String> lines) {}

    static List<Block> blocks(List<String> md) {
        List<Block> out = new ArrayList<>();
        for (int i = 0; i < md.size(); i++) {
            String line = md.get(i);
            if (!line.startsWith("```")) {
                continue;
            }
            String source = null;
            if (i > 0) {
                Matcher m = SOURCE.matcher(md.get(i - 1).trim());
                if (m.matches()) {
                    source = m.group(1);
                }
            }
            int end = i + 1;
            while (end < md.size() && !md.get(end).startsWith("```")) {
                end++;
            }
            out.add(new Block(i + 1, line.substring(3).trim(), source, md.subList(i + 1, end)));
            i = end;
        }
        return out;
    }
}
