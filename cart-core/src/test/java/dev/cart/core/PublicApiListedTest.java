package dev.cart.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Every library module's README lists its public API, and the list matches the code: each public
 * top-level type of the module's exported packages is named (in backticks) in the first column of a table
 * of its README, and each type a README table names in its first column is declared in those packages. A user reads the README to
 * learn what they may depend on; a type made public without a line there, or a line left behind by a
 * type that moved, fails the build.
 *
 * <p>The API is what the module exports to everyone: the packages its {@code module-info.java} names in an
 * unqualified {@code exports}. A public class of a package exported only to CART's own modules ({@code
 * exports ... to ...}) or not at all is not API. A module without a descriptor (an automatic module) exports
 * every package, so all of them count.
 *
 * <p>The check reads the sibling modules' sources from the repository checkout (this module's tests run
 * with the module directory as the working directory).
 */
class PublicApiListedTest {

    private static final Pattern PUBLIC_TOP_LEVEL = Pattern.compile(
            "^public\\s+(?:(?:final|abstract|sealed|non-sealed|static)\\s+)*(?:class|interface|record|enum|@interface)\\s+(\\w+)",
            Pattern.MULTILINE);

    /** A table row's first cell: its first backticked name, possibly dotted (`Outer.Inner`). */
    private static final Pattern FIRST_CELL_TYPE = Pattern.compile("^\\|\\s*`([A-Z]\\w*(?:\\.[A-Z]\\w*)?)`");

    /** A backticked type name in a table cell ({@code `Outer`} or {@code `Outer.Inner`}: the outer one). */
    private static final Pattern TYPE_IN_CELL = Pattern.compile("`([A-Z]\\w*)(?:\\.[A-Z]\\w*)?`");

    private static final Pattern ANY_TYPE_DECLARATION = Pattern.compile("\\b(?:class|interface|record|enum)\\s+(\\w+)");

    private static final Pattern PACKAGE = Pattern.compile("^package\\s+([\\w.]+)\\s*;", Pattern.MULTILINE);

    /** An export to everyone: {@code exports p;} (a qualified one, {@code exports p to m;}, does not match). */
    private static final Pattern EXPORTS = Pattern.compile("^\\s*exports\\s+([\\w.]+)\\s*;", Pattern.MULTILINE);

    @ParameterizedTest
    @ValueSource(
            strings = {
                "cart-core",
                "cart-policy",
                "cart-extract",
                "cart-redis",
                "cart-flow",
                "cart-kvevents",
                "cart-spring-cloud-gateway"
            })
    void everyPublicTypeIsListedAndEveryListedTypeExists(String module) throws IOException {
        Path dir = Path.of("..").resolve(module);
        Path readme = dir.resolve("README.md");
        assertTrue(Files.isRegularFile(readme), module + " has a README.md");
        String text = Files.readString(readme);

        Api api = api(dir.resolve("src/main/java"));
        assertTrue(!api.publicTypes().isEmpty(), module + " has public types");
        assertEquals(List.of(), unlisted(api, text), module + ": public types its README does not name");

        List<String> missing = new ArrayList<>();
        for (String line : text.split("\n")) {
            Matcher m = FIRST_CELL_TYPE.matcher(line);
            if (m.find() && !api.declared().contains(m.group(1))) {
                missing.add(m.group(1));
            }
        }
        assertEquals(List.of(), missing, module + ": types its README lists that its sources do not declare");
    }

    /** The check itself: an exported public type left out of the README is found; others are not API. */
    @Test
    void findsAnExportedPublicTypeTheReadmeLeavesOut(@TempDir Path root) throws IOException {
        write(root, "module-info.java", "module m {\n    exports a;\n    exports b to other;\n}\n");
        write(root, "a/Listed.java", "package a;\n\npublic final class Listed {}\n");
        write(root, "a/Unlisted.java", "package a;\n\npublic interface Unlisted {}\n");
        write(root, "a/Hidden.java", "package a;\n\nfinal class Hidden {}\n");
        write(root, "b/Qualified.java", "package b;\n\npublic class Qualified {}\n");
        write(root, "c/NotExported.java", "package c;\n\npublic record NotExported() {}\n");

        Api api = api(root);
        assertEquals(Set.of("Listed", "Unlisted"), api.publicTypes());
        assertEquals(List.of("Unlisted"), unlisted(api, "| `Listed` | a type |\n"));
        assertEquals(List.of(), unlisted(api, "| `Listed`, `Unlisted.Inner` | types |\n"));
        assertEquals(
                List.of("Listed", "Unlisted"),
                unlisted(api, "`Listed` and `Unlisted` in prose\n| `Other` | uses `Listed` |\n"),
                "a name in prose or in another column is not a listing");

        // without a descriptor (an automatic module) every package is exported
        Files.delete(root.resolve("module-info.java"));
        assertEquals(
                Set.of("Listed", "Unlisted", "Qualified", "NotExported"),
                api(root).publicTypes());
    }

    /** A module's public top-level types and every type its sources declare, in its exported packages. */
    record Api(Set<String> publicTypes, Set<String> declared) {}

    static Api api(Path sourceRoot) throws IOException {
        Path descriptor = sourceRoot.resolve("module-info.java");
        Set<String> exported = null; // null: an automatic module, every package exported
        if (Files.isRegularFile(descriptor)) {
            exported = new TreeSet<>();
            Matcher m = EXPORTS.matcher(Files.readString(descriptor));
            while (m.find()) {
                exported.add(m.group(1));
            }
        }
        Set<String> publicTypes = new TreeSet<>();
        Set<String> declared = new TreeSet<>();
        for (Path source : sources(sourceRoot)) {
            String code = Files.readString(source);
            Matcher pkg = PACKAGE.matcher(code);
            if (exported != null && !(pkg.find() && exported.contains(pkg.group(1)))) {
                continue;
            }
            String outer = source.getFileName().toString().replace(".java", "");
            Matcher d = ANY_TYPE_DECLARATION.matcher(code);
            while (d.find()) {
                declared.add(d.group(1));
                declared.add(outer + "." + d.group(1));
            }
            Matcher m = PUBLIC_TOP_LEVEL.matcher(code);
            while (m.find()) {
                publicTypes.add(m.group(1));
            }
        }
        return new Api(publicTypes, declared);
    }

    /**
     * The public types no API table of {@code readme} lists: a type counts as listed only when its name (in
     * backticks, alone or as {@code Outer.Inner}) is in the first cell of a table row, where a README lists
     * its API; a mention in prose, or in another column, does not.
     */
    static List<String> unlisted(Api api, String readme) {
        Set<String> listed = new TreeSet<>();
        for (String line : readme.split("\n")) {
            if (!line.startsWith("|")) {
                continue;
            }
            String[] cells = line.split("\\|", -1);
            Matcher m = TYPE_IN_CELL.matcher(cells.length > 1 ? cells[1] : "");
            while (m.find()) {
                listed.add(m.group(1));
            }
        }
        List<String> unlisted = new ArrayList<>();
        for (String type : api.publicTypes()) {
            if (!listed.contains(type)) {
                unlisted.add(type);
            }
        }
        return unlisted;
    }

    private static void write(Path root, String file, String text) throws IOException {
        Path p = root.resolve(file);
        Files.createDirectories(p.getParent());
        Files.writeString(p, text);
    }

    private static List<Path> sources(Path root) throws IOException {
        try (Stream<Path> files = Files.walk(root)) {
            return files.filter(p -> p.toString().endsWith(".java"))
                    .filter(p -> !p.getFileName().toString().equals("module-info.java"))
                    .filter(p -> !p.getFileName().toString().equals("package-info.java"))
                    .sorted()
                    .toList();
        }
    }
}
