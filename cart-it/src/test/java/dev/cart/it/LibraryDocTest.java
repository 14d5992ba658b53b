package dev.cart.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * docs/library.md shows the consumer projects' code as the build compiles and runs it: every code block
 * follows a {@code <!-- source: path -->} line naming a file of the repository, and its lines appear in that
 * file as they are, in one run (a whole file or an excerpt). The consumers' {@code @project.version@} reads
 * as the release version (the project's without -SNAPSHOT). Shell blocks ({@code sh}) need no source.
 */
class LibraryDocTest {

    private static final Path ROOT =
            Path.of(System.getProperty("cart.root", "..")).normalize();
    private static final String RELEASE = System.getProperty("cart.version", "").replace("-SNAPSHOT", "");
    private static final Pattern SOURCE = Pattern.compile("<!-- source: (\\S+) -->");

    @Test
    void everyCodeBlockIsCopiedFromTheFileItNames() throws IOException {
        List<Block> blocks = blocks(Files.readAllLines(ROOT.resolve("docs/library.md")));
        assertTrue(blocks.size() >= 8, "docs/library.md shows the consumer's code (" + blocks.size() + " blocks)");
        List<String> problems = new ArrayList<>();
        for (Block b : blocks) {
            if (b.lang().equals("sh")) {
                continue;
            }
            if (b.source() == null) {
                problems.add("line " + b.line() + ": a ```" + b.lang() + " block without <!-- source: path -->");
                continue;
            }
            Path file = ROOT.resolve(b.source());
            if (!Files.isRegularFile(file)) {
                problems.add("line " + b.line() + ": " + b.source() + " does not exist");
                continue;
            }
            List<String> lines = Files.readString(file)
                    .replace("@project.version@", RELEASE)
                    .lines()
                    .toList();
            if (Collections.indexOfSubList(lines, b.lines()) < 0) {
                problems.add("line " + b.line() + ": the block differs from " + b.source());
            }
        }
        assertEquals(List.of(), problems, "docs/library.md's code blocks");
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
