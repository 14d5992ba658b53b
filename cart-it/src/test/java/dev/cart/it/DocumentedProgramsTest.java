package dev.cart.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * A command the documents tell a reader to run names programs that exist: every fully qualified CART class a
 * Markdown file names ({@code dev.cart.jmh.extract.FloorCpuTiming}, {@code dev.cart.bench.JfrParts}) has a source
 * file in the repository. A benchmark program that is renamed or removed while a document still gives its
 * command fails the build here, rather than the reader who reruns it. The two records of past runs ({@link
 * #RECORDS}) are exempt: each of their commands ran on the build its section names, and some of those programs
 * are gone since.
 */
class DocumentedProgramsTest {

    private static final Path ROOT =
            Path.of(System.getProperty("cart.root", "..")).normalize();

    /** Dated records of what was run on which build: their commands stay as they were run. */
    static final Set<String> RECORDS = Set.of("docs/benchmarks-history.md", "docs/benchmarks-passes.md");

    /** A fully qualified class of the project: its package, lower case, then a capitalized simple name. */
    private static final Pattern CLASS = Pattern.compile("(?<![\\w.])dev\\.cart(?:\\.[a-z][a-z0-9]*)+\\.[A-Z]\\w*");

    @Test
    void everyProgramADocumentNamesHasItsSource() throws IOException {
        Set<String> sources = sourceClasses();
        assertTrue(sources.contains("dev.cart.jmh.extract.FloorCpuTiming"), "the repository's sources were read");
        List<String> missing = new ArrayList<>();
        for (Path doc : documents()) {
            String rel = ROOT.relativize(doc).toString().replace('\\', '/');
            Matcher m = CLASS.matcher(Files.readString(doc));
            Set<String> named = new TreeSet<>();
            while (m.find()) {
                named.add(outermost(m.group()));
            }
            for (String name : named) {
                if (!sources.contains(name)) {
                    missing.add(rel + ": " + name);
                }
            }
        }
        assertEquals(List.of(), missing, "classes named in the documents with no source file in the repository");
    }

    @Test
    void aClassIsFoundAsTheDocumentsWriteIt() {
        assertTrue(matches("java -cp b.jar dev.cart.jmh.core.TreeMemory 3", "dev.cart.jmh.core.TreeMemory"));
        assertTrue(matches("`dev.cart.bench.JfrParts`.", "dev.cart.bench.JfrParts"));
        assertEquals("dev.cart.core.Router", outermost("dev.cart.core.Router.Builder"));
        assertTrue(!CLASS.matcher("dev.cart.core").find(), "a package alone is not a class");
        assertTrue(!CLASS.matcher("org.dev.cart.core.Router").find(), "only the project's own names");
    }

    private static boolean matches(String text, String expected) {
        Matcher m = CLASS.matcher(text);
        return m.find() && m.group().equals(expected);
    }

    /** A nested class's outermost class: the first capitalized name ({@code Router.Builder} → {@code Router}). */
    static String outermost(String name) {
        String[] parts = name.split("\\.");
        StringBuilder sb = new StringBuilder();
        for (String p : parts) {
            if (sb.length() > 0) {
                sb.append('.');
            }
            sb.append(p);
            if (Character.isUpperCase(p.charAt(0))) {
                break;
            }
        }
        return sb.toString();
    }

    /** Every Markdown file of the repository but the records, outside build output and hidden directories. */
    private static List<Path> documents() throws IOException {
        try (Stream<Path> all = Files.walk(ROOT)) {
            return all.filter(p -> p.toString().endsWith(".md"))
                    .filter(DocumentedProgramsTest::ours)
                    .filter(p -> !RECORDS.contains(ROOT.relativize(p).toString().replace('\\', '/')))
                    .sorted()
                    .toList();
        }
    }

    /** The classes with a source file under some module's {@code src/*}{@code /java}. */
    private static Set<String> sourceClasses() throws IOException {
        Set<String> names = new HashSet<>();
        try (Stream<Path> all = Files.walk(ROOT)) {
            all.filter(p -> p.toString().endsWith(".java"))
                    .filter(DocumentedProgramsTest::ours)
                    .forEach(p -> {
                        String s = p.toString().replace('\\', '/');
                        int at = s.indexOf("/java/dev/cart/");
                        if (at >= 0) {
                            names.add(s.substring(at + "/java/".length(), s.length() - ".java".length())
                                    .replace('/', '.'));
                        }
                    });
        }
        return names;
    }

    private static boolean ours(Path p) {
        for (Path part : ROOT.relativize(p)) {
            String n = part.toString();
            if (n.equals("target") || n.equals("node_modules") || (n.startsWith(".") && n.length() > 1)) {
                return false;
            }
        }
        return true;
    }
}
