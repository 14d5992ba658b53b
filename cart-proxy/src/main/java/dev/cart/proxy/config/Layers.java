package dev.cart.proxy.config;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Reads YAML files into one tree, layered: the files in order, the last one winning. Mappings merge key
 * by key, so an overlay only names what it changes; lists and scalars are replaced whole (an overlay
 * naming {@code workers} replaces the list); an empty or comment-only file changes nothing, and so does a
 * section left empty ({@code cache:} with nothing under it); an empty value ({@code key:}) is null, which
 * over a scalar sets it back to its default. The merge records in {@link Problems} which file set each
 * key, so a problem found later names the file it comes from. A file that cannot be read or parsed is a
 * problem of its own, and the other files are still read.
 */
final class Layers {

    static final ObjectMapper YAML = new ObjectMapper(YAMLFactory.builder()
            .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
            .build());

    private Layers() {}

    /** The files merged, in order; each problem (no such file, too large, not YAML) is added to {@code problems}. */
    static ObjectNode read(List<Path> files, Problems problems) {
        ObjectNode merged = JsonNodeFactory.instance.objectNode();
        for (Path file : files) {
            String text;
            try {
                text = readBounded(file);
                if (text == null) {
                    problems.file(
                            file.toString(),
                            "too large: a configuration file may have at most " + ConfigLoader.MAX_FILE_BYTES
                                    + " bytes (1 MiB)");
                    continue;
                }
            } catch (NoSuchFileException e) {
                problems.file(file.toString(), "no such file");
                continue;
            } catch (IOException e) {
                problems.file(file.toString(), "cannot read: " + e.getMessage());
                continue;
            }
            add(merged, file.toString(), file.toString(), text, problems);
        }
        return merged;
    }

    /**
     * Merges one layer's text into {@code merged}.
     *
     * @param name how a problem of the whole text names it
     * @param file the file its keys are recorded as coming from; null for none
     */
    static void add(ObjectNode merged, String name, String file, String text, Problems problems) {
        ObjectNode layer = parse(name, text, problems);
        if (layer != null) {
            merge(merged, layer, "", file, problems);
        }
    }

    /** The file's text; at most {@link ConfigLoader#MAX_FILE_BYTES} are read, so a larger file costs no more. */
    private static String readBounded(Path file) throws IOException {
        byte[] bytes;
        try (InputStream in = Files.newInputStream(file)) {
            bytes = in.readNBytes(ConfigLoader.MAX_FILE_BYTES + 1);
        }
        if (bytes.length > ConfigLoader.MAX_FILE_BYTES) {
            return null;
        }
        try {
            return StandardCharsets.UTF_8
                    .newDecoder()
                    .decode(ByteBuffer.wrap(bytes))
                    .toString();
        } catch (CharacterCodingException e) {
            throw new IOException("not UTF-8 text", e);
        }
    }

    /** One layer's tree, or null when it is empty, comment-only or unusable (then a problem is added). */
    static ObjectNode parse(String name, String text, Problems problems) {
        JsonNode root;
        try {
            root = YAML.readTree(text);
        } catch (JsonProcessingException e) {
            String where = e.getLocation() == null
                    ? ""
                    : " (line " + e.getLocation().getLineNr() + ", column "
                            + e.getLocation().getColumnNr() + ")";
            problems.file(name, "not valid YAML" + where + ": " + e.getOriginalMessage());
            return null;
        }
        if (root == null || root.isMissingNode() || root.isNull()) {
            return null; // empty or comment-only: changes nothing
        }
        if (!root.isObject()) {
            problems.file(name, "the top level must be a mapping of sections, was a " + kind(root));
            return null;
        }
        return (ObjectNode) emptyToNull(root);
    }

    /** YAML's empty value ({@code key:} with nothing after it) means "not set", like null. */
    private static JsonNode emptyToNull(JsonNode n) {
        if (n.isObject()) {
            ObjectNode o = (ObjectNode) n;
            List<String> names = new ArrayList<>();
            o.fieldNames().forEachRemaining(names::add);
            for (String k : names) {
                o.set(k, emptyToNull(o.get(k)));
            }
        } else if (n.isArray()) {
            ArrayNode a = (ArrayNode) n;
            for (int i = 0; i < a.size(); i++) {
                a.set(i, emptyToNull(a.get(i)));
            }
        } else if (n.isTextual() && n.asText().isEmpty()) {
            return JsonNodeFactory.instance.nullNode();
        }
        return n;
    }

    /**
     * Merges {@code overlay} into {@code base}: mappings key by key, everything else replaced whole. A null
     * (empty) value over a mapping changes nothing; over a scalar it resets the key to its default. Each key
     * the overlay sets is recorded as coming from {@code file} (null: no file to name).
     */
    private static void merge(ObjectNode base, ObjectNode overlay, String prefix, String file, Problems problems) {
        for (Map.Entry<String, JsonNode> e : overlay.properties()) {
            String path = prefix.isEmpty() ? e.getKey() : prefix + "." + e.getKey();
            JsonNode old = base.get(e.getKey());
            JsonNode value = e.getValue();
            if (old != null && old.isObject() && value.isObject()) {
                problems.origin(path, file);
                merge((ObjectNode) old, (ObjectNode) value, path, file, problems);
            } else if (!(old != null && old.isObject() && value.isNull())) { // a null over a section keeps it
                base.set(e.getKey(), value.deepCopy());
                problems.originOfTree(path, value, file);
            }
        }
    }

    /**
     * {@code overlay} over {@code base}, for binding: mappings key by key, a null (unset) value keeping
     * the base's, anything else replacing it. Neither argument is changed.
     */
    static ObjectNode over(ObjectNode base, ObjectNode overlay) {
        ObjectNode out = base.deepCopy();
        for (Map.Entry<String, JsonNode> e : overlay.properties()) {
            JsonNode old = out.get(e.getKey());
            JsonNode value = e.getValue();
            if (value.isNull()) {
                continue;
            }
            out.set(
                    e.getKey(),
                    old != null && old.isObject() && value.isObject()
                            ? over((ObjectNode) old, (ObjectNode) value)
                            : value.deepCopy());
        }
        return out;
    }

    /** A node's kind as a problem names it: mapping, list, string, boolean, number, null. */
    static String kind(JsonNode n) {
        if (n.isObject()) {
            return "mapping";
        }
        if (n.isArray()) {
            return "list";
        }
        if (n.isTextual()) {
            return "string";
        }
        if (n.isBoolean()) {
            return "boolean";
        }
        if (n.isNumber()) {
            return "number";
        }
        if (n.isNull()) {
            return "null";
        }
        return n.getNodeType().name().toLowerCase(Locale.ROOT);
    }
}
