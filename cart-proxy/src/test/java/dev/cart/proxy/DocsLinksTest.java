package dev.cart.proxy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Every relative link in the project's Markdown (the README, {@code docs/} and each module's README) leads somewhere: the file exists and, for a link to
 * a section, a heading gives that anchor (as GitHub makes it: lower case, punctuation dropped, spaces to
 * hyphens, "-1", "-2" for repeats). Sections are renamed often as figures change; a link to an old name
 * fails here rather than on a reader.
 */
class DocsLinksTest {

    private static final Path ROOT =
            Path.of(System.getProperty("user.dir")).resolve("..").normalize();
    private static final Pattern HEADING = Pattern.compile("^#{1,6}\\s+(.*?)\\s*$");
    private static final Pattern LINK = Pattern.compile("\\]\\(([^)\\s]+)\\)");

    @Test
    void everyRelativeLinkAndAnchorInTheProjectsMarkdownResolves() throws IOException {
        List<Path> files = new ArrayList<>();
        try (Stream<Path> all = Files.walk(ROOT)) {
            all.filter(p -> p.toString().endsWith(".md"))
                    .filter(p -> !ROOT.relativize(p).toString().matches("(^|.*/)(target|\\.[^/]*|node_modules)/.*"))
                    .sorted()
                    .forEach(files::add);
        }
        assertTrue(files.contains(ROOT.resolve("README.md")), "not run from the project: " + ROOT);
        assertTrue(files.contains(ROOT.resolve("docs/benchmarks.md")), "docs/ not found under " + ROOT);
        assertTrue(files.contains(ROOT.resolve("cart-core/README.md")), "module READMEs not found under " + ROOT);
        Map<Path, Set<String>> anchors = new HashMap<>();
        List<String> broken = new ArrayList<>();
        int checked = 0;
        for (Path file : files) {
            int n = 0;
            for (String line : outsideCode(file)) {
                n++;
                Matcher m = LINK.matcher(line);
                while (m.find()) {
                    String link = m.group(1);
                    if (link.matches("^[a-z]+:.*")) {
                        continue; // http:, https:, mailto:
                    }
                    checked++;
                    int hash = link.indexOf('#');
                    String target = hash < 0 ? link : link.substring(0, hash);
                    Path to = target.isEmpty()
                            ? file
                            : file.getParent().resolve(target).normalize();
                    if (!Files.exists(to)) {
                        broken.add(ROOT.relativize(file) + ": no file " + link);
                    } else if (hash >= 0 && to.toString().endsWith(".md")) {
                        Set<String> known = anchors.computeIfAbsent(to, DocsLinksTest::anchorsOf);
                        if (!known.contains(link.substring(hash + 1))) {
                            broken.add(ROOT.relativize(file) + ": no section " + link);
                        }
                    }
                }
            }
            assertTrue(n > 0, file + " is empty");
        }
        assertTrue(checked > 50, "found only " + checked + " links: is the pattern still right?");
        assertEquals(List.of(), broken);
    }

    @Test
    void anchorsAreMadeAsGitHubMakesThem() {
        assertEquals(
                "issue-16-a-ninth-pass-2026-12-02-evening-an-inserts-first-walk-refreshes-as-it-goes",
                slug("Issue 16, a ninth pass (2026-12-02, evening): an insert's first walk refreshes as it goes"));
        assertEquals("routerchoose", slug("`Router.choose`"));
    }

    /** The file's lines, with fenced code blocks left out (blank lines in their place). */
    private static List<String> outsideCode(Path file) {
        List<String> out = new ArrayList<>();
        boolean fence = false;
        for (String line : read(file)) {
            if (line.startsWith("```")) {
                fence = !fence;
                out.add("");
            } else {
                out.add(fence ? "" : line);
            }
        }
        return out;
    }

    private static Set<String> anchorsOf(Path file) {
        Set<String> out = new HashSet<>();
        Map<String, Integer> seen = new HashMap<>();
        for (String line : outsideCode(file)) {
            Matcher m = HEADING.matcher(line);
            if (m.matches()) {
                String s = slug(m.group(1));
                int k = seen.merge(s, 1, Integer::sum) - 1;
                out.add(k == 0 ? s : s + "-" + k);
            }
        }
        return out;
    }

    private static String slug(String heading) {
        return heading.toLowerCase(Locale.ROOT)
                .replaceAll("[^\\p{L}\\p{N}_\\- ]", "")
                .replace(' ', '-');
    }

    private static List<String> read(Path file) {
        try {
            return Files.readAllLines(file);
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }
}
