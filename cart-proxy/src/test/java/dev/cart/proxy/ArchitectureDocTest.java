package dev.cart.proxy;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * {@code docs/architecture.md} names only what exists: every type it names (in backticks, and the CamelCase names of
 * its diagrams) is declared in the repository's sources, every module, file and package it names is there. A class
 * renamed or removed without the map following fails here.
 */
class ArchitectureDocTest {

    private static final Path ROOT =
            Path.of(System.getProperty("user.dir")).resolve("..").normalize();

    /** Types of other projects the page names (Netty, the JDK), and words that look like types (units, names). */
    private static final Set<String> EXTERNAL =
            Set.of("HttpServerCodec", "HttpServer", "HttpClient", "ServiceLoader", "OpenAI", "KiB", "MiB", "GiB");

    private static final Pattern DECLARED = Pattern.compile("\\b(?:class|record|interface|enum)\\s+([A-Z]\\w*)");
    private static final Pattern CODE_SPAN = Pattern.compile("`([^`\\n]+)`");
    private static final Pattern TYPE = Pattern.compile("\\b[A-Z][A-Za-z0-9]*[a-z][A-Za-z0-9]*\\b");
    private static final Pattern DIAGRAM_TYPE = Pattern.compile("\\b[A-Z][a-z0-9]+[A-Z][A-Za-z0-9]*\\b");

    /** Every type declared in the repository's Java sources: file names and nested declarations. */
    static Set<String> declaredTypes() throws IOException {
        Set<String> types = new HashSet<>();
        try (Stream<Path> files = Files.walk(ROOT)) {
            for (Path f : (Iterable<Path>) files.filter(p -> p.toString().endsWith(".java")
                    && !p.toString().contains("/target/")
                    && !p.toString().contains("/.git/"))::iterator) {
                types.add(f.getFileName().toString().replace(".java", ""));
                Matcher m = DECLARED.matcher(Files.readString(f));
                while (m.find()) {
                    types.add(m.group(1));
                }
            }
        }
        return types;
    }

    /** What of {@code doc} does not exist: unknown types, missing modules, files and packages. */
    static List<String> missing(String doc, Set<String> types) {
        List<String> missing = new ArrayList<>();
        Matcher span = CODE_SPAN.matcher(doc);
        while (span.find()) {
            String s = span.group(1);
            if (s.matches("(cart-[a-z-]+|examples/[a-z]+)")) {
                if (!Files.isDirectory(ROOT.resolve(s))) {
                    missing.add("module " + s);
                }
            } else if (s.matches("[\\w.-]+(/[\\w.-]+)+\\.\\w+")) {
                if (!Files.exists(ROOT.resolve(s))) {
                    missing.add("file " + s);
                }
            } else if (s.matches("dev\\.cart(\\.[a-z]+)+")) {
                if (!packageExists(s)) {
                    missing.add("package " + s);
                }
            } else {
                Matcher t = TYPE.matcher(s);
                while (t.find()) {
                    if (!types.contains(t.group()) && !EXTERNAL.contains(t.group())) {
                        missing.add("type " + t.group() + " (in `" + s + "`)");
                    }
                }
            }
        }
        String[] blocks = doc.split("```");
        for (int i = 1; i < blocks.length; i += 2) {
            Matcher t = DIAGRAM_TYPE.matcher(blocks[i]);
            while (t.find()) {
                if (!types.contains(t.group()) && !EXTERNAL.contains(t.group())) {
                    missing.add("type " + t.group() + " (in a diagram)");
                }
            }
        }
        return missing;
    }

    private static boolean packageExists(String pkg) {
        String dir = pkg.replace('.', '/');
        try (Stream<Path> dirs = Files.walk(ROOT, 6)) {
            return dirs.anyMatch(d -> d.endsWith("src/main/java")
                    && !d.toString().contains("/target/")
                    && Files.isDirectory(d.resolve(dir)));
        } catch (IOException e) {
            return false;
        }
    }

    @Test
    void everyClassAndFileTheArchitecturePageNamesExists() throws IOException {
        String doc = Files.readString(ROOT.resolve("docs/architecture.md"));
        List<String> missing = missing(doc, declaredTypes());
        assertTrue(missing.isEmpty(), "docs/architecture.md names what is not there: " + missing);
    }

    @Test
    void aNameThatIsGoneIsCaught() throws IOException {
        Set<String> types = declaredTypes();
        List<String> missing = missing(
                "`JdkFront` on `cart-proxy`, see `docs/none.md`, `dev.cart.proxy.jdk`\n```\n NettyFront → AnswerBuffer\n```\n",
                types);
        assertTrue(missing.contains("type JdkFront (in `JdkFront`)"), missing.toString());
        assertTrue(missing.contains("file docs/none.md"), missing.toString());
        assertTrue(missing.contains("package dev.cart.proxy.jdk"), missing.toString());
        assertTrue(missing.contains("type AnswerBuffer (in a diagram)"), missing.toString());
        assertTrue(
                missing.stream().noneMatch(m -> m.contains("NettyFront") || m.contains("cart-proxy")),
                missing.toString());
    }
}
