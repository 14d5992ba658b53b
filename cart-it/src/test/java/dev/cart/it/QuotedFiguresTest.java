package dev.cart.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * A figure lives in one place: the report or benchmark document that produced it (the {@link #SOURCES}).
 * Every other Markdown file of the repository quotes a measured figure only inside a span that names its
 * source, {@code <!-- figures: docs/scale-out.md#generated-shared-prefix -->} … {@code <!-- /figures -->},
 * and every figure in such a span must appear, as written, in that source's section (the heading that holds
 * the words after {@code #}, to the next heading of its rank; no {@code #}: the whole document), as a value
 * of its own (a quoted {@code 1.08} is not found in the range {@code 0.93–1.08}): a quote that drifts from a
 * regenerated report fails the build. A measured figure, outside the sources, is what a reader takes for a result: a decimal or
 * a range followed by {@code ×}, {@code µs}, {@code ns} or {@code ms} ({@code 0.99-1.06×}, {@code 6.2 µs},
 * {@code 1.20×}); a source's spans (where it quotes another source) are checked too; whole multipliers and settings ({@code 2×}, {@code 5 ms}, {@code 1 µs … 25 ms}) are not.
 */
class QuotedFiguresTest {

    private static final Path ROOT =
            Path.of(System.getProperty("cart.root", "..")).normalize();

    /**
     * The documents that produce figures: generated reports and the benchmark and measurement records, each
     * with the command that measured it (the simulator's README: the replica model's parameters and their
     * sources). Figures there are checked by their generators and commands, not here.
     */
    static final Set<String> SOURCES = Set.of(
            "docs/benchmarks.md",
            "docs/benchmarks-history.md",
            "docs/benchmarks-passes.md",
            "docs/routing-quality.md",
            "docs/scale-out.md",
            "docs/end-to-end.md",
            "docs/precise-mode.md",
            "docs/flow-control.md",
            "docs/hardening.md",
            "cart-redis/README.md",
            "cart-extract/README.md",
            "cart-spring-cloud-gateway/README.md",
            "CHANGELOG.md",
            "examples/sim/README.md");

    private static final Pattern SPAN =
            Pattern.compile("<!-- figures: (\\S+) -->(.*?)<!-- /figures -->", Pattern.DOTALL);
    private static final String NUM = "\\d[\\d,]*(?:\\.\\d+)?";
    /** A range ({@code 0.99-1.06}, {@code 1.02–1.06}) or a decimal, followed by a unit of measure. */
    static final Pattern FIGURE = Pattern.compile(
            "(?<![\\w.])(" + NUM + "\\s?[–-]\\s?" + NUM + "|\\d[\\d,]*\\.\\d+)" + "\\s?(×|µs|ns|ms)(?!\\w)");
    /**
     * Inside a span, every decimal and range is checked against the source, with or without a unit, and every
     * whole number followed by a unit of measure ({@code 246 ms}, {@code 3×}).
     */
    static final Pattern QUOTED = Pattern.compile("(?<![\\w.])(" + NUM + "\\s?[–-]\\s?" + NUM
            + "|\\d[\\d,]*\\.\\d+|\\d[\\d,]*(?=\\s?(?:×|µs|ns|ms|%)(?!\\w)))");

    @Test
    void everyQuotedFigureMatchesItsSourceAndNoneIsQuotedWithoutOne() throws IOException {
        List<String> problems = new ArrayList<>();
        int spans = 0;
        for (Path doc : markdownFiles()) {
            String rel = ROOT.relativize(doc).toString().replace('\\', '/');
            String text = Files.readString(doc);
            Matcher m = SPAN.matcher(text);
            StringBuilder outside = new StringBuilder();
            int last = 0;
            while (m.find()) {
                spans++;
                outside.append(text, last, m.start());
                last = m.end();
                problems.addAll(checkSpan(rel, lineOf(text, m.start()), m.group(1), m.group(2)));
            }
            outside.append(text.substring(last));
            if (!SOURCES.contains(rel)) { // a source's own figures are its command's; its quotes of others are checked
                problems.addAll(unquoted(rel, outside.toString()));
            }
        }
        assertTrue(spans > 0, "the docs quote figures in marked spans");
        assertEquals(List.of(), problems, "figures quoted outside their source documents");
    }

    @Test
    void theCheckSeesADriftedFigureAndAnUnmarkedOne() {
        assertEquals(
                List.of("docs/x.md:3: '9.87–9.99' is not in docs/scale-out.md"),
                checkSpan("docs/x.md", 3, "docs/scale-out.md", " keeps 9.87–9.99× of one "),
                "a value the report does not hold");
        assertEquals(
                List.of("a.md:1: '0.99-1.06×' quotes a measured figure without <!-- figures: source -->"),
                unquoted("a.md", "keeps 0.99-1.06× its P99; a 2× outlier, 5 ms, 1 µs … 25 ms buckets\n"));
        assertEquals(List.of(), unquoted("a.md", "```\nlatency 6.2 µs\n```\n"), "code is not prose");
        String report = "# R\n## Pool a\n| x | 1.06 [0.93–1.08] |\n## Pool b\n| y | 1.08 |\n";
        assertEquals("| x | 1.06 [0.93–1.08] |\n", section(report, "pool-a"));
        assertTrue(section(report, "pool-c") == null);
        String a = normalise(section(report, "pool-a"));
        assertTrue(containsFigure(a, "1.06") && containsFigure(a, "0.93-1.08"), a);
        assertTrue(!containsFigure(a, "1.08") && !containsFigure(a, "0.93"), "an end of a range is not a value");
    }

    static List<String> checkSpan(String doc, int line, String source, String span) {
        List<String> problems = new ArrayList<>();
        int hash = source.indexOf('#');
        String file = hash < 0 ? source : source.substring(0, hash);
        if (!SOURCES.contains(file)) {
            return List.of(doc + ":" + line + ": " + file + " is not a source of figures " + SOURCES);
        }
        String body;
        try {
            body = Files.readString(ROOT.resolve(file));
        } catch (IOException e) {
            return List.of(doc + ":" + line + ": cannot read " + file + ": " + e);
        }
        if (hash >= 0) {
            body = section(body, source.substring(hash + 1));
            if (body == null) {
                return List.of(doc + ":" + line + ": no heading '" + source.substring(hash + 1) + "' in " + file);
            }
        }
        body = normalise(body);
        Set<String> seen = new LinkedHashSet<>();
        Matcher q = QUOTED.matcher(span);
        while (q.find()) {
            String value = q.group(1);
            if (seen.add(value) && !containsFigure(body, normalise(value))) {
                problems.add(doc + ":" + line + ": '" + value + "' is not in " + source);
            }
        }
        return problems;
    }

    static List<String> unquoted(String doc, String text) {
        List<String> problems = new ArrayList<>();
        String[] lines = text.split("\n", -1);
        boolean code = false;
        for (int i = 0; i < lines.length; i++) {
            if (lines[i].strip().startsWith("```")) {
                code = !code;
                continue;
            }
            if (code) {
                continue;
            }
            Matcher f = FIGURE.matcher(lines[i]);
            while (f.find()) {
                problems.add(doc + ":" + (i + 1) + ": '" + f.group()
                        + "' quotes a measured figure without <!-- figures: source -->");
            }
        }
        return problems;
    }

    /** One dash for ranges, so a quote may write {@code 1.02-1.06} for the source's {@code 1.02–1.06}. */
    static String normalise(String s) {
        return s.replace('–', '-').replaceAll("(\\d)\\s?-\\s?(\\d)", "$1-$2");
    }

    /** A value of its own: not a part of a longer number, nor an end of a range when it is not one. */
    static boolean containsFigure(String body, String value) {
        boolean range = value.contains("-");
        String before = range ? "(?<![\\d.])" : "(?<![\\d.]|\\d-)";
        String after = range ? "(?![\\d])" : "(?![\\d]|-\\d)";
        return Pattern.compile(before + Pattern.quote(value) + after)
                .matcher(body)
                .find();
    }

    /**
     * The section under the first heading whose words hold {@code anchor} (compared as GitHub makes anchors:
     * lower case, spaces as dashes): a {@code #} heading to the next one of its rank or higher, a bold line
     * ({@code **rag-zipf**}) to the next bold line or heading. Null if no heading holds it.
     */
    static String section(String text, String anchor) {
        String[] lines = text.split("\n", -1);
        int start = -1;
        int rank = 0;
        for (int i = 0; i < lines.length && start < 0; i++) {
            int r = rank(lines[i]);
            if (r > 0 && slug(lines[i]).contains(anchor.toLowerCase(java.util.Locale.ROOT))) {
                start = i;
                rank = r;
            }
        }
        if (start < 0) {
            return null;
        }
        StringBuilder out = new StringBuilder();
        for (int i = start + 1; i < lines.length; i++) {
            int r = rank(lines[i]);
            if (r > 0 && r <= rank) {
                break;
            }
            out.append(lines[i]).append('\n');
        }
        return out.toString();
    }

    /** A heading's rank: 1-6 for {@code #} headings, 7 for a line in bold alone, 0 for other lines. */
    private static int rank(String line) {
        String t = line.strip();
        if (t.startsWith("#")) {
            int n = 0;
            while (n < t.length() && t.charAt(n) == '#') {
                n++;
            }
            return n <= 6 && n < t.length() && t.charAt(n) == ' ' ? n : 0;
        }
        return t.length() > 4 && t.startsWith("**") && t.endsWith("**") ? 7 : 0;
    }

    private static String slug(String heading) {
        return heading.replaceAll("^[#*\\s]+|[*\\s]+$", "")
                .toLowerCase(java.util.Locale.ROOT)
                .replaceAll("[^\\p{L}\\p{N}_ -]", "")
                .replace(' ', '-');
    }

    private static int lineOf(String text, int offset) {
        return (int) text.substring(0, offset).chars().filter(c -> c == '\n').count() + 1;
    }

    private static List<Path> markdownFiles() throws IOException {
        try (Stream<Path> all = Files.walk(ROOT)) {
            return all.filter(p -> p.toString().endsWith(".md"))
                    .filter(p -> {
                        String rel = ROOT.relativize(p).toString().replace('\\', '/');
                        return !rel.contains("/target/")
                                && !rel.startsWith("target/")
                                && !rel.startsWith(".")
                                && !rel.contains("/src/it/")
                                && !rel.contains("node_modules");
                    })
                    .sorted()
                    .toList();
        }
    }
}
