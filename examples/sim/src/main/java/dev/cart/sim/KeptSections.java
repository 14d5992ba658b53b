package dev.cart.sim;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Sections of a generated Markdown file that another entry point writes, between an HTML comment pair
 * ({@code <!-- name:begin -->} ... {@code <!-- name:end -->}): the report regenerates the file around them
 * and keeps them, and their own entry point replaces them in place.
 */
final class KeptSections {

    private KeptSections() {}

    static String begin(String name) {
        return "<!-- " + name + ":begin -->";
    }

    static String end(String name) {
        return "<!-- " + name + ":end -->";
    }

    /** {@code doc} with {@code section} in place of its section {@code name}, or appended after a blank line. */
    static String withSection(String doc, String name, String section) {
        int from = doc.indexOf(begin(name));
        int to = doc.indexOf(end(name));
        if (from >= 0 && to > from) {
            int end = to + end(name).length();
            if (end < doc.length() && doc.charAt(end) == '\n') {
                end++;
            }
            return doc.substring(0, from) + section + doc.substring(end);
        }
        if (doc.isEmpty()) {
            return section;
        }
        return doc + (doc.endsWith("\n\n") ? "" : doc.endsWith("\n") ? "\n" : "\n\n") + section;
    }

    /** Section {@code name} of {@code md} (with a newline before and after it), or "" when there is none. */
    static String kept(Path md, String name) throws IOException {
        if (!Files.exists(md)) {
            return "";
        }
        String doc = Files.readString(md, StandardCharsets.UTF_8);
        int from = doc.indexOf(begin(name));
        int to = doc.indexOf(end(name));
        if (from < 0 || to < from) {
            return "";
        }
        return "\n" + doc.substring(from, to + end(name).length()) + "\n";
    }
}
