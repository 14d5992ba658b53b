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
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Every library module's README lists its public API, and the list matches the code: each public
 * top-level type of the module's main sources is named (in backticks) in its README, and each type a
 * README table names in its first column exists in the module's sources. A user reads the README to
 * learn what they may depend on; a type made public without a line there, or a line left behind by a
 * type that moved, fails the build.
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

    private static final Pattern ANY_TYPE_DECLARATION = Pattern.compile("\\b(?:class|interface|record|enum)\\s+(\\w+)");

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

        Set<String> publicTypes = new TreeSet<>();
        Set<String> declared = new TreeSet<>();
        for (Path source : sources(dir.resolve("src/main/java"))) {
            String code = Files.readString(source);
            Matcher m = PUBLIC_TOP_LEVEL.matcher(code);
            while (m.find()) {
                publicTypes.add(m.group(1));
            }
            String outer = source.getFileName().toString().replace(".java", "");
            Matcher d = ANY_TYPE_DECLARATION.matcher(code);
            while (d.find()) {
                declared.add(d.group(1));
                declared.add(outer + "." + d.group(1));
            }
        }
        assertTrue(!publicTypes.isEmpty(), module + " has public types");

        List<String> unlisted = new ArrayList<>();
        for (String type : publicTypes) {
            if (!text.contains("`" + type + "`") && !text.contains("`" + type + ".")) {
                unlisted.add(type);
            }
        }
        assertEquals(List.of(), unlisted, module + ": public types its README does not name");

        List<String> missing = new ArrayList<>();
        for (String line : text.split("\n")) {
            Matcher m = FIRST_CELL_TYPE.matcher(line);
            if (m.find() && !declared.contains(m.group(1))) {
                missing.add(m.group(1));
            }
        }
        assertEquals(List.of(), missing, module + ": types its README lists that its sources do not declare");
    }

    private static List<Path> sources(Path root) throws IOException {
        try (Stream<Path> files = Files.walk(root)) {
            return files.filter(p -> p.toString().endsWith(".java"))
                    .filter(p -> !p.toString().contains("/internal/"))
                    .sorted()
                    .toList();
        }
    }
}
